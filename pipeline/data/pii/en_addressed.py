"""English: one capitalized word that the writer greets, thanks or tells something is a name.

"Good morning Eiad!", "Sure thing Murray, one moment", "Thanks Nastia." (a greeting or acknowledgement, one word,
then a comma, a stop or the end), "Told Deepu the parcel is on its way", "please let Raiyan know" (a verb whose
object is a person, then a lower-case word). The word must be a listed first name or no everyday English word
(en_words.name_like; greeted, up to Zipf 4.5: "Good morning Charlie!"): "Good morning Team!", "Thanks Again." and
"Told Monday" stay. A greeted word may also be a
listed name that is a place or stop word too ("Sure thing Murray,", "Thanks Austin!"), not an everyday word.
"""
from __future__ import annotations

import re

from pipeline.data.pii.en_subject import FUNCTION_WORDS, LISTED_FIRST
from pipeline.data.pii.en_words import ADDRESS_TERMS, CALENDAR, en_zipf, name_like
from pipeline.data.pii.names import LATIN_LAST, LATIN_LOWER, LATIN_UPPER
from pipeline.data.pii.text import Hit, fold

_CAPITALIZED = re.compile(rf"[{LATIN_UPPER}][{LATIN_LOWER}]+(?:-[{LATIN_UPPER}][{LATIN_LOWER}]+)?(?![\w'’-])")
_GREETINGS = ("good morning", "good afternoon", "good evening", "good night", "good day", "morning", "evening",
              "sure thing", "got it", "thanks again", "thanks so much", "thanks", "thank you so much", "thank you",
              "cheers", "welcome back", "welcome", "goodbye", "bye", "sorry", "okay", "ok", "noted", "understood",
              "of course", "no problem", "no worries", "congratulations", "congrats", "hello again", "hi again",
              "see you", "take care")
# right before the word: a greeting that opens the text, a line or a sentence
GREETING_BEFORE = re.compile(r"(?:^|[.!?:;\n])[ \t]*(?i:" + "|".join(map(re.escape, _GREETINGS)) + r")[ \t]*,?[ \t]+$",
                             re.MULTILINE)
_END_AFTER = re.compile(r"[ \t]*(?:[,!.?;]|$)", re.MULTILINE)  # the greeted word ends the phrase
_TELL_VERBS = ("told", "tell", "tells", "telling", "reminded", "remind", "thanked", "thank", "assured", "reassured",
               "informed", "inform", "advised", "notified", "notify")
TOLD_BEFORE = re.compile(r"(?:^|[^\w'’-])(?i:" + "|".join(_TELL_VERBS) + r")[ \t]+$")
LET_BEFORE = re.compile(r"(?:^|[^\w'’-])(?i:let)[ \t]+$")
_LOWER_AFTER = re.compile(r"[ \t]+[a-z]")
_KNOW_AFTER = re.compile(r"[ \t]+know\b")


def addressed_names(text: str) -> list[Hit]:
    """PERSON hits for the words greeted or told (see the module doc). One pass over the capitalized words
    (few in most texts), the words before each read only there."""
    out = []
    for m in _CAPITALIZED.finditer(text):
        s, e = m.span()
        if s == 0 or text[s - 1] not in " \t,":
            continue
        lo = max(0, s - 32)
        greeted = _END_AFTER.match(text, e) is not None and GREETING_BEFORE.search(text, lo, s) is not None
        told = not greeted and ((_LOWER_AFTER.match(text, e) is not None and TOLD_BEFORE.search(text, lo, s))
                                or (_KNOW_AFTER.match(text, e) is not None and LET_BEFORE.search(text, lo, s)))
        if (greeted and _greeted_name(m.group())) or (told and name_like(m.group())):
            out.append(Hit(s, e, "PERSON", 0.7, "addressed"))
    return out


_LISTED_ZIPF = 5.0  # "Murray" 4.3, "Austin" 4.6 are greeted; "Will", "Mark" are function or everyday words first


# greeted at a line's or sentence's start and alone, a word of middle frequency is a name ("Good morning Charlie!",
# 4.4; "Thanks Lewis!", 4.5); the brands that are thanked are above ("Amazon" 4.6, "Apple" 4.8)
_GREETED_ZIPF = 4.5


def _greeted_name(word: str) -> bool:
    if name_like(word, _GREETED_ZIPF):
        return True
    key = fold(word)
    return word[1:].islower() and (key in LISTED_FIRST or key in LATIN_LAST) and key not in FUNCTION_WORDS \
        and key not in ADDRESS_TERMS and key not in CALENDAR and en_zipf(key) < _LISTED_ZIPF
