"""English: a word of a full name the record holds, found again alone where only a person stands, though it is an
everyday, stop or office word that mentions.py does not look for alone ("Spoke to Max Schumacher" ... "Told <Max>
the parcel is on its way"; "caller: alison king" ... "<King> confirmed the new address", "<King>'s order is on
hold").

A word like "Max", "King" or "Love" is looked for alone nowhere (a product, a title, a word); once the record names
a person of two words or more with it, it is that person's in a slot a word of its kind does not take: after
"told" or "tell" (a person is told), before a verb of calling, writing, asking or confirming or "will", or in the
possessive before a lower-case word. Not after an article, determiner or possessive ("the King's speech", "our Max
plan"), nor before another capitalized word ("King Street", "Max Pro").
"""
from __future__ import annotations

import re

from pipeline.data.pii.name_context import VERBS_AFTER
from pipeline.data.pii.text import Hit, fold

_WORD = re.compile(r"(?<![\w'’.-])([A-Z][a-z]{2,})(?![\w-])")
_TOLD = re.compile(r"(?<![\w'’-])(?i:told|tell)[ \u00a0]+$")
_DETERMINER = re.compile(r"(?<![\w'’-])(?i:the|an?|our|my|your|his|her|their|its|this|that)[ \u00a0]+$")
_AFTER = re.compile(r"['’]s[ \u00a0]+[a-z]|[ \u00a0]+will[ \u00a0]")
_CAPITAL_AFTER = re.compile(r"[ \u00a0]+[A-Z]")


def found_again(text: str, book, kept: list[Hit]) -> list[Hit]:
    """The record's full names' words in `text` in a person's slot, outside the `kept` spans."""
    keys = {k for p in book.persons if len(p) >= 2 for k in p}
    if not keys:
        return []
    spans = [(h.start, h.end) for h in kept]
    out = []
    for m in _WORD.finditer(text):
        s, e = m.span(1)
        if fold(m.group(1)) not in keys or any(a < e and s < b for a, b in spans):
            continue
        if _DETERMINER.search(text, max(0, s - 8), s) or _CAPITAL_AFTER.match(text, e):
            continue
        if _TOLD.search(text, max(0, s - 8), s) or _AFTER.match(text, e) \
                or VERBS_AFTER.match(fold(text[e:e + 40])) is not None:
            out.append(Hit(s, e, "PERSON", 0.7, "record"))
    return out
