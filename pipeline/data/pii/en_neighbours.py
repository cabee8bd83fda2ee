"""English: the rest of a name that a recognizer took in part, judged by English frequencies alone.

neighbours.py grows a PERSON span by a capitalized word beside it that is rare in Turkish and English together;
in English text a word that is common only in Turkish ("Nasir", "Bir") or a first name of middle frequency
("Kate" 4.3) is still a name's there: "Kate Griffiths says", "Nasir Ahmad called". A word right before or after
a span of one or two words joins it when it is a listed first name or no everyday English word (en_words). In
ALL CAPS the same, read in lower case: "KATJA ENGEL", "RAY SALVADOR".

Two places say more. A listed first name before the span joins it even when it is an everyday word ("Max
Gabriel"; not a calendar or address word). After a span of one word, a word of the same casing that ends the
clause (a stop, comma or line end after it) is the surname, an everyday word too ("registered to NAVEED SING.",
"This is Quessany Heart."), unless a function, time or title word ("call ANNA BACK.", "see Anna Tomorrow.", "Gamze Hanım.").
"""
from __future__ import annotations

import re

from pipeline.data.pii.en_subject import FUNCTION_WORDS, LISTED_FIRST
from pipeline.data.pii.en_words import CALENDAR, FIRST_NAMES, NOT_NAME, en_zipf, name_like
from pipeline.data.pii.name_context import TITLES, TITLES_AFTER, VERBS_AFTER
from pipeline.data.pii.names import LATIN_LOWER, LATIN_UPPER
from pipeline.data.pii.text import Hit, fold

_BEFORE = re.compile(rf"(?<![\w'’.@/-])([{LATIN_UPPER}](?:[{LATIN_LOWER}]{{2,}}|[{LATIN_UPPER}]{{2,}}))[ \u00a0]$")
_AFTER = re.compile(rf"[ \u00a0]([{LATIN_UPPER}](?:[{LATIN_LOWER}]{{2,}}|[{LATIN_UPPER}]{{2,}}))(?![\w'’@/-])")
_NEIGHBOUR_ZIPF = 4.5  # "Kate" 4.34 joins "Griffiths"; "Please" 5.5 and "Today" 5.6 do not
MAX_WORDS = 3
_CLAUSE_END = re.compile(r"[ \t]*(?:[.!?,;\n]|$)")
_LAST_WORD_ZIPF = 5.5  # "Heart" 5.3 ends a name; "back" 6.1, "again" 5.9 do not
_NOT_LAST_WORD = FUNCTION_WORDS | CALENDAR | TITLES | TITLES_AFTER | frozenset(
    "back again too please thanks today tomorrow tonight yesterday soon later asap right away".split())


def grow_english(text: str, hits: list[Hit]) -> list[Hit]:
    """`hits` (sorted, non-overlapping) with each PERSON span of one or two words grown by one name word on
    each side, never into another span."""
    out = list(hits)
    for i, h in enumerate(out):
        if h.entity != "PERSON" or text[h.start:h.end].count(" ") + 1 >= MAX_WORDS:
            continue
        caps = text[h.start:h.end].isupper()
        floor = out[i - 1].end if i else 0
        limit = out[i + 1].start if i + 1 < len(out) else len(text)
        s, e = h.start, h.end
        one_word = " " not in text[s:e]
        m = _BEFORE.search(text, max(floor, s - 40), s)
        if m is not None and (_joins(m.group(1), caps) or _first_name_before(m.group(1), caps)):
            s = m.start(1)
        m = _AFTER.match(text, e, limit)
        if m is not None and text[s:e].count(" ") + 1 < MAX_WORDS \
                and (_joins(m.group(1), caps) or (one_word and _ends_clause(text, m, caps))):
            e = m.end(1)
        if (s, e) != (h.start, h.end):
            out[i] = h._replace(start=s, end=e)
    return out


def _first_name_before(word: str, caps: bool) -> bool:
    return word.isupper() == caps and (caps or word[1:].islower()) and fold(word) in LISTED_FIRST


def _ends_clause(text: str, m: re.Match, caps: bool) -> bool:
    word = m.group(1)
    if word.isupper() != caps or _CLAUSE_END.match(text, m.end(1)) is None:
        return False
    key = fold(word)
    return len(key) >= 3 and key not in _NOT_LAST_WORD and en_zipf(key) < _LAST_WORD_ZIPF


def _joins(word: str, caps: bool) -> bool:
    if word.isupper() != caps:
        return False  # "Dear KATJA" is no run of capitals; "ORDER Smith" no name
    if caps:
        key = fold(word)
        if VERBS_AFTER.match(" " + key) is not None or key.endswith(("ed", "ing")):
            return False  # "KATJA ENGEL EMAILED": the verb after the name, which a run of capitals does not tell
        return len(key) >= 3 and key not in NOT_NAME and (key in FIRST_NAMES or en_zipf(key) < _NEIGHBOUR_ZIPF)
    return name_like(word, _NEIGHBOUR_ZIPF)
