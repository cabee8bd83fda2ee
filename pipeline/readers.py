"""Readers: files, folders, globs and s3:// URIs to batches of raw rows, streaming.

A raw row is `RawRow(line, value, error)`: `line` is the 1-based line number for line-based files
(.jsonl, .txt) and the 1-based row / array position otherwise; `value` is a dict (structured files)
or a str (plain text); `error` is a reason code when the row could not be parsed (value is None).
A file that cannot be read at all raises UnreadableInput before any row of it is yielded.
"""
from __future__ import annotations

import codecs
import csv
import fnmatch
import functools
import glob
import gzip
import hashlib
import io
import json
import os
import stat
import zlib
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO, Iterator, NamedTuple

import charset_normalizer

from .config import PrepareConfig, ReadConfig

COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd"}
FORMATS = {
    ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv", ".tsv": "tsv",
    ".parquet": "parquet", ".txt": "txt", ".text": "txt",
}
SNIFF_BYTES = 1 << 20
COMMON_LEGACY_ENCODINGS = ("cp1251", "cp1254", "cp1252", "koi8_r", "iso8859_9", "cp866", "utf_16", "latin_1")


class UnreadableInput(Exception):
    """A whole input cannot be read. str() is one line naming the file and the reason."""

    def __init__(self, uri: str, reason: str):
        super().__init__(f"{uri}: {reason}")
        self.uri, self.reason = uri, reason


class RawRow(NamedTuple):
    line: int
    value: dict | str | None
    error: str | None = None
    count: int = 1  # rows this stands for: a run of empty lines is one RawRow(first line, None, "empty_line", n)


@dataclass(frozen=True)
class InputFile:
    uri: str          # local path or s3://bucket/key
    name: str         # shown in reports and record sources: path relative to the input root it came from
    file_format: str  # jsonl | json | csv | tsv | parquet | txt
    compression: str | None
    start: int = 0            # a byte range of a large line-based file, so one file can be several shards
    end: int | None = None
    first_line: int = 1
    # Why the input was found but must not be read (a FIFO, a symlink out of the input root, a folder that
    # cannot be listed): FileReader raises UnreadableInput with it, so the runner's usual check stops the
    # run before any output, or records it under skip_unreadable, instead of losing it silently.
    problem: str | None = None
    redacted: bool = False    # `name` is a label: the real name held personal data (see redact_names)

    @property
    def is_s3(self) -> bool:
        return self.uri.startswith("s3://")

    @property
    def shown(self) -> str:
        """The file in messages and the report: its path, or its label when the name holds personal data."""
        return self.name if self.redacted else self.uri

    @property
    def splittable(self) -> bool:
        return (not self.is_s3 and self.compression is None and self.file_format in ("jsonl", "txt")
                and self.problem is None)


def split_ranges(f: InputFile, chunk_bytes: int) -> list[InputFile]:
    """Cut a large uncompressed line-based file at line ends into ranges of about chunk_bytes, each
    knowing its first line number (one pass counting newlines, no parsing)."""
    size = os.path.getsize(f.uri)
    if size <= chunk_bytes:
        return [f]
    bounds = [0]
    with open(f.uri, "rb") as fh:
        while bounds[-1] + chunk_bytes < size:
            fh.seek(bounds[-1] + chunk_bytes)
            # to the next line end in 1 MB steps: a plain readline() held a whole line in memory, and a
            # file with no newline at all is one line (fuzzing: 400 MB of NULs took 800 MB)
            while (part := fh.readline(1 << 20)) and not part.endswith(b"\n"):
                pass
            if fh.tell() >= size:
                break
            bounds.append(fh.tell())
        bounds.append(size)
        ranges, line = [], 1
        for start, end in zip(bounds, bounds[1:]):
            ranges.append(replace(f, start=start, end=end, first_line=line))
            fh.seek(start)
            remaining, cr = end - start, False
            while remaining:
                block = fh.read(min(remaining, 1 << 24))
                # line ends as the reader counts them (a lone \r too); a \r\n across two blocks is one
                line += _line_ends(block) - (cr and block[:1] == b"\n")
                cr = block.endswith(b"\r")
                remaining -= len(block)
    return ranges


def describe(uri: str, name: str | None = None) -> InputFile:
    path = uri.lower()
    compression = None
    for ext, kind in COMPRESSIONS.items():
        if path.endswith(ext):
            compression, path = kind, path[: -len(ext)]
            break
    file_format = FORMATS.get(os.path.splitext(path)[1])
    if file_format is None:
        raise UnreadableInput(uri, f"unknown format (extension); known: {', '.join(sorted(FORMATS))}")
    return InputFile(uri=uri, name=_printable_name(name or os.path.basename(uri)), file_format=file_format,
                     compression=compression)


def _printable_name(name: str) -> str:
    """A file name that is not UTF-8 (os.fsdecode turns its bytes into lone surrogates) as text that can
    be written, e.g. "bad\\xff.jsonl": the raw name reached the report, the quarantine file and Parquet
    and failed the run with UnicodeEncodeError (fuzzing). The uri keeps the real path."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        try:
            raw = name.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raw = name.encode("utf-8", "surrogatepass")
        return raw.decode("utf-8", "backslashreplace")


def _is_data_file(path: str) -> bool:
    p = path.lower()
    for ext in COMPRESSIONS:
        if p.endswith(ext):
            p = p[: -len(ext)]
            break
    return os.path.splitext(p)[1] in FORMATS


def _problem(path: str, name: str, reason: str) -> InputFile:
    """An input that was found but is not read: FileReader raises UnreadableInput(reason) for it."""
    try:
        f = describe(path, name)
    except UnreadableInput:
        f = InputFile(uri=path, name=_printable_name(name), file_format="unknown", compression=None)
    return replace(f, problem=reason)


def _inside(path: str, root_real: str) -> bool:
    return path == root_real or path.startswith(root_real.rstrip(os.sep) + os.sep)


def _walk(root: str, follow_symlinks: bool) -> Iterator[tuple[str, list[str], str | None]]:
    """(path, path parts below root, problem or None) for each data file under `root`, sorted, without
    recursion. Never blocks and never loops: a folder already visited (a symlink loop, or a second link to
    the same folder) is not entered again; FIFOs, sockets and devices are not opened; a symlink whose
    target is outside `root` is not followed unless `follow_symlinks`; a sub-folder that cannot be listed
    is reported, not skipped silently."""
    root_real = os.path.realpath(root)
    try:
        st = os.stat(root)
    except OSError:
        return
    visited = {(st.st_dev, st.st_ino)}
    stack: list[tuple[str, list[str]]] = [(root, [])]
    while stack:
        folder, parts = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            yield folder, parts, f"cannot list this folder ({exc.strerror or type(exc).__name__})"
            continue
        subfolders = []
        for entry in entries:
            path, rel = entry.path, parts + [entry.name]
            try:
                is_link = entry.is_symlink()
                if is_link:
                    target = os.path.realpath(path)
                    if not os.path.exists(target):
                        if _is_data_file(entry.name):
                            yield path, rel, "broken symlink"
                        continue
                    if not follow_symlinks and not _inside(target, root_real):
                        if _is_data_file(entry.name) or os.path.isdir(target):
                            yield path, rel, ("symlink to outside the input folder, not followed "
                                              "(--follow-symlinks reads it)")
                        continue
                st = os.stat(path)  # follows a link that may be followed
            except OSError as exc:
                if _is_data_file(entry.name):
                    yield path, rel, exc.strerror or type(exc).__name__
                continue
            if stat.S_ISDIR(st.st_mode):
                if (st.st_dev, st.st_ino) not in visited:
                    visited.add((st.st_dev, st.st_ino))
                    subfolders.append((path, rel))
            elif entry.name.startswith(".") or not _is_data_file(entry.name):
                continue
            elif stat.S_ISREG(st.st_mode):
                yield path, rel, None
            else:
                yield path, rel, f"not a regular file ({_file_kind(st.st_mode)})"
        stack.extend(reversed(subfolders))


def _file_kind(mode: int) -> str:
    for test, kind in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device")):
        if test(mode):
            return kind
    return "special file"


def _match_parts(parts: list[str], patterns: list[str]) -> bool:
    """Glob matching by path parts, `**` matching any number of parts (iterative; no regex per pattern)."""
    states = {0}
    for part in parts:
        nxt = set()
        for i in states:
            while i < len(patterns) and patterns[i] == "**":
                nxt.add(i)  # ** eats this part and may eat more
                i += 1
            if i < len(patterns) and patterns[i] != "**" and fnmatch.fnmatchcase(part, patterns[i]):
                nxt.add(i + 1)
        states = nxt
        if not states:
            return False
    for i in states:
        while i < len(patterns) and patterns[i] == "**":
            i += 1
        if i == len(patterns):
            return True
    return False


def _glob_base(pattern: str) -> tuple[str, list[str]]:
    """The folder before the first wildcard part, and the pattern parts after it."""
    parts = pattern.split(os.sep)
    base = []
    for i, part in enumerate(parts):
        if glob.has_magic(part):
            return (os.sep.join(base) or ("." if not pattern.startswith(os.sep) else os.sep)), parts[i:]
        base.append(part)
    return pattern, []


def expand_inputs(inputs: list[str], cfg: PrepareConfig | None = None) -> list[InputFile]:
    """Files, folders (recursive), globs and s3:// URIs (prefixes and globs) to a sorted, de-duplicated
    list. Inputs that are found but must not be read come back with `problem` set (see _walk). With a
    config whose PII step is on, file names that hold personal data are replaced by labels (redact_names)."""
    read = cfg.read if cfg is not None else ReadConfig()
    found: dict[str, InputFile] = {}
    redacting = cfg is not None and cfg.pii.enabled
    if redacting:
        redact_items(inputs, cfg)
    shown = NameMap.of(cfg.out).shown if redacting else (lambda item: item)

    def add_folder(folder: str, prefix: str, keep=None) -> None:
        for path, rel, problem in _walk(folder, read.follow_symlinks):
            if keep is not None and not keep(rel):
                continue
            name = "/".join([prefix, *rel]) if prefix else "/".join(rel)
            found.setdefault(path, _problem(path, name, problem) if problem else describe(path, name))

    for item in inputs:
        if item.startswith("s3://"):
            from .s3 import list_objects

            for uri in list_objects(item):
                if _is_data_file(uri):
                    found.setdefault(uri, describe(uri, uri[5:]))
            continue
        if glob.has_magic(item) and "**" in item.split(os.sep):
            # glob.glob's "**" follows symlinks into loops (a link to a parent folder: it never ended)
            base, patterns = _glob_base(item)
            if not os.path.isdir(base):
                raise UnreadableInput(shown(item), "no file matches this pattern")
            before = len(found)
            # a file matches, or sits below a folder that matches (as glob's folders are then walked)
            add_folder(base, "", lambda rel: any(_match_parts(rel[:n], patterns) for n in range(1, len(rel) + 1)))
            if len(found) == before:
                raise UnreadableInput(shown(item), "no file matches this pattern")
            continue
        matches = sorted(glob.glob(item)) if glob.has_magic(item) else [item]
        if not matches:
            raise UnreadableInput(shown(item), "no file matches this pattern")
        root_real = os.path.realpath(_glob_base(item)[0]) if glob.has_magic(item) else None
        for match in matches:
            if os.path.isdir(match):
                add_folder(match, Path(match).name)  # names relative to the folder's parent: "d/sub/a.jsonl"
            elif os.path.lexists(match):
                name = os.path.basename(match)
                if (root_real is not None and os.path.islink(match) and not read.follow_symlinks
                        and not _inside(os.path.realpath(match), root_real)):
                    found.setdefault(match, _problem(match, name, "symlink to outside the input folder, not "
                                                                  "followed (--follow-symlinks reads it)"))
                    continue
                try:
                    st = os.stat(match)
                except OSError as exc:
                    found.setdefault(match, _problem(match, name, exc.strerror or type(exc).__name__))
                    continue
                if not stat.S_ISREG(st.st_mode):  # a FIFO would block the run forever on open()
                    found.setdefault(match, _problem(match, name, f"not a regular file ({_file_kind(st.st_mode)})"))
                else:
                    found.setdefault(match, describe(match, name))
            else:
                raise UnreadableInput(shown(match), "no such file or folder")
    files = list(found.values())
    if redacting:
        files = redact_names(files, cfg)
        names = NameMap.of(cfg.out)
        for f in files:  # a file named on its own: the item is its path, the name its base name
            if f.redacted and f.uri in inputs:
                names.label(f.uri)
    return files


class _Window(io.RawIOBase):
    """The bytes [start, end) of an open file, as a stream."""

    def __init__(self, fh, length: int):
        self.fh, self.left = fh, length

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.fh.read(min(len(buffer), self.left))
        buffer[: len(data)] = data
        self.left -= len(data)
        return len(data)

    def close(self) -> None:
        self.fh.close()
        super().close()


class _CappedReader(io.RawIOBase):
    """Stops after `cap` decompressed bytes and remembers that it did, so the rest is reported as unread.
    A compressed stream that ends early or breaks after some data (a cut download: gzip's EOFError, a
    zstd frame without its end) ends the file here with `truncated` set: the rows before it are counted
    and the report says the file is incomplete, instead of the run failing (gzip) or the cut being
    taken for the file's end (zstd)."""

    def __init__(self, raw: BinaryIO, cap: int, frames: "_ZstdFrames | None" = None):
        self.raw, self.cap, self.read_bytes, self.capped = raw, cap, 0, False
        self.frames, self.truncated = frames, False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.truncated:
            return 0
        room = self.cap - self.read_bytes
        try:
            if room <= 0:
                self.capped = self.capped or bool(self.raw.read(1))
                return 0
            view = memoryview(buffer)[: min(len(buffer), room)]
            # read1: one decoder step; read() keeps reading to fill the request, and a stream cut inside
            # that request raised with the data before the cut still unreturned (a small cut .gz was
            # "not a valid archive")
            data = self.raw.read1(len(view)) if hasattr(self.raw, "read1") else self.raw.read(len(view))
        except Exception as exc:
            # only a decoder's own errors; a failing disk or connection still fails the read
            if not self.read_bytes or not _decoder_error(exc):
                raise  # nothing decoded yet: not an archive at all (open_binary says so)
            self.truncated = True
            return 0
        n = len(data)
        if not n and self.frames is not None and not self.frames.complete:
            self.truncated = True
        view[:n] = data
        self.read_bytes += n
        return n


def _decoder_error(exc: Exception) -> bool:
    return (isinstance(exc, (EOFError, gzip.BadGzipFile, zlib.error))
            or type(exc).__module__.split(".")[0] == "zstandard")


class _ZstdFrames(io.RawIOBase):
    """The compressed bytes of a .zst file, passed through while following its frame structure (frame
    headers, block headers, checksums; RFC 8878), so that at the end it knows whether the last frame was
    complete. zstandard's stream reader returns a cut stream's data and then b"" as if the file had ended
    (fuzzing: 123,618 of 300,000 records read, nothing reported)."""

    _MAGIC, _SKIP_LOW = 0xFD2FB528, 0x184D2A50

    def __init__(self, raw: BinaryIO):
        self.raw = raw
        self.head = bytearray()  # bytes of the header being parsed
        self.need = 4            # header bytes wanted next (0: skipping `skip` payload bytes)
        self.state = "magic"
        self.skip = 0
        self.checksum = False
        self.ended = False

    def readable(self) -> bool:
        return True

    @property
    def complete(self) -> bool:
        return self.state == "magic" and not self.head and not self.skip

    def readinto(self, buffer) -> int:
        data = self.raw.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        self._follow(memoryview(data))
        return n

    def _follow(self, data: memoryview) -> None:
        i, n = 0, len(data)
        while i < n:
            if self.skip:
                step = min(self.skip, n - i)
                self.skip -= step
                i += step
                continue
            take = min(self.need - len(self.head), n - i)
            self.head += data[i:i + take]
            i += take
            if len(self.head) < self.need:
                return
            self._advance(bytes(self.head))

    def _advance(self, head: bytes) -> None:
        state, self.head = self.state, bytearray()
        if state == "magic":
            magic = int.from_bytes(head, "little")
            if magic == self._MAGIC:
                self.state, self.need = "descriptor", 1
            elif magic & 0xFFFFFFF0 == self._SKIP_LOW:
                self.state, self.need = "skip_size", 4
            else:  # not a frame: the decompressor raises on it; stop following
                self.state, self.need = "lost", 1 << 62
        elif state == "skip_size":
            self.skip, self.state, self.need = int.from_bytes(head, "little"), "magic", 4
        elif state == "descriptor":
            d = head[0]
            fcs_flag, single, self.checksum, dict_flag = d >> 6, (d >> 5) & 1, bool((d >> 2) & 1), d & 3
            size = (0 if single else 1) + (0, 1, 2, 4)[dict_flag] + ((1 if single else 0), 2, 4, 8)[fcs_flag]
            if size:
                self.state, self.need = "header_rest", size
            else:
                self.state, self.need = "block", 3
        elif state == "header_rest":
            self.state, self.need = "block", 3
        elif state == "block":
            h = int.from_bytes(head, "little")
            last, kind, size = h & 1, (h >> 1) & 3, h >> 3
            self.skip = 1 if kind == 1 else size  # an RLE block is one byte on disk
            if last:
                self.state, self.need = ("checksum", 4) if self.checksum else ("magic", 4)
            else:
                self.state, self.need = "block", 3
        elif state == "checksum":
            self.state, self.need = "magic", 4


def _open_raw(f: InputFile) -> BinaryIO:
    try:
        if f.is_s3:
            from .s3 import open_object

            return open_object(f.uri)
        fh = open(f.uri, "rb")
        if f.start or f.end is not None:
            fh.seek(f.start)
            return _Window(fh, (f.end if f.end is not None else os.path.getsize(f.uri)) - f.start)
        return fh
    except PermissionError:
        raise UnreadableInput(f.shown, "permission denied") from None
    except FileNotFoundError:
        raise UnreadableInput(f.shown, "no such file") from None
    except OSError as exc:
        raise UnreadableInput(f.shown, exc.strerror or type(exc).__name__) from None


def open_binary(f: InputFile, cfg: ReadConfig) -> _CappedReader:
    """Decompressed, size-capped binary stream. Checks the archive is valid before returning."""
    raw = _open_raw(f)
    frames = None
    if f.compression == "gzip":
        stream = gzip.GzipFile(fileobj=raw)
    elif f.compression == "zstd":
        import zstandard

        frames = _ZstdFrames(raw)
        stream = zstandard.ZstdDecompressor().stream_reader(frames, read_across_frames=True)
    else:
        stream = raw
    capped = _CappedReader(stream, cfg.max_decompressed_bytes, frames)
    buffered = io.BufferedReader(capped, buffer_size=1 << 20)
    try:
        buffered.peek(1)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise UnreadableInput(f.shown, f"not a valid {f.compression} archive ({type(exc).__name__})") from None
    except Exception as exc:  # zstandard.ZstdError and friends
        raise UnreadableInput(f.shown, f"not a valid {f.compression} archive ({type(exc).__name__})") from None
    if capped.truncated and not capped.read_bytes:  # a zstd frame cut before any data came out
        raise UnreadableInput(f.shown, f"not a valid {f.compression} archive (truncated)")
    buffered.capped_reader = capped  # type: ignore[attr-defined]
    return buffered  # type: ignore[return-value]


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
    # The lines that are not UTF-8 first: in a file of mixed lines the UTF-8 ones made charset-normalizer
    # guess wrong (fuzzing: cp1251 lines with some UTF-8 lines were decoded as mac_greek, all mojibake).
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
        # incremental decoders (CSV, JSON) raise UnicodeError, which crashed the run (fuzzing: a BOM after
        # a CSV header). Little-endian is what decoding without a BOM assumes on this platform too.
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


class FileReader:
    """Reads one input file as batches of RawRow. After iteration, `encoding`, `warnings`, `unread`
    (True when the decompressed-size cap stopped the read) and `truncated` (True when a compressed stream
    ended early or broke: the rows before it were read and counted) describe what happened.

    A batch ends at `batch_size` rows or after about `batch_bytes` of input, whichever comes first: every
    later step holds a batch at a time, so memory follows record size times rows (100 records of 7 MB in
    one batch of 2,000 rows took 24 GB)."""

    def __init__(self, f: InputFile, cfg: ReadConfig):
        if f.problem:
            raise UnreadableInput(f.shown, f.problem)
        self.f, self.cfg = f, cfg
        self.encoding = "utf-8"
        self.warnings: list[str] = []
        self.unread = False
        self.truncated = False
        self._row_bytes = 0  # parquet: the mean uncompressed size of a row, for the byte cap
        self._stream = open_binary(f, cfg) if f.file_format != "parquet" else None
        self._capped = self._stream.capped_reader if self._stream is not None else None
        if f.file_format == "parquet":
            self._parquet = self._open_parquet()
        # A whole-file problem found at the start of a JSON or CSV file (neither an array nor an object,
        # a bad CSV header) is raised here, not once batches() runs: the runner's check_readable only
        # constructs readers, so skip_unreadable could not skip such a file and the run failed (fuzzing).
        elif f.file_format == "json":
            self._json_source = self._open_json()
        elif f.file_format in ("csv", "tsv"):
            self._csv = self._open_csv("," if f.file_format == "csv" else "\t")

    def _open_parquet(self):
        import pyarrow.parquet as pq

        try:
            # Row group by row group: pyarrow's pre_buffer (on by default) fetches the column chunks of
            # every row group iter_batches will read, that is the whole file, up front; on S3 by range
            # requests, where the object was read whole (247 MB object -> 739 MB RSS).
            if self.f.is_s3:
                self._s3_source = _S3RangeFile(self.f.uri)
                pf = pq.ParquetFile(self._s3_source, pre_buffer=False)
            else:
                pf = pq.ParquetFile(self.f.uri, pre_buffer=False)
        except PermissionError:
            raise UnreadableInput(self.f.shown, "permission denied") from None
        except _S3ReadError as exc:  # a missing object or bucket is not "not a valid Parquet file"
            raise UnreadableInput(self.f.shown, str(exc)) from None
        except Exception as exc:
            raise UnreadableInput(self.f.shown, f"not a valid Parquet file ({type(exc).__name__})") from None
        self._row_bytes = _parquet_row_bytes(pf)
        return pf

    def _consumed(self) -> int:
        """Input bytes read so far (decompressed; ahead of the rows by at most the 1 MiB read buffer)."""
        return self._capped.read_bytes if self._capped is not None else self._parquet_bytes

    def batches(self) -> Iterator[list[RawRow]]:
        rows = getattr(self, f"_rows_{self.f.file_format}")()
        self._parquet_bytes = 0
        batch: list[RawRow] = []
        start = self._consumed()
        for row in rows:
            batch.append(row)
            if len(batch) >= self.cfg.batch_size or self._consumed() - start >= self.cfg.batch_bytes:
                yield batch
                batch = []
                start = self._consumed()
        if batch:
            yield batch
        if self._stream is not None:
            self.unread = self._capped.capped
            self.truncated = self._capped.truncated
            if self.truncated:
                self.warnings.append(f"the {self.f.compression} stream ends early (truncated or corrupt); "
                                     "the rows before the cut were read")
            self._stream.close()

    def _checked(self, row: RawRow) -> RawRow:
        """One depth limit for every step after reading: a record nested deeper is quarantined here."""
        if row.value is not None and not isinstance(row.value, str) and too_deep(row.value, self.cfg.max_depth):
            return RawRow(row.line, None, "too_deep")
        return row

    # --- per format -------------------------------------------------------------------------------
    def _sniff_encoding(self) -> None:
        sample = self._stream.peek(SNIFF_BYTES)[:SNIFF_BYTES]
        self.encoding = detect_encoding(sample)
        if self.encoding not in ("utf-8", "utf-8-sig"):
            self.warnings.append(f"not UTF-8; decoded as {self.encoding} (detected)")
        self._wide = _wide(self.encoding) and sample.startswith(_WIDE_BOMS)
        if self._wide:
            # A UTF-16/32 file (it starts with the BOM): a byte-wise line split cuts its characters ("\n" is
            # b"\n\0"), so every line came out undecodable (a UTF-16 .jsonl with a BOM gave 0 records).
            # Re-encoded as UTF-8, it is read as UTF-8. (A guess of UTF-16 without a BOM is kept line-wise.)
            self._stream = io.BufferedReader(_Reencoder(self._stream, self.encoding), buffer_size=1 << 20)
            self._decode_as = "utf-8"
        else:
            self._decode_as = self.encoding

    def _text_lines(self) -> Iterator[tuple[int, str | None, str | None]]:
        self._sniff_encoding()
        encoding = self._decode_as
        for number, data in _iter_lines(self._stream, self.cfg.max_record_bytes, self.f.first_line):
            if data is None:
                yield number, None, "too_large"
                continue
            if isinstance(data, int):  # a run of `data` empty lines
                yield number, data, "empty_line"
                continue
            if number == 1 and data.startswith(b"\xef\xbb\xbf"):
                data = data[3:]
            text = None
            if encoding not in ("utf-8", "utf-8-sig") and _single_byte(encoding):
                # A line that is valid UTF-8 is UTF-8, even in a file detected as legacy: in a file of
                # mixed lines (fuzzing: cp1251 and UTF-8) those lines came out as mojibake ("РџСЂРёРІРµС‚").
                # Legacy text with letters beyond ASCII is practically never valid UTF-8.
                text = _decode(data, "utf-8")
            if text is None:
                text = _decode(data, encoding)
            yield (number, None, "undecodable") if text is None else (number, text, None)

    def _content_lines(self) -> Iterator[RawRow]:
        """One RawRow per line: its text, or the reason it has none (undecodable, too_large, empty_line)."""
        for number, text, error in self._text_lines():
            if error == "empty_line":
                yield RawRow(number, None, error, text)  # text: how many lines
            elif error:
                yield RawRow(number, None, error)
            elif not text.strip():
                yield RawRow(number, None, "empty_line")
            else:
                yield RawRow(number, text)

    def _rows_jsonl(self) -> Iterator[RawRow]:
        limit = self.cfg.max_depth
        for row in self._content_lines():
            yield row if row.error else _parse_json_row(row.line, row.value, limit)

    def _rows_txt(self) -> Iterator[RawRow]:
        if self.cfg.txt_mode == "line":
            yield from self._content_lines()
            return
        block: list[str] = []
        start = size = 0
        oversized = False  # the rest of a block already counted as too_large is skipped, not made a record
        for number, text, error in self._text_lines():
            if error and error != "empty_line":
                yield RawRow(number, None, error)
                continue
            if not error and text.strip():
                if oversized:
                    continue
                if not block:
                    start, size = number, 0
                block.append(text)
                size += len(text)  # a running total: sum(map(len, block)) per line was quadratic (fuzzing)
                if size > self.cfg.max_record_bytes:
                    yield RawRow(start, None, "too_large")
                    block, oversized = [], True
            else:
                oversized = False
                if block:
                    yield RawRow(start, "\n".join(block))
                    block = []
        if block:
            yield RawRow(start, "\n".join(block))

    def _open_csv(self, delimiter: str) -> tuple | None:
        """(csv reader, line source, header), or None for an empty file."""
        self._sniff_encoding()
        text = io.TextIOWrapper(self._stream, encoding=self._decode_as, errors="replace", newline="")
        csv.field_size_limit(self.cfg.max_record_bytes)
        # csv.reader pulls whole physical lines: one with no line end (fuzzing: a gzip of zeros) was held
        # whole in memory. _BoundedLines skips an over-long line and raises csv.Error for it instead.
        lines = _BoundedLines(text, self.cfg.max_record_bytes)
        reader = csv.reader(lines, delimiter=delimiter)
        try:
            header = next(reader)
        except StopIteration:
            return None
        except csv.Error as exc:
            raise UnreadableInput(self.f.shown, f"bad CSV header ({exc})") from None
        return reader, lines, self._unique_columns([h.strip() for h in header])

    def _unique_columns(self, names: list[str]) -> list[str]:
        """Column names made unique: a dict of a row kept only the last of two columns of the same name,
        the other was lost without a word (CSV header, Parquet schema). The first keeps its name, later ones
        get ".1", ".2", ... (pandas' rule) and stay in the record (meta); the file's warnings say so."""
        unique, reserved, taken, renamed = [], set(names), set(), 0
        for name in names:
            new, n = name, 0
            while new in taken or (new != name and new in reserved):  # a column may already be "a.1"
                n += 1
                new = f"{name}.{n}"
            renamed += new != name
            taken.add(new)
            unique.append(new)
        if renamed:
            # the count only: column names can be personal data, and warnings are not scanned
            self.warnings.append(f"{renamed} column(s) with a name already used in the file kept, renamed "
                                 "with a .1, .2, ... suffix")
        return unique

    def _rows_csv(self) -> Iterator[RawRow]:
        if self._csv is None:
            return
        reader, lines, header = self._csv
        position = 0
        while True:
            position += 1
            lines.start_row()
            try:
                cells = next(reader)
                error = None if len(cells) == len(header) else "bad_csv_row"
            except StopIteration:
                return
            except csv.Error:
                cells, error = None, "too_large"
            taken = lines.row_lines
            if len(taken) > 1 and (error or sum(line.count('"') for line in taken) % 2):
                # An unbalanced quote took the lines after it into one field, up to the next quote or the
                # end of the file (an odd number of quotes: 1,000 rows became one bad_csv_row): only the
                # line with the quote is bad; the lines after it are read again as rows of their own.
                lines.push_back(taken[1:])
                error = error or "bad_csv_row"
            yield RawRow(position, None, error) if error else RawRow(position, dict(zip(header, cells)))

    def _rows_tsv(self) -> Iterator[RawRow]:
        return self._rows_csv()

    def _rows_parquet(self) -> Iterator[RawRow]:
        position = 0
        deep = _arrow_depth(self._parquet.schema_arrow) > self.cfg.max_depth  # else no row can be too deep
        rows = max(1, min(self.cfg.batch_size, self.cfg.batch_bytes // max(self._row_bytes, 1)))
        names = self._parquet.schema_arrow.names
        unique = self._unique_columns(names)
        for record_batch in self._parquet.iter_batches(batch_size=rows):
            if unique != names:
                record_batch = record_batch.rename_columns(unique)
            row_bytes = record_batch.nbytes // max(record_batch.num_rows, 1)
            for row in record_batch.to_pylist():
                position += 1
                self._parquet_bytes += row_bytes
                yield self._checked(RawRow(position, row)) if deep else RawRow(position, row)

    def _open_json(self) -> BinaryIO:
        self._sniff_encoding()
        source: BinaryIO = self._stream
        if self._decode_as not in ("utf-8", "utf-8-sig"):  # ijson wants UTF-8 bytes
            source = io.BufferedReader(_Reencoder(self._stream, self.encoding))
        if source.peek(3)[:3] == codecs.BOM_UTF8:
            source.read(3)  # ijson fails on a BOM: a UTF-8-BOM .json gave 0 records
        if source.peek(64).lstrip(b" \t\r\n")[:1] not in (b"[", b"{"):
            raise UnreadableInput(self.f.shown, "JSON file is neither an array nor an object")
        return source

    def _rows_json(self) -> Iterator[RawRow]:
        """A JSON array of records, or an object whose values are arrays of records (e.g. {"train": [...]})."""
        import ijson

        position = 0
        try:
            items = _json_items(self._json_source, self.cfg.max_record_bytes, self.cfg.max_depth)
            for position, (item, error) in enumerate(items, 1):
                yield RawRow(position, None, error) if error else _row_from_value(position, item)
        except (ijson.JSONError, ValueError):
            # ValueError: the C backend raises UnicodeDecodeError for a lone low-surrogate escape ("\\udc00"),
            # which crashed the run (fuzzing); it cannot go on after it, so it ends the file like bad JSON
            self.warnings.append("invalid JSON after the last readable record; the rest of the file is unread")
            yield RawRow(position + 1, None, "invalid_json_tail")


_WIDE_BOMS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def _wide(encoding: str) -> bool:
    return encoding.lower().replace("-", "_").startswith(("utf_16", "utf_32"))


def too_deep(value, limit: int) -> bool:
    """Whether arrays/objects nest deeper than `limit` (the value itself is level 1), without recursion:
    one record nested 520-990 deep stopped the whole run with RecursionError in the PII step's walk."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        for child in (node.values() if isinstance(node, dict) else node):
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False


def _arrow_depth(schema) -> int:
    """The deepest nesting of lists/structs/maps a Parquet schema allows (a row is level 1)."""
    import pyarrow as pa

    deepest, stack = 1, [(field.type, 1) for field in schema]
    while stack:
        t, depth = stack.pop()
        deepest = max(deepest, depth)
        if pa.types.is_struct(t):
            stack += [(t.field(i).type, depth + 1) for i in range(t.num_fields)]
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            stack.append((t.value_type, depth + 1))
        elif pa.types.is_map(t):
            stack += [(t.key_type, depth + 1), (t.item_type, depth + 1)]
    return deepest


def _parquet_row_bytes(pf) -> int:
    """About the in-memory size of one row of a Parquet file: the larger of the row groups' mean
    uncompressed row and the decoded size of a few first rows (a dictionary-encoded column of repeated
    long texts is small in the file and large once read: 50 rows of 200 KB read as 4 KB a row)."""
    meta = pf.metadata
    sizes = [meta.row_group(i).total_byte_size / meta.row_group(i).num_rows
             for i in range(meta.num_row_groups) if meta.row_group(i).num_rows]
    if sizes:
        sample = next(pf.iter_batches(batch_size=16, row_groups=[0]), None)
        if sample is not None and sample.num_rows:
            sizes.append(sample.nbytes / sample.num_rows)
    return int(max(sizes, default=0))


def parquet_batch_rows(pf, cfg: ReadConfig) -> int:
    """Rows per iter_batches() batch of a Parquet file so a batch holds about cfg.batch_bytes at most:
    the runner reads work/*.parquet back with it, the same byte cap as the readers."""
    return max(1, min(cfg.batch_size, cfg.batch_bytes // max(_parquet_row_bytes(pf), 1)))


def _s3_cause(exc: Exception) -> str:
    code = getattr(exc, "response", {}).get("Error", {}).get("Code") if hasattr(exc, "response") else None
    return f"{type(exc).__name__} {code}" if code else type(exc).__name__


class _S3ReadError(OSError):
    """An S3 request for an input failed; str() names the cause's type (no URI: it may be a redacted name)."""


class _S3RangeFile(io.RawIOBase):
    """An S3 object as a seekable file, read by HTTP range requests: pyarrow then fetches the footer and
    one row group's column chunks at a time (a 247 MB object read whole took 739 MB)."""

    def __init__(self, uri: str):
        from .s3 import client, parse_uri

        self.uri = uri
        self.bucket, self.key = parse_uri(uri)
        self.s3 = client()
        try:
            self.size = self.s3.head_object(Bucket=self.bucket, Key=self.key)["ContentLength"]
        except Exception as exc:
            raise _S3ReadError(f"cannot read the object ({_s3_cause(exc)})") from None
        self.pos = 0
        self.fetched = 0  # bytes transferred, for tests and benchmarks

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = {0: 0, 1: self.pos, 2: self.size}[whence] + offset
        return self.pos

    def readinto(self, buffer) -> int:
        n = min(len(buffer), self.size - self.pos)
        if n <= 0:
            return 0
        try:
            body = self.s3.get_object(Bucket=self.bucket, Key=self.key,
                                      Range=f"bytes={self.pos}-{self.pos + n - 1}")["Body"].read()
        except Exception as exc:
            raise _S3ReadError(f"cannot read the object ({_s3_cause(exc)})") from None
        buffer[:len(body)] = body
        self.pos += len(body)
        self.fetched += len(body)
        return len(body)


_CONTAINER_START = ("start_map", "start_array")
_CONTAINER_END = ("end_map", "end_array")


def _json_items(source, max_bytes: int, max_depth: int = 1 << 30) -> Iterator[tuple[object, str | None]]:
    """(value, None) or (None, "too_large") for each record of a JSON file, streaming: the items of a
    top-level array; for a top-level object ({"train": [...], "test": [...]}), the items of each array
    value and each object value (counted as a row, so a file that is not a dataset is quarantined row by
    row, not silently skipped). Records are built from ijson.basic_parse events, so memory holds one
    record at a time, and a record over about max_bytes is dropped while it is built.

    Not ijson.items / ijson.parse: they compute a prefix string per event that grows with depth, so
    100,000 nested brackets (200 KB of input) took quadratic memory and the process was killed (fuzzing).
    A record nested deeper than max_depth is dropped the same way, as too_deep."""
    import ijson
    from ijson.common import ObjectBuilder

    outer: list[str] = []  # the containers around the current position, outside any record (at most 2)
    depth = size = 0       # inside a record: its nesting depth and its size so far (about its JSON bytes)
    builder: ObjectBuilder | None = None
    reason = None          # why the record being skipped is dropped
    for event, value in ijson.basic_parse(source, use_float=True):
        if depth:  # inside a record: build it, or skip the rest of one over a cap
            depth += (event in _CONTAINER_START) - (event in _CONTAINER_END)
            if builder is not None:
                size += _event_bytes(event, value)
                if size > max_bytes or depth > max_depth:
                    builder, reason = None, "too_large" if size > max_bytes else "too_deep"
                else:
                    builder.event(event, value)
            if not depth:
                yield (builder.value, None) if builder is not None else (None, reason)
                builder = None
            continue
        if event in _CONTAINER_END:
            outer.pop()
        elif event != "map_key" and (outer == ["array"] or outer == ["map", "array"]
                                     or outer == ["map"] and event == "start_map"):
            if event in _CONTAINER_START:  # a record starts
                builder, depth, size = ObjectBuilder(), 1, 2
                builder.event(event, value)
            else:  # a scalar record (quarantined as not_an_object unless it is a string)
                yield (value, None) if _event_bytes(event, value) <= max_bytes else (None, "too_large")
        elif event in _CONTAINER_START:
            outer.append("map" if event == "start_map" else "array")


def _event_bytes(event: str, value) -> int:
    return len(value) + 3 if event in ("string", "map_key") else 8


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


def _parse_json_row(number: int, text: str, max_depth: int | None = None) -> RawRow:
    try:
        value = json.loads(text)
    except RecursionError:  # thousands of levels: deeper than any limit
        return RawRow(number, None, "too_deep")
    except ValueError:
        return RawRow(number, None, "invalid_json")
    # a line with fewer brackets than the limit cannot nest deeper: most lines skip the walk
    if (max_depth is not None and isinstance(value, (dict, list))
            and text.count("[") + text.count("{") > max_depth and too_deep(value, max_depth)):
        return RawRow(number, None, "too_deep")
    return _row_from_value(number, value)


def _row_from_value(number: int, value) -> RawRow:
    if isinstance(value, dict):
        return RawRow(number, value)
    if isinstance(value, str):
        return RawRow(number, {"text": value})
    if isinstance(value, list) and value and all(isinstance(m, dict) for m in value):
        return RawRow(number, {"messages": value})
    return RawRow(number, None, "not_an_object")


# --- file names are data: a name holding personal data is replaced by a label ---------------------

# not a data extension (.json would be): a folder holding the run directory, given as input, must never
# read the map of real names back in as data
NAMES_SUFFIX = ".file-names.local"
TITLE_CASE_SCORE = 0.7
_SEPARATORS = str.maketrans({c: " " for c in "_-./\\+,;=()[]{}"})


def names_file(out: str) -> Path:
    """The local-only map of labels to real names (JSON): beside the run directory (RUN.file-names.local,
    mode 0600), never inside it, so neither the upload nor a copy of the run directory carries it."""
    run = Path(os.path.abspath(out or "."))
    return run.with_name(run.name + NAMES_SUFFIX)


def _compound_ext(name: str) -> str:
    base = os.path.basename(name).lower()
    ext = ""
    for comp in COMPRESSIONS:
        if base.endswith(comp):
            base, ext = base[: -len(comp)], comp
            break
    return os.path.splitext(base)[1] + ext


def name_holds_pii(name: str, cfg: PrepareConfig) -> bool:
    """The PII engine's verdict on a relative file name, read as text: as written, with separators as
    spaces ("musteri_27384619550" is one word otherwise) and capitalized (names in file names are
    usually lower-case)."""
    from .pii.engine import get_detector, resolve

    stem = name[: -len(_compound_ext(name))] if _compound_ext(name) else name
    spaced = " ".join(stem.translate(_SEPARATORS).split())
    languages = tuple(cfg.pii.languages) or ("tr", "ru", "en")
    variants = [(stem, cfg.pii.score_threshold), (spaced, cfg.pii.score_threshold),
                # capitalized, every word looks like a name: one guessed surname scores 0.6 ("Customer Data",
                # "Quarantine Mine"); a first and last name 0.75-0.9 ("Ivan Petrov", "Ahmet Yilmaz")
                (spaced.title(), max(cfg.pii.score_threshold, TITLE_CASE_SCORE))]
    items = [(v, lang) for v, _ in variants for lang in languages]
    thresholds = [t for _, t in variants for _ in languages]
    for hits, threshold in zip(get_detector(languages).detect(items), thresholds):
        kept, _ = resolve(hits, threshold)
        if kept:
            return True
    return False


class NameMap:
    """Labels for names that hold personal data, per run directory: "redacted-<8 hex>.<ext>", a keyed hash
    (blake2b) stable for the run directory; the key and the map from labels back to the real names live only
    in names_file(out), so a resumed run gives the same labels.

    Built while the inputs are expanded, before the run takes the run directory's lock; written (save())
    only once the lock is held: a run refused as busy, or stopped by an unreadable input, leaves the map of
    the run that holds the folder as it is. One instance per map file in a process (of()), so the
    preflight's warnings, the report and the manifest of one run name a file by the same label."""

    _open: dict[Path, NameMap] = {}

    def __init__(self, path: Path):
        self.path = path
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            self.key, self.names = bytes.fromhex(saved["key"]), dict(saved["names"])
        except (OSError, ValueError, KeyError, TypeError):
            self.key, self.names = os.urandom(16), {}
        self.dirty = False

    @classmethod
    def of(cls, out: str) -> NameMap:
        path = names_file(out)
        if path not in cls._open:
            cls._open[path] = cls(path)
        return cls._open[path]

    def label(self, name: str) -> str:
        digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), key=self.key, digest_size=4).hexdigest()
        label = f"redacted-{digest}{_compound_ext(name)}"
        if self.names.get(label) != name:
            self.names[label] = name
            self.dirty = True
        return label

    def shown(self, item: str) -> str:
        """An input as given (a path, a glob, an s3:// URI), or its label when it holds personal data."""
        for label, name in self.names.items():
            if name == item:
                return label
        return item

    def save(self) -> None:
        # nothing to map: no file; deleted since it was read: a long-lived process (prepare serve) writes it again
        if not self.names or (not self.dirty and self.path.exists()):
            return
        try:  # labels another run wrote since this map was read stay resolvable
            on_disk = dict(json.loads(self.path.read_text(encoding="utf-8"))["names"])
        except (OSError, ValueError, KeyError, TypeError):
            on_disk = {}
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"key": self.key.hex(), "names": {**on_disk, **self.names}}, fh, ensure_ascii=False, indent=1)
        os.replace(tmp, self.path)
        self.dirty = False


def save_names(out: str) -> None:
    """Write the map of this run's labels (call it with the run directory's lock held)."""
    path = names_file(out)
    if path in NameMap._open:
        NameMap._open[path].save()


def shown_config(config: dict, out: str) -> dict:
    """A dumped PrepareConfig with every input that holds personal data as its label (the manifest's copy):
    a file named on the command line kept its real name in `inputs`."""
    names = NameMap.of(out)
    return {**config, **{key: [names.shown(item) for item in config.get(key) or []]
                         for key in ("inputs", "validation_inputs")}}


def redact_items(items: list[str], cfg: PrepareConfig) -> None:
    """Give a label to each input as written (a file or folder named on the command line, a glob, an
    s3:// URI) in which the PII engine finds anything: config.inputs goes to the manifest."""
    names = NameMap.of(cfg.out)
    for item in items:
        if item not in names.names.values() and name_holds_pii(item[5:] if item.startswith("s3://") else item, cfg):
            names.label(item)


def redact_names(files: list[InputFile], cfg: PrepareConfig) -> list[InputFile]:
    """Input names are written to records (source.file), quarantine files, report.json/md, --json output,
    Prefect artifacts and task-run names. A name in which the PII engine finds anything becomes its label
    (NameMap); the map is written by save_names once the run holds its run directory."""
    flagged = [f for f in files if not f.redacted and name_holds_pii(f.name, cfg)]
    if not flagged:
        return files
    names = NameMap.of(cfg.out)
    labels = {f.uri: names.label(f.name) for f in flagged}
    return [replace(f, name=labels[f.uri], redacted=True) if f.uri in labels else f for f in files]
