"""Names in text written in capitals, found by the lower-case rules on a lower-cased copy.

In capitals a capital letter says nothing, so a shouted line ("SERHAT ÇİÇEK DÜN ARADI", "ФИО: ГАСЫРБЕК
МОЛДАХМЕТ") is as little marked as one typed in lower case; the lower-case rules (lower_pairs, the
introductions of latin_names and ru_names, the Russian dictionary) weigh exactly what is left: which words are
names and which are everyday words. So each stretch of two or more words in capitals is lower-cased in a copy of
the text (the Turkish way in Turkish text: İ -> i, I -> ı; one character for one, so the offsets hold), the
name recognizers run on the copy, and their PERSON hits inside such a stretch count for the original.
"""
from __future__ import annotations

import re

from pipeline.data.pii.text import Hit, TextContext

_WORD = re.compile(r"[^\W\d_]+")
# what may lie between two words of one stretch: spaces and punctuation, no lower-case letter or digit
_GLUE = re.compile(r"[^\w\n]*")
_TR_LOWER = str.maketrans({"İ": "i", "I": "ı"})
# a cheap test first: two words of capitals side by side somewhere (most texts have none)
_MAY_HOLD = re.compile(r"[^\W\d_a-zа-яё]{2}[^\W\d_]*[^\w\n]+[^\W\d_a-zа-яё]{2}")


def caps_stretches(text: str) -> list[tuple[int, int]]:
    """Spans of two or more adjacent words in capitals (two letters or more each) on one line."""
    out: list[tuple[int, int]] = []
    start = end = -1
    n = 0
    for m in _WORD.finditer(text):
        w = m.group()
        if len(w) >= 2 and w.isupper() and (n and _GLUE.fullmatch(text, end, m.start())):
            end, n = m.end(), n + 1
            continue
        if n >= 2:
            out.append((start, end))
        start, end, n = (m.start(), m.end(), 1) if len(w) >= 2 and w.isupper() else (-1, -1, 0)
    if n >= 2:
        out.append((start, end))
    return out


def lower_one_for_one(segment: str, lang: str) -> str:
    """`segment` in lower case, one character for each (str.lower makes "İ" two)."""
    if lang == "tr":
        segment = segment.translate(_TR_LOWER)
    low = segment.lower()
    if len(low) == len(segment):
        return low
    return "".join(c if len(c) == 1 else ch for ch, c in ((ch, ch.lower()) for ch in segment))


def lowered_copy(text: str, stretches: list[tuple[int, int]], lang: str) -> str:
    parts, pos = [], 0
    for s, e in stretches:
        parts += [text[pos:s], lower_one_for_one(text[s:e], lang)]
        pos = e
    parts.append(text[pos:])
    return "".join(parts)


def recased_hits(text: str, lang: str, recognizers: list, found: list[Hit]) -> list[Hit]:
    """PERSON hits that `recognizers` (the name recognizers of the language) find in the lower-cased copy
    of the text's stretches in capitals, inside such a stretch and not inside a PERSON hit in `found` (one
    that overlaps it, a part of the name, is merged with it later)."""
    if _MAY_HOLD.search(text) is None:
        return []
    stretches = caps_stretches(text)
    if not stretches:
        return []
    ctx = TextContext(lowered_copy(text, stretches, lang), lang)
    taken = [h for h in found if h.entity == "PERSON"]
    out: list[Hit] = []
    for rec in recognizers:
        if not rec.triggered(ctx):
            continue
        for h in rec.find(ctx):
            if h.entity != "PERSON" or not any(s <= h.start and h.end <= e for s, e in stretches):
                continue
            if any(t.start <= h.start and h.end <= t.end for t in taken) \
                    or any(h.start < t.end and t.start < h.end for t in out):
                continue
            out.append(Hit(h.start, h.end, "PERSON", h.score, "recased"))
    return out
