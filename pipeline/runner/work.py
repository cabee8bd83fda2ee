"""The work folder of a run (work/): per-shard Parquet files between the phases, and the progress counts."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.core.config import ReadConfig
from pipeline.core.records import Record, from_table, parquet_options
from pipeline.data.readers import parquet_batch_rows

INTERNAL_COLUMNS = {"_order": pa.int64(), "_eval": pa.bool_()}
# phase 1's records carry the language step's code to phase 3, whose steps (PII, split) and processed files need
# it for every record: read back from meta's JSON each time, it cost three parses a record
NORMALIZED_COLUMNS = {**INTERNAL_COLUMNS, "_lang": pa.string()}
# _lang: the language step's code (None when it is off), for the token-length groups per language
PROCESSED_COLUMNS = {**INTERNAL_COLUMNS, "_split": pa.string(), "_tokens": pa.int32(), "_trainable": pa.int32(),
                     "_lang": pa.string()}


def work_paths(work_dir: str | Path, index: int) -> dict[str, Path]:
    work = Path(work_dir)
    return {name: work / name / f"{index:05d}.parquet"
            for name in ("normalized", "keys", "canned", "langs", "decontam", "processed", "history", "unfiltered")}


def eval_index_dir(work_dir: str | Path) -> Path:
    """Where the run's eval index is saved (decontam), built once before phase 1 and loaded by the workers."""
    return Path(work_dir) / "eval_index"


def progress_dir(work_dir: str | Path) -> Path:
    """Where workers leave their running record counts (progress.ProgressFile) for the main process."""
    return Path(work_dir) / "progress"


def open_work(path: Path) -> pq.ParquetFile:
    """A work file, read back batch by batch. pre_buffer (pyarrow's default) reads all the column chunks of a
    row group into memory ahead of decoding; a row group of a work file is a whole batch of records, so it
    held one more batch's worth of compressed data in memory per worker, for no gain on a local disk."""
    return pq.ParquetFile(path, pre_buffer=False)


def read_work_tables(path: Path, cfg: ReadConfig) -> Iterator[pa.Table]:
    """The rows of a work file as Arrow tables, a batch at a time, for steps that need no record dicts."""
    source = open_work(path)
    for arrow_batch in source.iter_batches(batch_size=parquet_batch_rows(source, cfg)):
        yield pa.Table.from_batches([arrow_batch])


def read_work(path: Path, cfg: ReadConfig) -> Iterator[list[Record]]:
    """The records of a work file, a batch at a time (the batches of read_work_tables)."""
    for table in read_work_tables(path, cfg):
        yield from_table(table)


class WorkWriter:
    """Tables appended to one work file, created on the first append."""

    def __init__(self, path: Path):
        self.path, self._writer = path, None

    @property
    def written(self) -> bool:
        return self._writer is not None

    def append(self, table: pa.Table) -> None:
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.path, table.schema, **parquet_options(table.schema))
        self._writer.write_table(table)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


class LazyFile:
    """A text file created on the first write: no empty quarantine files."""

    def __init__(self, path: Path):
        self.path, self.lines, self._fh = path, 0, None

    def write(self, text: str) -> None:
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "w", encoding="utf-8")
        self._fh.write(text)
        self.lines += 1

    def __enter__(self) -> "LazyFile":
        return self

    def __exit__(self, *exc) -> None:
        if self._fh is not None:
            self._fh.close()
