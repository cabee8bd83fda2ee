"""FileReader: one input file as batches of RawRow, per format (JSON lines, JSON, CSV/TSV, Parquet, text),
each row bounded in size and nesting depth."""
from __future__ import annotations

import codecs
import csv
import io
import json
from typing import BinaryIO, Iterator

import numpy as np

from pipeline.core.config import ReadConfig
from pipeline.data.readers.files import InputFile, RawRow, UnreadableInput
from pipeline.data.readers.streams import S3RangeFile, S3ReadError, open_binary
from pipeline.data.readers.text import (
    SNIFF_BYTES,
    BoundedLines,
    Reencoder,
    decode_strict,
    detect_encoding,
    is_single_byte,
    is_wide,
    iter_lines,
)


def guessed_encoding_note(name: str, encoding: str) -> str:
    """The terminal line for a file whose encoding was guessed (FileReader.encoding_guessed)."""
    return f"prepare: {name}: not UTF-8, read as {encoding} (guessed; --encoding or read.encoding sets it)"


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
        self.encoding_guessed = False  # a legacy code page or UTF-16/32 detected, not given by read.encoding
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
        # constructs readers, and skip_unreadable must be able to skip such a file.
        elif f.file_format == "json":
            self._json_source = self._open_json()
        elif f.file_format in ("csv", "tsv"):
            self._csv = self._open_csv()

    def _open_parquet(self):
        import pyarrow.parquet as pq

        try:
            # Row group by row group: pyarrow's pre_buffer (on by default) fetches the column chunks of
            # every row group iter_batches will read, that is the whole file, up front; on S3 by range
            # requests, where the object was read whole (247 MB object -> 739 MB RSS).
            if self.f.is_s3:
                self._s3_source = S3RangeFile(self.f.uri)
                pf = pq.ParquetFile(self._s3_source, pre_buffer=False)
            else:
                pf = pq.ParquetFile(self.f.uri, pre_buffer=False)
        except PermissionError:
            raise UnreadableInput(self.f.shown, "permission denied") from None
        except S3ReadError as exc:  # a missing object or bucket is not "not a valid Parquet file"
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
        """The file's encoding: read.encoding when set, else detected from its first MiB (a guess of a
        legacy code page is said in the warnings, and by the run on the terminal)."""
        forced = self.cfg.encoding != "auto"
        if forced:
            self.encoding = codecs.lookup(self.cfg.encoding).name
        else:
            self.encoding = detect_encoding(self._stream.peek(SNIFF_BYTES)[:SNIFF_BYTES])
            self.encoding_guessed = self.encoding not in ("utf-8", "utf-8-sig")
            if self.encoding_guessed:
                self.warnings.append(f"not UTF-8; decoded as {self.encoding} (detected)")
        # A line that is valid UTF-8 is UTF-8 in a file guessed as a one-byte code page (mixed files); a
        # forced encoding is taken as given.
        self._utf8_lines = not forced and is_single_byte(self.encoding) and self.encoding not in ("utf-8", "utf-8-sig")
        if is_wide(self.encoding):
            # UTF-16/32: a byte-wise line split cuts its characters ("\n" is b"\n\0"), so every line came out
            # undecodable (a UTF-16 .jsonl with a BOM gave 0 records). Re-encoded as UTF-8, it is read as UTF-8.
            self._stream = io.BufferedReader(Reencoder(self._stream, self.encoding), buffer_size=1 << 20)
            self._decode_as = "utf-8"
        else:
            self._decode_as = self.encoding

    def _text_lines(self) -> Iterator[tuple[int, str | None, str | None]]:
        self._sniff_encoding()
        encoding = self._decode_as
        for number, data in iter_lines(self._stream, self.cfg.max_record_bytes, self.f.first_line):
            if data is None:
                yield number, None, "too_large"
                continue
            if isinstance(data, int):  # a run of `data` empty lines
                yield number, data, "empty_line"
                continue
            if number == 1 and data.startswith(b"\xef\xbb\xbf"):
                data = data[3:]
            text = None
            if self._utf8_lines:
                # A line that is valid UTF-8 is UTF-8, even in a file detected as legacy (a file of mixed
                # cp1251 and UTF-8 lines): legacy text with letters beyond ASCII is practically never valid
                # UTF-8, and decoding UTF-8 as cp1251 gives mojibake ("РџСЂРёРІРµС‚").
                text = decode_strict(data, "utf-8")
            if text is None:
                text = decode_strict(data, encoding)
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
            yield row if row.error else parse_json_row(row.line, row.value, limit)

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
                size += len(text)  # a running total keeps a block of many lines linear
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

    def _open_csv(self) -> tuple | None:
        """(csv reader, line source, header), or None for an empty file."""
        self._sniff_encoding()
        delimiter = self._csv_delimiter()
        text = io.TextIOWrapper(self._stream, encoding=self._decode_as, errors="replace", newline="")
        csv.field_size_limit(self.cfg.max_record_bytes)
        # csv.reader pulls whole physical lines, and a line with no line end (a gzip of zeros) would be held
        # whole in memory: BoundedLines skips an over-long line and raises csv.Error for it instead.
        lines = BoundedLines(text, self.cfg.max_record_bytes)
        reader = csv.reader(lines, delimiter=delimiter)
        try:
            header = next(reader)
        except StopIteration:
            return None
        except csv.Error as exc:
            raise UnreadableInput(self.f.shown, f"bad CSV header ({exc})") from None
        if header:  # a BOM the encoding kept (read.encoding: utf-8 on an Excel export) is no column name
            header[0] = header[0].lstrip("\ufeff")
        return reader, lines, self._unique_columns([h.strip() for h in header])

    def _csv_delimiter(self) -> str:
        """Tab for .tsv; for .csv read.csv_delimiter, or when auto the one of , ; tab | that splits the
        first lines into the same number of columns, two or more (Excel writes ; where the decimal mark
        is a comma, as in Turkish and Russian)."""
        if self.f.file_format == "tsv":
            return "\t"
        if self.cfg.csv_delimiter != "auto":
            return self.cfg.csv_delimiter
        sample = self._stream.peek(CSV_SNIFF_BYTES)[:CSV_SNIFF_BYTES].decode(self._decode_as, "replace")
        return sniff_delimiter(sample)

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
            # The cap is checked on Arrow data, before a row becomes Python objects: a 2.5 KB file with one
            # row of 1,000,000 messages (30 MB as JSON) took 2.9 GB and 300 s as dicts.
            fits = arrow_row_json_bytes(record_batch) <= self.cfg.max_record_bytes
            values = iter(record_batch.to_pylist() if fits.all() else record_batch.filter(fits).to_pylist())
            for row_fits in fits.tolist():
                position += 1
                self._parquet_bytes += row_bytes
                if not row_fits:
                    yield RawRow(position, None, "too_large")
                    continue
                row = next(values)
                yield self._checked(RawRow(position, row)) if deep else RawRow(position, row)

    def _open_json(self) -> BinaryIO:
        self._sniff_encoding()
        source: BinaryIO = self._stream
        if self._decode_as not in ("utf-8", "utf-8-sig"):  # ijson wants UTF-8 bytes
            source = io.BufferedReader(Reencoder(self._stream, self.encoding))
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
            # ValueError: the C backend raises UnicodeDecodeError for a lone low-surrogate escape ("\\udc00");
            # it cannot go on after it, so it ends the file like bad JSON
            self.warnings.append("invalid JSON after the last readable record; the rest of the file is unread")
            yield RawRow(position + 1, None, "invalid_json_tail")


CSV_SNIFF_BYTES = 1 << 16
CSV_SNIFF_LINES = 20
CSV_DELIMITERS = (",", ";", "\t", "|")  # the order a tie goes


def sniff_delimiter(sample: str) -> str:
    """The delimiter of CSV text from its first lines: the one that gives the header two or more columns and
    the most following rows of the same width (quotes respected). "," when none splits the header."""
    lines = sample.splitlines(keepends=True)
    if len(lines) > 1 and not lines[-1].endswith(("\n", "\r")):
        lines.pop()  # cut by the sample's end
    lines = lines[:CSV_SNIFF_LINES]
    best, best_rows = ",", -1
    for delimiter in CSV_DELIMITERS:
        try:
            rows = list(csv.reader(lines, delimiter=delimiter))
        except csv.Error:
            continue
        if not rows or len(rows[0]) < 2:
            continue
        same = sum(len(row) == len(rows[0]) for row in rows[1:])
        if same > best_rows:
            best, best_rows = delimiter, same
    return best


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


def arrow_row_json_bytes(batch) -> np.ndarray:
    """About the size of each row of a RecordBatch as a JSON object, counted like the JSON reader counts a
    record (_event_bytes: a string or key is its length + 3, any other value and each container's start and
    end 8): every field, list item and struct, without building the rows. int64 per row."""
    sizes = np.full(batch.num_rows, 16, dtype=np.int64)
    for name, column in zip(batch.schema.names, batch.columns):
        sizes += len(name.encode("utf-8", "surrogatepass")) + 3 + _arrow_value_bytes(column)
    return sizes


def _arrow_value_bytes(arr) -> np.ndarray:
    """_event_bytes-sized JSON size of each value of an Arrow array (int64, one per value)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = arr.type
    if isinstance(arr, pa.ExtensionArray):
        return _arrow_value_bytes(arr.storage)
    if pa.types.is_dictionary(t):
        indices = arr.indices.fill_null(0).to_numpy(zero_copy_only=False)
        sizes = _arrow_value_bytes(arr.dictionary)[indices] if len(arr.dictionary) else np.zeros(len(arr), np.int64)
    elif (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
          or pa.types.is_large_binary(t) or pa.types.is_string_view(t) or pa.types.is_binary_view(t)):
        sizes = pc.binary_length(arr).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64) + 3
    elif pa.types.is_fixed_size_binary(t):
        sizes = np.full(len(arr), t.byte_width + 3, dtype=np.int64)
    elif pa.types.is_struct(t):
        sizes = np.full(len(arr), 16, dtype=np.int64)
        for i, child in enumerate(arr.flatten()):
            sizes += len(t.field(i).name.encode("utf-8", "surrogatepass")) + 3 + _arrow_value_bytes(child)
    elif pa.types.is_map(t):  # a list of [key, value] pairs once read
        pairs = 16 + _arrow_value_bytes(arr.keys) + _arrow_value_bytes(arr.items)
        sizes = 16 + _segment_sums(pairs, arr.offsets.to_numpy(zero_copy_only=False))
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        sizes = 16 + _segment_sums(_arrow_value_bytes(arr.values), arr.offsets.to_numpy(zero_copy_only=False))
    elif pa.types.is_fixed_size_list(t) or pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        parents = pc.list_parent_indices(arr).to_numpy(zero_copy_only=False)
        items = _arrow_value_bytes(pc.list_flatten(arr))
        sizes = 16 + np.bincount(parents, weights=items, minlength=len(arr)).astype(np.int64)
    else:  # numbers, booleans, dates, null: a scalar
        return np.full(len(arr), 8, dtype=np.int64)
    if arr.null_count:
        sizes[arr.is_null().to_numpy(zero_copy_only=False)] = 8
    return sizes


def _segment_sums(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """values[offsets[i]:offsets[i + 1]].sum() for each i."""
    totals = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(values, out=totals[1:])
    return totals[offsets[1:]] - totals[offsets[:-1]]


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


_CONTAINER_START = ("start_map", "start_array")
_CONTAINER_END = ("end_map", "end_array")
# A top-level object whose first key is one of these, holding a list, is one conversation, not a split
TURN_KEYS = ("messages", "conversations")


def _json_items(source, max_bytes: int, max_depth: int = 1 << 30) -> Iterator[tuple[object, str | None]]:
    """(value, None) or (None, "too_large") for each record of a JSON file, streaming: the items of a
    top-level array; for a top-level object ({"train": [...], "test": [...]}), the items of each array
    value and each object value (counted as a row, so a file that is not a dataset is quarantined row by
    row, not silently skipped). Records are built from ijson.basic_parse events, so memory holds one
    record at a time, and a record over about max_bytes is dropped while it is built.

    Not ijson.items / ijson.parse: they compute a prefix string per event that grows with depth, so memory
    would be quadratic in the nesting (100,000 nested brackets, 200 KB of input, exhaust it).
    A record nested deeper than max_depth is dropped the same way, as too_deep.

    A top-level object that is itself a record (a file of one record) is that one record: its first value
    tells, a scalar or a list of turns (TURN_KEYS), where a split's is a list and a keyed record's an object."""
    import ijson
    from ijson.common import ObjectBuilder

    outer: list[str] = []  # the containers around the current position, outside any record (at most 2)
    depth = size = 0       # inside a record: its nesting depth and its size so far (about its JSON bytes)
    builder: ObjectBuilder | None = None
    reason = None          # why the record being skipped is dropped
    top_object = False            # a top-level object has started and no key of it was seen yet
    first_key: str | None = None  # the first key of a top-level object, until its value is seen
    for event, value in ijson.basic_parse(source, use_float=True):
        if first_key is not None:
            key, first_key = first_key, None
            if event not in _CONTAINER_START or event == "start_array" and key in TURN_KEYS:
                outer.pop()  # the top-level object is the record: build it from its start
                builder, depth, size = ObjectBuilder(), 1, 2 + _event_bytes("map_key", key)
                builder.event("start_map", None)
                builder.event("map_key", key)
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
            top_object = outer == ["map"]
        elif event == "map_key" and top_object:
            first_key, top_object = value, False


def _event_bytes(event: str, value) -> int:
    return len(value) + 3 if event in ("string", "map_key") else 8


def parse_json_row(number: int, text: str, max_depth: int | None = None) -> RawRow:
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
