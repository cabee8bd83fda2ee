"""Text out of bytes: the encoding guess, re-encoding to UTF-8, and lines in bounded memory (\n, \r\n and a
lone \r end a line; a line over the record cap is skipped without being held)."""
from __future__ import annotations

import codecs
import csv
import functools
import io
from collections import deque
from typing import Iterator

import charset_normalizer


SNIFF_BYTES = 1 << 20
COMMON_LEGACY_ENCODINGS = ("cp1251", "cp1254", "cp1252", "koi8_r", "iso8859_9", "cp866", "utf_16", "latin_1")


def detect_encoding(sample: bytes) -> str:
    """UTF-8 (with or without BOM) first; otherwise ask charset-normalizer. A fixed fallback order cannot
    work: cp1254 decodes cp1251 Russian bytes without error."""
    if sample.startswith(b"\xef\xbb\xbf"):
        return "utf-8-sig"
    try:
        sample.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError as exc:
        if exc.start >= len(sample) - 4:  # a multi-byte character cut by the sample's end
            return "utf-8"
    # Only the lines that are not UTF-8 are shown to charset-normalizer: in a file of mixed lines the UTF-8
    # ones make it guess a wrong legacy code page (cp1251 lines read as mac_greek).
    matches = (list(charset_normalizer.from_bytes(_non_utf8_lines(sample)))
               or list(charset_normalizer.from_bytes(sample)))
    if not matches:
        return "utf-8"
    least_chaos = min(m.chaos for m in matches)
    close = [m.encoding for m in matches if m.chaos <= least_chaos + 0.01]
    # Short samples tie between close relatives (mac_cyrillic vs cp1251): prefer what CRMs and
    # Windows exports actually use.
    encoding = next((e for e in COMMON_LEGACY_ENCODINGS if e in close), close[0])
    if encoding in _BOMS and not sample.startswith(_BOMS[encoding]):
        # utf_16/utf_32 take the byte order from a BOM at the start of the stream; without one their
        # incremental decoders (CSV, JSON) raise UnicodeError, so the codec names the order explicitly.
        # Little-endian is what decoding without a BOM assumes on this platform too.
        encoding += "_le"
    return encoding


_BOMS = {"utf_16": (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE), "utf_32": (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)}


def _non_utf8_lines(sample: bytes) -> bytes:
    lines = []
    for line in sample.split(b"\n"):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            lines.append(line)
    return b"\n".join(lines)


@functools.lru_cache(maxsize=None)
def _single_byte(encoding: str) -> bool:
    """cp1251, latin_1, mac_greek...: one character per byte (not UTF-16, not the CJK encodings)."""
    return len(bytes(range(256)).decode(encoding, "replace")) == 256


def _decode(data: bytes, encoding: str) -> str | None:
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        return None


LINE_BLOCK = 1 << 20


def _line_ends(data: bytes) -> int:
    """Line ends in `data`: \n, \r\n and a lone \r (as bytes.splitlines counts them)."""
    return data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")


def _iter_lines(stream, cap: int, first_line: int = 1) -> Iterator[tuple[int, bytes | int | None]]:
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
                ends = _line_ends(done)
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


_WIDE_BOMS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def _wide(encoding: str) -> bool:
    return encoding.lower().replace("-", "_").startswith(("utf_16", "utf_32"))


class _BoundedLines:
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


class _Reencoder(io.RawIOBase):
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
