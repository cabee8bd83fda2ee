"""English: a listed first name and the capitalized word after it, mid-sentence, are a full name even when that
word is an everyday English word ("Spoke to Jorge Hall", "booked by Max Kaiser", "ask Daryl North").

The shared recognizers drop such a pair: the surname is a stop or everyday word and the first name alone is too
weak. Mid-sentence (a lower-case word right before the first name) a capital on an everyday word is no sentence
opener, so it marks a name, unless the text is in title case (a capitalized word follows the pair: "Max Power
Gym") or the word is a place, month, firm or other word that is never a name (en_words.NOT_NAME, name_brands).
"""
from __future__ import annotations

import re

from pipeline.data.pii.en_subject import FUNCTION_WORDS, LISTED_FIRST
from pipeline.data.pii.en_words import NOT_NAME
from pipeline.data.pii.name_context import CONTEXT_WORDS
from pipeline.data.pii.names import LATIN_LAST, LATIN_LOWER, LATIN_UPPER, STOP
from pipeline.data.pii.text import Hit, fold

_WORD = rf"[{LATIN_UPPER}][{LATIN_LOWER}]{{2,}}"
# the first word's capital first, the look-behind for the space before it after that (the engine skips to capitals):
# the same matches as "(?<=[ \u00a0])({_WORD})..."
_PAIR = re.compile(rf"([{LATIN_UPPER}](?<=[ \u00a0].)[{LATIN_LOWER}]{{2,}})[ \u00a0]({_WORD})"
                   rf"(?![\w'’@/\\-]|\.\w|[ \u00a0]+[{LATIN_UPPER}])")
# the stop list ends a name at "Hall" or "Church" ("Town Hall"), and a compass word opens a place ("North
# Dakota"); after a first name mid-sentence, with no capital after them, they are its surname, which a place or
# firm word ("Street", "Park", "Company") never is
_COMPASS = frozenset(("north", "south", "east", "west"))
_NOT_SURNAME = (NOT_NAME - (STOP & LATIN_LAST) - _COMPASS) | frozenset("branch company day holder park plaza".split())
# stop words for "iPhone Pro Max", where a capital stands before the word; after a lower-case word, a first name
_STOP_FIRST_NAMES = frozenset(("max",))
_LOWER_WORD_BEFORE = re.compile(rf"(?<![\w'’@./\\-])[{LATIN_LOWER}]+:?[ \u00a0]$")  # "ship to: Daryl North"
_BRAND_PAIRS = frozenset(tuple(fold(w) for w in b.split()[:2]) for b in CONTEXT_WORDS["name_brands"])


def first_and_surnames(text: str) -> list[Hit]:
    """Each listed first name with the capitalized word after it, a lower-case word (and a colon) before them and no
    capitalized word after them; the second word no function, place, calendar or title word, the pair no
    brand ("Tommy Hilfiger")."""
    out = []
    for m in _PAIR.finditer(text):
        if _LOWER_WORD_BEFORE.search(text, max(0, m.start() - 30), m.start()) is None:
            continue
        first, last = fold(m.group(1)), fold(m.group(2))
        if first not in LISTED_FIRST or (first in NOT_NAME and first not in _STOP_FIRST_NAMES):
            continue
        if last in _NOT_SURNAME or last in FUNCTION_WORDS or (first, last) in _BRAND_PAIRS:
            continue
        out.append(Hit(m.start(1), m.end(2), "PERSON", 0.7, "first_and_surname"))
    return out
