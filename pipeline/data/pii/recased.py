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

_UP = "A-ZÇĞİÖŞÜÂÊÎÔÛÉÈÁÍÓÚÑƏÄËÏÀÌÒÙÃÕÅØÆŒА-ЯЁ"
# two or more words in capitals, spaces and punctuation between them (no letter, digit or line end)
_STRETCH = re.compile(rf"(?<!\w)[{_UP}]{{2,}}(?:[^\w\n]+[{_UP}]{{2,}}(?!\w))+")
_REACH = 120  # characters of the line around a stretch that its cues lie in
_TR_LOWER = str.maketrans({"İ": "i", "I": "ı"})
# a cheap test first: two words of capitals side by side somewhere (most texts have none)
_MAY_HOLD = re.compile(r"[^\W\d_a-zа-яё]{2}[^\W\d_]*[^\w\n]+[^\W\d_a-zа-яё]{2}")


def caps_stretches(text: str) -> list[tuple[int, int]]:
    """Spans of two or more adjacent words in capitals (two letters or more each) on one line."""
    return [m.span() for m in _STRETCH.finditer(text)]


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
    # a stretch holds four capitals or more, each an upper-case letter: a text with no upper-case letter after
    # its first character holds none (a C-speed test that most prose passes, where the regex costs ~10 ns a
    # character); islower() is False on a text without cased letters too, which the regex then decides
    if text[1:].islower() or _MAY_HOLD.search(text) is None:
        return []
    stretches = caps_stretches(text)
    if not stretches:
        return []
    taken = [h for h in found if h.entity == "PERSON"]
    out: list[Hit] = []
    for lo, hi in _lines(text, stretches):
        # the recognizers read the lines that hold the stretches, not the whole text: a long document with one
        # shouted heading would cost a second full pass
        inside = [(s - lo, e - lo) for s, e in stretches if lo <= s and e <= hi]
        ctx = TextContext(lowered_copy(text[lo:hi], inside, lang), lang)
        for rec in recognizers:
            if not rec.triggered(ctx):
                continue
            for h in rec.find(ctx):
                h = Hit(h.start + lo, h.end + lo, h.entity, h.score, "recased")
                if h.entity != "PERSON" or not any(lo + s <= h.start and h.end <= lo + e for s, e in inside):
                    continue
                if any(t.start <= h.start and h.end <= t.end for t in taken) \
                        or any(h.start < t.end and t.start < h.end for t in out):
                    continue
                out.append(h)
    return out


def _lines(text: str, stretches: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The lines (at most _REACH characters each side of a stretch) that hold the stretches, merged."""
    out: list[tuple[int, int]] = []
    for s, e in stretches:
        lo = max(text.rfind("\n", 0, s) + 1, s - _REACH)
        hi = text.find("\n", e)
        hi = min(len(text) if hi < 0 else hi, e + _REACH)
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(hi, out[-1][1]))
        else:
            out.append((lo, hi))
    return out
