"""The text the trainer sees, its normalization for exact dedup, and vectorized shingling.

Texts of a batch are encoded once as one UTF-32 code point array; word boundaries, word hashes, word n-gram and
character n-gram hashes are computed with numpy over that array, so the per-record Python work is building
the text, case folding it and one xxh3 call.
"""
from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import xxhash

from pipeline.core.records import arguments_text, call_function
from pipeline.data.dedup.params import CHAR_MODE_MAX_WORDS, CHAR_MODE_MEAN_WORD_LEN, MODE_CHAR, MODE_WORD

_U64 = np.uint64


def _message_text(m: dict) -> str:
    parts = [m.get("content") or ""]
    for call in m.get("tool_calls") or ():
        parts.append(f"{call_function(call)[0]}({arguments_text(call)})")
    return "\n".join(p for p in parts if p)


def trainer_text(record: dict) -> str:
    """All the text the trainer sees: each message with its role marker, or the plain text."""
    messages = record.get("messages")
    if messages is not None:
        return "\n".join(f"<|{m.get('role')}|>\n{_message_text(m)}" for m in messages)
    return record.get("text") or ""


def exact_text(record: dict) -> str:
    """The text exact dedup compares: the trainer text and, when the record has them, its tool definitions
    (rendered into the prompt by the chat template), so that two records that differ only in their tools are
    not duplicates. Near dedup leaves the tools out: many records share one long tool schema, which would
    make different conversations look alike."""
    text = trainer_text(record)
    tools = record.get("tools")
    if tools:
        text += "\n<|tools|>\n" + json.dumps(tools, ensure_ascii=False, separators=(",", ":"))
    return text


def near_source_text(record: dict, scope: str) -> str:
    """The text compared by near dedup: all turns with role markers, or the assistant turns only."""
    messages = record.get("messages")
    if messages is not None and scope == "assistant":
        return "\n".join(_message_text(m) for m in messages if m.get("role") == "assistant")
    return trainer_text(record)


@lru_cache(maxsize=1)
def _punctuation_table() -> dict:
    return dict.fromkeys(np.flatnonzero(char_classes() & _PUNCT).tolist())


def normalize_exact(text: str, case_fold: bool = True, punctuation_fold: bool = False) -> str:
    """Content normalized for exact dedup: case folded, punctuation (Unicode P*) removed if asked, whitespace
    collapsed to single spaces. The reference for the vectorized ``exact_hashes``."""
    if case_fold:
        text = text.casefold()
    if punctuation_fold:
        text = text.translate(_punctuation_table())
    return " ".join(text.split())


def turns(record: dict) -> int:
    """Messages other than system ones (1 for plain text): the most_turns keep policy."""
    messages = record.get("messages")
    if messages is None:
        return 1
    return sum(1 for m in messages if m.get("role") != "system")


# --- vectorized shingling ------------------------------------------------------------------------------

_WORD, _SPACE, _PUNCT = 1, 2, 4


@lru_cache(maxsize=1)
def char_classes() -> np.ndarray:
    """Flags per code point: _WORD (Unicode letters, marks, digits, underscore), _SPACE (str.isspace),
    _PUNCT (Unicode category P*). Built once per process (~0.3 s)."""
    cats = np.frombuffer(
        "".join(unicodedata.category(chr(cp))[0] for cp in range(0x110000)).encode("ascii"), dtype=np.uint8)
    table = np.where((cats == ord("L")) | (cats == ord("N")) | (cats == ord("M")), _WORD, 0).astype(np.uint8)
    table[ord("_")] = _WORD
    table[cats == ord("P")] |= _PUNCT
    for cp in range(0x3001):  # every str.isspace() code point is below U+3001
        if chr(cp).isspace():
            table[cp] |= _SPACE
    return table


@dataclass
class Encoded:
    """Texts as one UTF-32 code point array, one space between texts."""

    cps: np.ndarray  # uint32
    start: np.ndarray  # int64, first code point of each text
    cls: np.ndarray  # uint8 char_classes flags per code point


def encode_texts(texts: list[str]) -> Encoded:
    cps = np.frombuffer(" ".join(texts).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    lens = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    start = np.cumsum(lens + 1) - lens - 1
    return Encoded(cps, start, char_classes()[cps])


def fmix64(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> _U64(33))
    h = h * _U64(0xFF51AFD7ED558CCD)
    h = h ^ (h >> _U64(33))
    h = h * _U64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> _U64(33))


def fmix32(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


@lru_cache(maxsize=16)
def _odd_constants(n: int, salt: int) -> np.ndarray:
    rng = np.random.Generator(np.random.PCG64(0x5EED0000 + salt))
    return rng.integers(0, 1 << 63, n, dtype=np.uint64) * _U64(2) + _U64(1)


_POLY_BASE = 0x100000001B3  # odd, so invertible mod 2^64
_POLY_CHUNK = 1 << 20  # word chars hashed per chunk
_poly_cache: list = [np.ones(0, np.uint64), np.ones(0, np.uint64)]


def _poly_tables(m: int) -> tuple[np.ndarray, np.ndarray]:
    """P^i and P^-i mod 2^64 for i < m (cached, grown by doubling)."""
    if len(_poly_cache[0]) < m:
        size = 1 << max(16, (m - 1).bit_length())
        pw = np.full(size, _U64(_POLY_BASE), dtype=np.uint64)
        inv = np.full(size, _U64(pow(_POLY_BASE, -1, 1 << 64)), dtype=np.uint64)
        pw[0] = inv[0] = 1
        _poly_cache[:] = [np.cumprod(pw, dtype=np.uint64), np.cumprod(inv, dtype=np.uint64)]
    return _poly_cache[0], _poly_cache[1]


def _word_hashes(wc: np.ndarray, woff: np.ndarray, wlen: np.ndarray) -> np.ndarray:
    """64-bit hash of each word; word k is wc[woff[k]:woff[k] + wlen[k]] (code points, contiguous)."""
    out = np.empty(len(woff), dtype=np.uint64)
    k = 0
    while k < len(woff):
        # Whole words, about _POLY_CHUNK chars at a time; positions restart at each chunk.
        base = int(woff[k])
        j = max(int(np.searchsorted(woff, base + _POLY_CHUNK, side="left")), k + 1)
        end = int(woff[j - 1] + wlen[j - 1])
        pw, inv = _poly_tables(end - base)
        contrib = np.zeros(end - base + 1, dtype=np.uint64)  # one spare element: reduceat needs idx < len
        np.multiply(wc[base:end], pw[: end - base], out=contrib[:-1], casting="unsafe")
        rel = woff[k:j] - base
        idx = np.empty(2 * len(rel), dtype=np.int64)
        idx[0::2], idx[1::2] = rel, rel + wlen[k:j]  # [start, end) of each word; the words may not be adjacent
        out[k:j] = np.add.reduceat(contrib, idx)[0::2] * inv[rel]  # sum c_i P^(i - start): position-independent
        k = j
    return fmix64(out ^ (wlen.astype(np.uint64) * _U64(0x9E3779B97F4A7C15)))


_WINDOW_CHUNK = 1 << 20  # windows hashed at a time: the uint64 temporaries stay a few MiB


def _window_hash(values: np.ndarray, n: int, salt: int) -> np.ndarray:
    """The high 32 bits of an order-sensitive 64-bit hash of every window of n consecutive values (unsigned,
    taken as uint64; len(values) - n + 1 windows, uint32), a chunk of windows at a time: a text of 8M
    characters held a dozen 64 MB temporaries at once."""
    consts = _odd_constants(n, salt)
    m = len(values) - n + 1
    out = np.empty(max(m, 0), dtype=np.uint32)
    for lo in range(0, m, _WINDOW_CHUNK):
        hi = min(lo + _WINDOW_CHUNK, m)
        acc = np.multiply(values[lo:hi], consts[0], dtype=np.uint64)
        for k in range(1, n):
            acc += np.multiply(values[lo + k:hi + k], consts[k], dtype=np.uint64)
        out[lo:hi] = fmix64(acc ^ _U64(n)) >> _U64(32)
    return out


def exact_hashes(texts: list[str], punctuation_fold: bool = False, enc: Encoded | None = None) -> np.ndarray:
    """(n, 2) uint64: xxh3_128 of each text's canonical form, ``normalize_exact(text)`` (case folding is
    the caller's) as UTF-32-LE. Without punctuation folding the form is str.split()'s words joined by one
    space, made by the string methods themselves (7.6 us a record against 9.4 for the vectorized form,
    bench/e2e/stepcut.py); with it, vectorized: non-space, non-punctuation code points with one space
    wherever the original had whitespace between two kept code points."""
    n = len(texts)
    if not punctuation_fold:
        digest = xxhash.xxh3_128_digest
        blob = b"".join([digest(" ".join(t.split()).encode("utf-32-le", "surrogatepass")) for t in texts])
        return np.frombuffer(blob, dtype=">u8").reshape(n, 2).astype(np.uint64)
    out = np.zeros((n, 2), dtype=np.uint64)
    if n == 0:
        return out
    enc = enc or encode_texts(texts)
    space = (enc.cls & _SPACE) != 0
    keep_pos = np.flatnonzero(~space & ((enc.cls & _PUNCT) == 0))
    gap = np.diff(np.cumsum(space, dtype=np.int32)[keep_pos]) != 0  # whitespace between kept chars
    # Kept chars of text i: keep_pos[first[i]:first[i + 1]] (texts are separated by a space).
    first = np.searchsorted(keep_pos, enc.start, side="left")
    bounds = np.append(first, len(keep_pos))
    boundary = np.zeros(len(keep_pos), dtype=bool)
    boundary[1:] = gap
    boundary[first[first < len(keep_pos)]] = False  # no space before a text's first char
    out_pos = np.arange(len(keep_pos)) + np.cumsum(boundary)
    canon = np.full(len(keep_pos) + int(boundary.sum()), 32, dtype=np.uint32)
    canon[out_pos] = enc.cps[keep_pos]
    lo = np.zeros(n, dtype=np.int64)
    hi = np.zeros(n, dtype=np.int64)
    nonempty = bounds[1:] > bounds[:-1]
    lo[nonempty] = out_pos[bounds[:-1][nonempty]]
    hi[nonempty] = out_pos[bounds[1:][nonempty] - 1] + 1
    mv = memoryview(canon.view(np.uint8))
    digest = xxhash.xxh3_128_digest
    blob = b"".join([digest(mv[4 * a:4 * b]) for a, b in zip(lo.tolist(), hi.tolist())])
    return np.frombuffer(blob, dtype=">u8").reshape(n, 2).astype(np.uint64)


def shingle_hashes(texts: list[str], ngram: int, char_ngram: int,
                   enc: Encoded | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """32-bit shingle hashes of each text (already case-folded as wanted), concatenated in text order.

    Returns (hashes uint32, counts per text int64, mode per text int8: 0 none, 1 word n-grams, 2 char n-grams).
    A text with at least one word has at least one shingle; shingles are not deduplicated (MinHash ignores
    repeats).
    """
    n = len(texts)
    counts = np.zeros(n, dtype=np.int64)
    modes = np.zeros(n, dtype=np.int8)
    if n == 0:
        return np.zeros(0, np.uint32), counts, modes
    enc = enc or encode_texts(texts)
    isw = (enc.cls & _WORD) != 0
    prev = np.empty_like(isw)
    prev[0], prev[1:] = False, isw[:-1]
    nxt = np.empty_like(isw)
    nxt[-1], nxt[:-1] = False, isw[1:]
    starts = np.flatnonzero(isw & ~prev)
    if len(starts) == 0:
        return np.zeros(0, np.uint32), counts, modes
    wlen = np.flatnonzero(isw & ~nxt) + 1 - starts
    rec_of_word = np.searchsorted(enc.start, starts, side="right") - 1
    n_words = np.bincount(rec_of_word, minlength=n)
    word_chars = np.bincount(rec_of_word, weights=wlen, minlength=n)
    mean_len = word_chars / np.maximum(n_words, 1)
    word_mode = (n_words >= max(CHAR_MODE_MAX_WORDS, 4 * ngram, ngram)) & (mean_len <= CHAR_MODE_MEAN_WORD_LEN)
    char_mode = (n_words > 0) & ~word_mode
    modes[word_mode] = MODE_WORD
    modes[char_mode] = MODE_CHAR

    parts: list[tuple[np.ndarray, np.ndarray]] = []  # (hashes, count per text); a text is in one part

    if word_mode.any():
        wc = enc.cps[isw]  # word code points, in order; word k is wc[woff[k]:woff[k] + wlen[k]]
        woff = np.cumsum(wlen) - wlen
        wsel = word_mode[rec_of_word]
        ids = np.flatnonzero(wsel) if not wsel.all() else None
        if ids is None:
            wh, wrec = _word_hashes(wc, woff, wlen), rec_of_word
        else:  # word-mode texts' words only; positions stay contiguous per word
            wh, wrec = _word_hashes(wc, woff[ids], wlen[ids]), rec_of_word[ids]
        del wc
        if len(wh) >= ngram:
            g = _window_hash(wh, ngram, salt=1)
            valid = wrec[: len(g)] == wrec[ngram - 1:]
            parts.append((g[valid], np.bincount(wrec[: len(g)][valid], minlength=n)))

    if char_mode.any():
        # The words of each char-mode text joined by single spaces, then windows of char_ngram code points.
        # Built with masks over the code points, not index arrays of 8 bytes a character (peak 17 bytes a
        # character for 4M characters, 64 before): the words' code points, and the one after each word that
        # another word of its text follows, made a space.
        ids = np.flatnonzero(char_mode[rec_of_word])
        crec = rec_of_word[ids]
        joined = crec[1:] == crec[:-1]  # word i + 1 of the selection follows word i in the same text
        keep = isw & np.repeat(char_mode, np.diff(np.append(enc.start, len(enc.cps) + 1)))[:len(enc.cps)]
        keep[(starts[ids] + wlen[ids])[:-1][joined]] = True
        seq = enc.cps[keep]
        del keep
        seg_len = wlen[ids].copy()
        seg_len[1:] += joined
        seq[(np.cumsum(seg_len) - wlen[ids])[1:][joined] - 1] = 32
        rec_len = np.bincount(crec, weights=seg_len, minlength=n).astype(np.int64)
        rec_start = np.cumsum(rec_len) - rec_len
        cn = char_ngram
        long = np.flatnonzero(char_mode & (rec_len >= cn))
        if len(long):
            g = _window_hash(seq, cn, salt=2)
            edge = np.zeros(len(g) + 1, dtype=np.int8)  # +1 at each text's first window, -1 past its last
            np.add.at(edge, rec_start[long], 1)
            np.add.at(edge, rec_start[long] + rec_len[long] - cn + 1, -1)
            valid = np.cumsum(edge[:-1], dtype=np.int8).view(bool)
            part_counts = np.zeros(n, dtype=np.int64)
            part_counts[long] = rec_len[long] - cn + 1
            parts.append((g[valid], part_counts))
        short = np.flatnonzero(char_mode & (rec_len < cn))
        if len(short):  # shorter than one n-gram: one shingle, the whole space-joined text
            hs = [_window_hash(seq[f:f + rec_len[r]], int(rec_len[r]), salt=3)[0]
                  for r, f in zip(short, rec_start[short])]
            parts.append((np.array(hs, dtype=np.uint32), np.bincount(short, minlength=n)))

    if not parts:
        return np.zeros(0, np.uint32), counts, modes
    counts = sum(c for _, c in parts).astype(np.int64)
    if len(parts) == 1:
        return parts[0][0], counts, modes
    hashes = np.empty(int(counts.sum()), dtype=np.uint32)  # each text's segment from the part it is in
    first = np.cumsum(counts) - counts
    for part, part_counts in parts:
        part_first = np.cumsum(part_counts) - part_counts
        for r in np.flatnonzero(part_counts).tolist():
            hashes[first[r]:first[r] + part_counts[r]] = part[part_first[r]:part_first[r] + part_counts[r]]
    return hashes, counts, modes
