"""A record's text as words that compare equal across copies of it, and 64-bit hashes of their n-grams.

Folding (`fold`): Unicode NFKC (full-width forms, ligatures, a letter and its combining accent as one code point),
then the Turkish i's and Russian ё made one letter each, then case folding. Turkish lowers "I" to "ı" and "İ" to
"i"; Python's language-independent casefold gives "i" and "i" + U+0307, and .lower() of "İSTANBUL" leaves that
U+0307 in "i̇stanbul". The language of a record is not always known, nor the same for two copies of one text (a
short eval item is detected as another language than its training copy), so instead of lowering per language
the four letters I, İ, ı, i fold to "i" everywhere: an upper-case Turkish copy, a Turkish-lowered one and a
Python-lowered one then give the same words. Russian writes ё as е as often as not: ё folds to е.

Words (`words`): runs of Unicode letters, combining marks and digits; punctuation, symbols, underscores (folded
to spaces) and whitespace separate words and are dropped, numbers are kept. Marks count as word characters so
that scripts whose vowels are marks (Devanagari) keep their words whole.
"""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import numpy as np
import xxhash

from pipeline.data.dedup.text import fmix64

# (from, to) pairs, applied with str.replace: str.translate with a mapping looks up every character in Python
# and took a third of the tokenizing time
_FOLD = (("İ", "i"), ("ı", "i"), ("Ё", "е"), ("ё", "е"), ("_", " "))
_WINDOW_SEED = 0xDEC0_7A31


def fold(text: str) -> str:
    """The text in the one form two copies of it share (module docstring)."""
    text = unicodedata.normalize("NFKC", text)
    for old, new in _FOLD:
        text = text.replace(old, new)
    return text.casefold().replace("i\u0307", "i")  # what str.lower() makes of "İ"


@lru_cache(maxsize=1)
def _word_pattern() -> re.Pattern:
    """Letters, digits (re's \\w: str.isalnum, and "_", which fold() made a space) and the combining marks
    (category M) of the Basic Multilingual Plane, in one class: re looks such a class up in a table, where a
    class with code points above U+FFFF, or two classes, are scanned range by range (3x slower). The marks of
    the other planes (historic scripts) separate words, alike on both sides. Built once per process (~0.1 s)."""
    ranges, start = [], None
    for cp in range(0x10001):
        mark = cp < 0x10000 and unicodedata.category(chr(cp)).startswith("M")
        if mark and start is None:
            start = cp
        elif not mark and start is not None:
            ranges.append(f"{re.escape(chr(start))}-{re.escape(chr(cp - 1))}")
            start = None
    return re.compile(f"[\\w{''.join(ranges)}]+")


def words(text: str) -> list[str]:
    """The folded words of a text."""
    return _word_pattern().findall(fold(text))


def folded_words(folded: str) -> list[str]:
    """The words of a text already folded."""
    return _word_pattern().findall(folded)


@lru_cache(maxsize=64)
def _constants(n: int) -> np.ndarray:
    rng = np.random.Generator(np.random.PCG64(_WINDOW_SEED + n))
    return rng.integers(0, 1 << 63, n, dtype=np.uint64) * np.uint64(2) + np.uint64(1)


def word_hashes(tokens: list[str]) -> np.ndarray:
    """xxh3_64 of each word (uint64)."""
    digest = xxhash.xxh3_64_intdigest
    return np.fromiter((digest(w.encode()) for w in tokens), dtype=np.uint64, count=len(tokens))


def window_hashes(values: np.ndarray, n: int) -> np.ndarray:
    """An order-sensitive 64-bit hash of every n consecutive word hashes (len - n + 1 of them); windows of
    different n never share a hash by construction of the constants (one set per n) and the final mix."""
    m = len(values) - n + 1
    if m <= 0:
        return np.zeros(0, dtype=np.uint64)
    consts = _constants(n)
    acc = values[:m] * consts[0]
    for k in range(1, n):
        acc += values[k:k + m] * consts[k]
    return fmix64(acc ^ np.uint64(n))


def batch_words(folded: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The word hashes of every (folded) text, concatenated, and the number of words of each text."""
    per_text = [folded_words(t) for t in folded]
    counts = np.fromiter((len(w) for w in per_text), dtype=np.int64, count=len(folded))
    return word_hashes([w for ws in per_text for w in ws]), counts


def batch_windows(hashes: np.ndarray, counts: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(window hashes, text of each window) for the n-word windows that lie inside one text."""
    owner = np.repeat(np.arange(len(counts)), counts)
    windows = window_hashes(hashes, n)
    inside = owner[:len(windows)] == owner[n - 1:] if len(windows) else np.zeros(0, dtype=bool)
    return windows[inside], owner[:len(windows)][inside]
