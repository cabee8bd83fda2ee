"""Text out of bytes: the encoding guess, re-encoding to UTF-8, and lines in bounded memory (\n, \r\n and a
lone \r end a line; a line over the record cap is skipped without being held)."""
from __future__ import annotations

import codecs
import collections
import csv
import functools
import io
import re
from collections import deque
from typing import Iterator

import charset_normalizer

SNIFF_BYTES = 1 << 20
JUDGED_BYTES = 1 << 18  # of the sample's non-UTF-8 lines, read in each candidate code page (about 0.1 s)

# The legacy code pages of the product's languages, in the order a tie goes: Turkish, Russian, Western.
# cp1254 and cp1252 decode iso8859-9 and latin-1 text the same way (they only add characters in 0x80-0x9f).
LEGACY_CANDIDATES = ("cp1254", "cp1251", "koi8_r", "cp1252")
_TURKISH = set("çğıöşüÇĞİÖŞÜâîûÂÎÛ")
_CYRILLIC = set("абвгдеёжзийклмнопрстуфхцчшщъыьэюяАБВГДЕЁЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯ")
# Western European letters, without the Icelandic ones (Ð Ý Þ ð ý þ): those are what Turkish ğ İ ş ı become
# in the wrong code page ("Şifre" read as iso8859-10 or cp1252 is "Þifre").
_WESTERN = set("ÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÑÒÓÔÕÖØÙÚÛÜßàáâãäåæçèéêëìíîïñòóôõöøùúûüÿŒœŠšŸŽž")
_LETTERS = {"cp1254": _TURKISH, "cp1251": _CYRILLIC, "koi8_r": _CYRILLIC, "cp1252": _WESTERN}
# Punctuation and symbols any of them may hold: neither for nor against an encoding.
_NEUTRAL = set("\xa0«»“”„‘’‚–—…€£¥°±²³µ·•§©®™¢¦¨¬¯´¸¹º¼½¾¿¡×÷‰†‡№")
_NON_ASCII_WORD = re.compile(r"\w*[^\x00-\x7f]\w*")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def detect_encoding(sample: bytes) -> str:
    """UTF-8 (with or without BOM), then UTF-16/32 (BOM, or the zero bytes of UTF-16 text), then the legacy
    code page of Turkish, Russian or English whose decoded text reads as that language; only when none does,
    charset-normalizer. Asked first, charset-normalizer read short Turkish lines as iso8859-10 or big5."""
    if sample.startswith(b"\xef\xbb\xbf"):
        return "utf-8-sig"
    wide = _wide_encoding(sample)  # before UTF-8: ASCII text in UTF-16 is valid UTF-8 (with NULs)
    if wide:
        return wide
    try:
        sample.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError as exc:
        if exc.start >= len(sample) - 4:  # a multi-byte character cut by the sample's end
            return "utf-8"
    # Only the lines that are not UTF-8 are judged: in a file of mixed lines the UTF-8 ones are read as
    # UTF-8 line by line anyway, and they would make any legacy guess look wrong.
    legacy = _non_utf8_lines(sample)
    return _language_code_page(legacy[:JUDGED_BYTES]) or _charset_normalizer_guess(legacy or sample)


def _wide_encoding(sample: bytes) -> str | None:
    """utf_16/utf_32 from a BOM; utf_16_le/_be from text with every other byte zero (ASCII in UTF-16)."""
    if sample.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "utf_32"
    if sample.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf_16"
    head = sample[:4096]
    if len(head) >= 16:
        odd, even = head[1::2].count(0), head[0::2].count(0)
        for encoding, zeros in (("utf_16_le", odd), ("utf_16_be", even)):
            if zeros >= len(head) // 4 and _is_text(decode_strict(head[:len(head) & ~1], encoding)):
                return encoding
    return None


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


def _is_text(text: str | None) -> bool:
    """Decoded without error and without control characters (a run of NULs decodes as UTF-16 too)."""
    return text is not None and not _CONTROL.search(text)


def _language_code_page(data: bytes) -> str | None:
    """The code page in LEGACY_CANDIDATES whose decoding of `data` reads most like its language; None when
    none reads as text. Each word with characters beyond ASCII scores +1 when it is plausible in the
    language and -2 when not; another character beyond ASCII scores -1 unless it is common punctuation."""
    best, best_score = None, 0
    for encoding in LEGACY_CANDIDATES:
        text = decode_strict(data, encoding)
        if text is None:
            continue
        words = collections.Counter(_NON_ASCII_WORD.findall(text))
        score = sum(n if _plausible(word, _LETTERS[encoding]) else -2 * n for word, n in words.items())
        others = _NON_ASCII.findall(_NON_ASCII_WORD.sub(" ", text))
        score -= sum(char not in _NEUTRAL for char in others)
        if score > best_score:
            best, best_score = encoding, score
    return best


def _plausible(word: str, letters: set[str]) -> bool:
    """Whether a word with characters beyond ASCII can be a word of the language of `letters`. Those
    characters must be its letters, the case must not change inside the word (cp1251 Russian read as koi8_r
    is "сМЕМХРЭ"), a Cyrillic word has no Latin letter (latin-1 "Café" read as cp1251 is "Cafй"), and a
    Latin word of three letters or more has some ASCII letter (cp1251 Russian read as cp1252 is "Ñìåíèòü")."""
    if not all(c in letters for c in word if c > "\x7f"):
        return False
    if not (word.islower() or word.isupper() or word.istitle()):
        return False
    ascii_letters = sum(c.isascii() and c.isalpha() for c in word)
    if letters is _CYRILLIC:
        return not ascii_letters
    return ascii_letters > 0 or sum(c.isalpha() for c in word) < 3


def _charset_normalizer_guess(sample: bytes) -> str:
    """charset-normalizer's least chaotic one-byte or CJK guess. Not UTF-16/32: text in them was found by
    _wide_encoding, and its guess of them for a few random bytes split one line into others."""
    matches = [m for m in charset_normalizer.from_bytes(sample) if not is_wide(m.encoding)]
    if not matches:
        return "utf-8"
    least_chaos = min(m.chaos for m in matches)
    return next(m.encoding for m in matches if m.chaos <= least_chaos + 0.01)


def _non_utf8_lines(sample: bytes) -> bytes:
    lines = []
    for line in sample.split(b"\n"):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            lines.append(line)
    return b"\n".join(lines)


@functools.lru_cache(maxsize=None)
def is_single_byte(encoding: str) -> bool:
    """cp1251, latin_1, mac_greek...: one character per byte (not UTF-16, not the CJK encodings)."""
    return len(bytes(range(256)).decode(encoding, "replace")) == 256


def decode_strict(data: bytes, encoding: str) -> str | None:
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        return None


LINE_BLOCK = 1 << 20


def line_ends(data: bytes) -> int:
    """Line ends in `data`: \n, \r\n and a lone \r (as bytes.splitlines counts them)."""
    newlines, returns = data.count(b"\n"), data.count(b"\r")
    # counting b"\r\n" is a two-byte search, 3x a one-byte count: only where a \r is there to pair
    return newlines + returns - data.count(b"\r\n") if returns else newlines


def iter_lines(stream, cap: int, first_line: int = 1) -> Iterator[tuple[int, bytes | int | None]]:
    """(line number, the line's bytes without its end) per line. A line over `cap` bytes is skipped in
    bounded memory and gives None. A run of empty lines gives their count (an int) once: one by one, a gzip
    of 200 MB of newlines took minutes. A lone \r ends a line as \n and \r\n do: a file with old Mac
    line ends was one record (a JSON string cannot hold a raw CR, so it is never inside a .jsonl record)."""
    number = first_line
    tail = b""          # the start of a line whose end is not read yet
    skipping = False    # inside a line over the cap: its bytes are dropped until its end
    cr_pending = False  # the last block ended with \r: a \n first in the next block is the same line end
    while True:
        chunk = stream.read(LINE_BLOCK)
        if not chunk:
            if skipping:
                yield number, None
            elif tail:
                yield number, (None if len(tail) > cap else tail)
            return
        if cr_pending and chunk[:1] == b"\n":
            chunk = chunk[1:]
            if not chunk:
                cr_pending = False
                continue
        cr_pending = False
        cut = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
        if cut < 0:  # no line end in this block
            if not skipping:
                tail += chunk
                if len(tail) > cap:
                    tail, skipping = b"", True
            continue
        done, rest = chunk[:cut + 1], chunk[cut + 1:]
        cr_pending = done.endswith(b"\r") and not rest
        if skipping:  # the over-long line ends at the first line end of this block
            first = min(i for i in (done.find(b"\n"), done.find(b"\r")) if i >= 0)
            yield number, None
            number += 1
            done = done[first + 1:] if done[first:first + 2] != b"\r\n" else done[first + 2:]
            skipping = False
        elif tail:
            done = tail + done
        tail = rest
        if len(tail) > cap:
            tail, skipping = b"", True
        if not done.strip(b"\r\n"):  # a block of line ends only: counted, not split
            if done:
                ends = line_ends(done)
                yield number, ends
                number += ends
            continue
        empty = 0
        for line in done.splitlines():
            if not line:
                empty += 1
                continue
            if empty:
                yield number, empty
                number += empty
                empty = 0
            yield number, (None if len(line) > cap else line)
            number += 1
        if empty:
            yield number, empty
            number += empty


def is_wide(encoding: str) -> bool:
    return encoding.lower().replace("-", "_").startswith(("utf_16", "utf_32"))


class BoundedLines:
    """Lines of a text stream for csv.reader, each read with a length limit: an over-long line is
    skipped in bounded memory and raises csv.Error, which the row loop counts (the reader starts
    afresh on the next line after an error). The lines one row took are kept (up to the record cap) so
    that the row loop can push them back to be read again (an unbalanced quote)."""

    def __init__(self, text, limit: int):
        self.text, self.limit = text, limit
        self.pending: deque[str] = deque()
        self.row_lines: list[str] = []
        self.row_size = 0

    def start_row(self) -> None:
        self.row_lines, self.row_size = [], 0

    def push_back(self, lines: list[str]) -> None:
        self.pending.extendleft(reversed(lines))

    def __iter__(self):
        return self

    def __next__(self) -> str:
        if self.pending:
            line = self.pending.popleft()
        else:
            line = self.text.readline(self.limit + 1)
            if not line:
                raise StopIteration
            if len(line) > self.limit and not line.endswith(("\n", "\r")):
                while (rest := self.text.readline(1 << 20)) and not rest.endswith(("\n", "\r")):
                    pass
                raise csv.Error("line over the record size cap")
        self.row_size += len(line)
        if self.row_size <= self.limit:
            self.row_lines.append(line)
        return line


class Reencoder(io.RawIOBase):
    """Decodes a legacy-encoded byte stream and re-encodes it as UTF-8, incrementally."""

    def __init__(self, raw, encoding: str):
        import codecs

        self.raw, self.decoder, self.pending = raw, codecs.getincrementaldecoder(encoding)("replace"), b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self.pending:
            chunk = self.raw.read(1 << 16)
            self.pending = self.decoder.decode(chunk, final=not chunk).encode("utf-8")
            if not chunk:
                break
        n = min(len(buffer), len(self.pending))
        buffer[:n] = self.pending[:n]
        self.pending = self.pending[n:]
        return n
