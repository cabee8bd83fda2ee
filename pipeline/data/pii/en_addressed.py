"""English: one capitalized word that the writer greets, thanks or tells something is a name.

"Good morning Eiad!", "Sure thing Murray, one moment", "Thanks Nastia." (a greeting or acknowledgement, one word,
then a comma, a stop or the end), "Told Deepu the parcel is on its way", "please let Raiyan know" (a verb whose
object is a person, then a lower-case word). The word must be a listed first name or no everyday English word
(en_words.name_like): "Good morning Team!", "Thanks Again." and "Told Monday" stay.
"""
from __future__ import annotations

import re

from pipeline.data.pii.en_words import name_like
from pipeline.data.pii.names import LATIN_LOWER, LATIN_UPPER
from pipeline.data.pii.text import Hit

_WORD = rf"([{LATIN_UPPER}][{LATIN_LOWER}]+(?:-[{LATIN_UPPER}][{LATIN_LOWER}]+)?)"
_GREETINGS = ("good morning", "good afternoon", "good evening", "good night", "good day", "morning", "evening",
              "sure thing", "got it", "thanks again", "thanks so much", "thanks", "thank you so much", "thank you",
              "cheers", "welcome back", "welcome", "goodbye", "bye", "sorry", "okay", "ok", "noted", "understood",
              "of course", "no problem", "no worries", "congratulations", "congrats", "hello again", "hi again",
              "see you", "take care")
# a greeting that opens the text, a line or a sentence, one word, then , ! . ? ; or the end
GREETED = re.compile(r"(?:^|(?<=[.!?:;\n])|(?<=[.!?:;\n][ \t]))(?i:" + "|".join(map(re.escape, _GREETINGS))
                     + rf")[ \t]*,?[ \t]+{_WORD}(?=[ \t]*(?:[,!.?;]|$))", re.MULTILINE)
_TELL_VERBS = ("told", "tell", "tells", "telling", "reminded", "remind", "thanked", "thank", "assured", "reassured",
               "informed", "inform", "advised", "notified", "notify")
TOLD = re.compile(r"(?<![\w'’-])(?i:" + "|".join(_TELL_VERBS) + rf")[ \t]+{_WORD}(?=[ \t]+[a-z])"
                  rf"|(?<![\w'’-])(?i:let)[ \t]+{_WORD}(?=[ \t]+know\b)")


def addressed_names(text: str) -> list[Hit]:
    """PERSON hits for the words greeted or told (see the module doc)."""
    out = []
    for rx in (GREETED, TOLD):
        for m in rx.finditer(text):
            k = 1 if m.group(1) is not None else 2
            if name_like(m.group(k)):
                out.append(Hit(m.start(k), m.end(k), "PERSON", 0.7, "addressed"))
    return out
