"""Readers: files, folders, globs and s3:// URIs to batches of raw rows, streaming.

A raw row is `RawRow(line, value, error)`: `line` is the 1-based line number for line-based files
(.jsonl, .txt) and the 1-based row / array position otherwise; `value` is a dict (structured files)
or a str (plain text); `error` is a reason code when the row could not be parsed (value is None).
A file that cannot be read at all raises UnreadableInput before any row of it is yielded.
"""
from __future__ import annotations

import codecs
import csv
import functools
import glob
import gzip
import io
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO, Iterator, NamedTuple

import charset_normalizer

from .config import ReadConfig

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


@dataclass(frozen=True)
class InputFile:
    uri: str          # local path or s3://bucket/key
    name: str         # shown in reports and record sources: path relative to the input root it came from
    file_format: str  # jsonl | json | csv | tsv | parquet | txt
    compression: str | None
    start: int = 0            # a byte range of a large line-based file, so one file can be several shards
    end: int | None = None
    first_line: int = 1

    @property
    def is_s3(self) -> bool:
        return self.uri.startswith("s3://")

    @property
    def splittable(self) -> bool:
        return not self.is_s3 and self.compression is None and self.file_format in ("jsonl", "txt")


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
            remaining = end - start
            while remaining:
                block = fh.read(min(remaining, 1 << 24))
                line += block.count(b"\n")
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
    return os.path.splitext(p)[1] in FORMATS


def expand_inputs(inputs: list[str]) -> list[InputFile]:
    """Files, folders (recursive), globs and s3:// URIs (prefixes and globs) to a sorted, de-duplicated list."""
    found: dict[str, InputFile] = {}
    for item in inputs:
        if item.startswith("s3://"):
            from .s3 import list_objects

            for uri in list_objects(item):
                if _is_data_file(uri):
                    found.setdefault(uri, describe(uri, uri[5:]))
            continue
        matches = sorted(glob.glob(item, recursive=True)) if glob.has_magic(item) else [item]
        if not matches:
            raise UnreadableInput(item, "no file matches this pattern")
        for match in matches:
            if os.path.isdir(match):
                root = Path(match)
                for path in sorted(root.rglob("*")):
                    if path.is_file() and _is_data_file(str(path)) and not path.name.startswith("."):
                        found.setdefault(str(path), describe(str(path), str(path.relative_to(root.parent))))
            elif os.path.exists(match):
                found.setdefault(match, describe(match, os.path.basename(match)))
            else:
                raise UnreadableInput(match, "no such file or folder")
    return list(found.values())


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
    """Stops after `cap` decompressed bytes and remembers that it did, so the rest is reported as unread."""

    def __init__(self, raw: BinaryIO, cap: int):
        self.raw, self.cap, self.read_bytes, self.capped = raw, cap, 0, False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        room = self.cap - self.read_bytes
        if room <= 0:
            self.capped = self.capped or bool(self.raw.read(1))
            return 0
        view = memoryview(buffer)[: min(len(buffer), room)]
        data = self.raw.read(len(view))
        n = len(data)
        view[:n] = data
        self.read_bytes += n
        return n


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
        raise UnreadableInput(f.uri, "permission denied") from None
    except FileNotFoundError:
        raise UnreadableInput(f.uri, "no such file") from None
    except OSError as exc:
        raise UnreadableInput(f.uri, exc.strerror or type(exc).__name__) from None


def open_binary(f: InputFile, cfg: ReadConfig) -> _CappedReader:
    """Decompressed, size-capped binary stream. Checks the archive is valid before returning."""
    raw = _open_raw(f)
    if f.compression == "gzip":
        stream = gzip.GzipFile(fileobj=raw)
    elif f.compression == "zstd":
        import zstandard

        stream = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
    else:
        stream = raw
    capped = _CappedReader(stream, cfg.max_decompressed_bytes)
    buffered = io.BufferedReader(capped, buffer_size=1 << 20)
    try:
        buffered.peek(1)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise UnreadableInput(f.uri, f"not a valid {f.compression} archive ({type(exc).__name__})") from None
    except Exception as exc:  # zstandard.ZstdError and friends
        raise UnreadableInput(f.uri, f"not a valid {f.compression} archive ({type(exc).__name__})") from None
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


def _iter_lines(stream, cap: int, first_line: int = 1) -> Iterator[tuple[int, bytes | None]]:
    """(line number, bytes) per line; a line over `cap` bytes is skipped in bounded memory and yields None."""
    number = first_line - 1
    while True:
        line = stream.readline(cap + 1)
        if not line:
            return
        number += 1
        if len(line) > cap and not line.endswith(b"\n"):
            while True:  # drain the rest of the over-long line without holding it
                rest = stream.readline(1 << 20)
                if not rest or rest.endswith(b"\n"):
                    break
            yield number, None
            continue
        yield number, line


class FileReader:
    """Reads one input file as batches of RawRow. After iteration, `encoding`, `warnings` and `unread`
    (True when the decompressed-size cap stopped the read) describe what happened."""

    def __init__(self, f: InputFile, cfg: ReadConfig):
        self.f, self.cfg = f, cfg
        self.encoding = "utf-8"
        self.warnings: list[str] = []
        self.unread = False
        self._stream = open_binary(f, cfg) if f.file_format != "parquet" else None
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
            if self.f.is_s3:
                from .s3 import open_object

                return pq.ParquetFile(io.BytesIO(open_object(self.f.uri).read()))
            return pq.ParquetFile(self.f.uri)
        except PermissionError:
            raise UnreadableInput(self.f.uri, "permission denied") from None
        except Exception as exc:
            raise UnreadableInput(self.f.uri, f"not a valid Parquet file ({type(exc).__name__})") from None

    def batches(self) -> Iterator[list[RawRow]]:
        rows = getattr(self, f"_rows_{self.f.file_format}")()
        batch: list[RawRow] = []
        for row in rows:
            batch.append(row)
            if len(batch) >= self.cfg.batch_size:
                yield batch
                batch = []
        if batch:
            yield batch
        if self._stream is not None:
            self.unread = self._stream.capped_reader.capped
            self._stream.close()

    # --- per format -------------------------------------------------------------------------------
    def _sniff_encoding(self) -> None:
        self.encoding = detect_encoding(self._stream.peek(SNIFF_BYTES)[:SNIFF_BYTES])
        if self.encoding not in ("utf-8", "utf-8-sig"):
            self.warnings.append(f"not UTF-8; decoded as {self.encoding} (detected)")

    def _text_lines(self) -> Iterator[tuple[int, str | None, str | None]]:
        self._sniff_encoding()
        for number, data in _iter_lines(self._stream, self.cfg.max_record_bytes, self.f.first_line):
            if data is None:
                yield number, None, "too_large"
                continue
            if number == 1 and data.startswith(b"\xef\xbb\xbf"):
                data = data[3:]
            text = None
            if self.encoding not in ("utf-8", "utf-8-sig") and _single_byte(self.encoding):
                # A line that is valid UTF-8 is UTF-8, even in a file detected as legacy: in a file of
                # mixed lines (fuzzing: cp1251 and UTF-8) those lines came out as mojibake ("РџСЂРёРІРµС‚").
                # Legacy text with letters beyond ASCII is practically never valid UTF-8.
                text = _decode(data, "utf-8")
            if text is None:
                text = _decode(data, self.encoding)
            yield (number, None, "undecodable") if text is None else (number, text.rstrip("\r\n"), None)

    def _content_lines(self) -> Iterator[RawRow]:
        """One RawRow per line: its text, or the reason it has none (undecodable, too_large, empty_line)."""
        for number, text, error in self._text_lines():
            if error:
                yield RawRow(number, None, error)
            elif not text.strip():
                yield RawRow(number, None, "empty_line")
            else:
                yield RawRow(number, text)

    def _rows_jsonl(self) -> Iterator[RawRow]:
        for row in self._content_lines():
            yield row if row.error else _parse_json_row(row.line, row.value)

    def _rows_txt(self) -> Iterator[RawRow]:
        if self.cfg.txt_mode == "line":
            yield from self._content_lines()
            return
        block: list[str] = []
        start = size = 0
        oversized = False  # the rest of a block already counted as too_large is skipped, not made a record
        for number, text, error in self._text_lines():
            if error:
                yield RawRow(number, None, error)
                continue
            if text.strip():
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
        """(csv reader, header), or None for an empty file."""
        self._sniff_encoding()
        text = io.TextIOWrapper(self._stream, encoding=self.encoding, errors="replace", newline="")
        csv.field_size_limit(self.cfg.max_record_bytes)
        # csv.reader pulls whole physical lines: one with no line end (fuzzing: a gzip of zeros) was held
        # whole in memory. _BoundedLines skips an over-long line and raises csv.Error for it instead.
        reader = csv.reader(_BoundedLines(text, self.cfg.max_record_bytes), delimiter=delimiter)
        try:
            header = next(reader)
        except StopIteration:
            return None
        except csv.Error as exc:
            raise UnreadableInput(self.f.uri, f"bad CSV header ({exc})") from None
        return reader, [h.strip() for h in header]

    def _rows_csv(self) -> Iterator[RawRow]:
        if self._csv is None:
            return
        reader, header = self._csv
        position = 0
        while True:
            position += 1
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error:
                yield RawRow(position, None, "too_large")
                continue
            if len(cells) != len(header):
                yield RawRow(position, None, "bad_csv_row")
            else:
                yield RawRow(position, dict(zip(header, cells)))

    def _rows_tsv(self) -> Iterator[RawRow]:
        return self._rows_csv()

    def _rows_parquet(self) -> Iterator[RawRow]:
        position = 0
        for record_batch in self._parquet.iter_batches(batch_size=self.cfg.batch_size):
            for row in record_batch.to_pylist():
                position += 1
                yield RawRow(position, row)

    def _open_json(self) -> BinaryIO:
        self._sniff_encoding()
        head = self._stream.peek(64).lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
        source: BinaryIO = self._stream
        if self.encoding not in ("utf-8", "utf-8-sig"):  # ijson wants UTF-8 bytes
            source = io.BufferedReader(_Reencoder(self._stream, self.encoding))
        if head not in (b"[", b"{"):
            raise UnreadableInput(self.f.uri, "JSON file is neither an array nor an object")
        return source

    def _rows_json(self) -> Iterator[RawRow]:
        """A JSON array of records, or an object whose values are arrays of records (e.g. {"train": [...]})."""
        import ijson

        position = 0
        try:
            for position, (item, error) in enumerate(_json_items(self._json_source, self.cfg.max_record_bytes), 1):
                yield RawRow(position, None, error) if error else _row_from_value(position, item)
        except (ijson.JSONError, ValueError):
            # ValueError: the C backend raises UnicodeDecodeError for a lone low-surrogate escape ("\\udc00"),
            # which crashed the run (fuzzing); it cannot go on after it, so it ends the file like bad JSON
            self.warnings.append("invalid JSON after the last readable record; the rest of the file is unread")
            yield RawRow(position + 1, None, "invalid_json_tail")


_CONTAINER_START = ("start_map", "start_array")
_CONTAINER_END = ("end_map", "end_array")


def _json_items(source, max_bytes: int) -> Iterator[tuple[object, str | None]]:
    """(value, None) or (None, "too_large") for each record of a JSON file, streaming: the items of a
    top-level array; for a top-level object ({"train": [...], "test": [...]}), the items of each array
    value and each object value (counted as a row, so a file that is not a dataset is quarantined row by
    row, not silently skipped). Records are built from ijson.basic_parse events, so memory holds one
    record at a time, and a record over about max_bytes is dropped while it is built.

    Not ijson.items / ijson.parse: they compute a prefix string per event that grows with depth, so
    100,000 nested brackets (200 KB of input) took quadratic memory and the process was killed (fuzzing)."""
    import ijson
    from ijson.common import ObjectBuilder

    outer: list[str] = []  # the containers around the current position, outside any record (at most 2)
    depth = size = 0       # inside a record: its nesting depth and its size so far (about its JSON bytes)
    builder: ObjectBuilder | None = None
    for event, value in ijson.basic_parse(source, use_float=True):
        if depth:  # inside a record: build it, or skip the rest of one over the cap
            if builder is not None:
                size += _event_bytes(event, value)
                if size > max_bytes:
                    builder = None
                else:
                    builder.event(event, value)
            depth += (event in _CONTAINER_START) - (event in _CONTAINER_END)
            if not depth:
                yield (builder.value, None) if builder is not None else (None, "too_large")
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
    afresh on the next line after an error)."""

    def __init__(self, text, limit: int):
        self.text, self.limit = text, limit

    def __iter__(self):
        return self

    def __next__(self) -> str:
        line = self.text.readline(self.limit + 1)
        if not line:
            raise StopIteration
        if len(line) > self.limit and not line.endswith(("\n", "\r")):
            while (rest := self.text.readline(1 << 20)) and not rest.endswith(("\n", "\r")):
                pass
            raise csv.Error("line over the record size cap")
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


def _parse_json_row(number: int, text: str) -> RawRow:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return RawRow(number, None, "invalid_json")
    return _row_from_value(number, value)


def _row_from_value(number: int, value) -> RawRow:
    if isinstance(value, dict):
        return RawRow(number, value)
    if isinstance(value, str):
        return RawRow(number, {"text": value})
    if isinstance(value, list) and value and all(isinstance(m, dict) for m in value):
        return RawRow(number, {"messages": value})
    return RawRow(number, None, "not_an_object")
