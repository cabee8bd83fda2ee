"""Readers: files, folders, globs and s3:// URIs to batches of raw rows, streaming.

A raw row is `RawRow(line, value, error)`: `line` is the 1-based line number for line-based files
(.jsonl, .txt) and the 1-based row / array position otherwise; `value` is a dict (structured files)
or a str (plain text); `error` is a reason code when the row could not be parsed (value is None).
A file that cannot be read at all raises UnreadableInput before any row of it is yielded.

By concern: files (what an input is), discovery (inputs to files: symlink, FIFO and loop rules), streams
(decompression, the size cap, truncation), text (encodings, lines), rows (FileReader per format), names
(file-name labels). The names other modules use are exported here.
"""
from pipeline.data.readers.discovery import expand_inputs
from pipeline.data.readers.files import (
                    COMPRESSIONS,
                    FORMATS,
                    InputFile,
                    RawRow,
                    UnreadableInput,
                    describe,
                    is_data_file,
                    printable_name,
                    split_ranges,
)
from pipeline.data.readers.names import (
                    NameMap,
                    name_holds_pii,
                    names_file,
                    redact_items,
                    redact_names,
                    save_names,
                    shown_config,
)
from pipeline.data.readers.rows import FileReader, guessed_encoding_note, parquet_batch_rows, parse_json_row, too_deep
from pipeline.data.readers.streams import open_binary
from pipeline.data.readers.text import detect_encoding

__all__ = ["COMPRESSIONS", "FORMATS", "FileReader", "InputFile", "NameMap", "RawRow", "UnreadableInput",
           "is_data_file", "parse_json_row", "describe", "detect_encoding", "expand_inputs", "guessed_encoding_note",
           "name_holds_pii", "printable_name",
           "names_file", "open_binary", "parquet_batch_rows", "redact_items", "redact_names", "save_names",
           "shown_config", "split_ranges", "too_deep"]
