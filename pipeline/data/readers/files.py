"""What an input is: its description (InputFile, RawRow), its format from the name, the one error of a
whole input (UnreadableInput), and the byte ranges a large line-based file is read as."""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import NamedTuple

from pipeline.core.errors import PrepareError
from pipeline.data.readers.text import line_ends

COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd"}
FORMATS = {
    ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv", ".tsv": "tsv",
    ".parquet": "parquet", ".txt": "txt", ".text": "txt",
}


class UnreadableInput(PrepareError):
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
            # to the next line end in 1 MB steps: a plain readline() holds a whole line in memory, and a
            # file with no newline at all is one line
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
                line += line_ends(block) - (cr and block[:1] == b"\n")
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
    return InputFile(uri=uri, name=printable_name(name or os.path.basename(uri)), file_format=file_format,
                     compression=compression)


def printable_name(name: str) -> str:
    """A file name that is not UTF-8 (os.fsdecode turns its bytes into lone surrogates) as text that can
    be written, e.g. "bad\\xff.jsonl": JSON, Markdown, HTML, Parquet and the terminal need encodable text.
    Every name or path that reaches them goes through here; the uri keeps the real path."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        try:
            raw = name.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raw = name.encode("utf-8", "surrogatepass")
        return raw.decode("utf-8", "backslashreplace")


def is_data_file(path: str) -> bool:
    p = path.lower()
    for ext in COMPRESSIONS:
        if p.endswith(ext):
            p = p[: -len(ext)]
            break
    return os.path.splitext(p)[1] in FORMATS


def unreadable_file(path: str, name: str, reason: str) -> InputFile:
    """An input that was found but is not read: FileReader raises UnreadableInput(reason) for it."""
    try:
        f = describe(path, name)
    except UnreadableInput:
        f = InputFile(uri=path, name=printable_name(name), file_format="unknown", compression=None)
    return replace(f, problem=reason)
