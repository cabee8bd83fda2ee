"""Output: Parquet shards of a target size per split, and the manifest, written last and atomically."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.core.config import WriteConfig
from pipeline.core.files import atomic_write_text, sha256_file
from pipeline.core.records import ARROW_SCHEMA, COLUMNS, Record, to_table
from pipeline.core.step import Step
from pipeline.data.kind_counts import KindCounts

SCHEMA_VERSION = "1.0"


class ShardWriter:
    """Streams records of one split into `<run>/<split>/part-00000.parquet`, ... Each shard is written
    to a temporary name and renamed when closed, so a shard on disk is always complete."""

    def __init__(self, run_dir: str | Path, split: str, cfg: WriteConfig, kind: str | None = None,
                 claim: Callable[[list[str]], None] | None = None):
        """`kind` (write.split_by_kind): the shard set "chat" or "text", in `<run>/<split>/<kind>/`.
        `claim` records each shard's name (relative to the run directory) before it is written
        (rundir.claim: prepare deletes only the files it recorded)."""
        self.run_dir, self.split, self.cfg, self.kind, self.claim = Path(run_dir), split, cfg, kind, claim
        self.folder = self.run_dir / split / kind if kind else self.run_dir / split
        self.folder.mkdir(parents=True, exist_ok=True)
        self.shards: list[dict] = []
        self._writer: pq.ParquetWriter | None = None
        self._rows = self._bytes = 0

    def _path(self, index: int) -> Path:
        return self.folder / f"part-{index:05d}.parquet"

    def write(self, records: list[dict]) -> None:
        if records:
            self.write_table(to_table(records))

    def write_table(self, table: pa.Table) -> None:
        """Rows in the record layout of to_table (a work file's rows; its internal columns are left out)."""
        table = table.select(COLUMNS)
        start = 0
        while start < table.num_rows:
            if self._writer is None:
                if self.claim is not None:
                    self.claim([str(self._path(len(self.shards)).relative_to(self.run_dir))])
                tmp = self._path(len(self.shards)).with_suffix(".parquet.tmp")
                compression = None if self.cfg.compression == "none" else self.cfg.compression
                self._writer = pq.ParquetWriter(tmp, ARROW_SCHEMA, compression=compression)
            room = self.cfg.shard_rows - self._rows
            piece = table.slice(start, room)
            self._writer.write_table(piece)
            self._rows += piece.num_rows
            self._bytes += piece.nbytes
            start += piece.num_rows
            if self._rows >= self.cfg.shard_rows or self._bytes >= self.cfg.shard_bytes:
                self._close_shard()

    def _close_shard(self) -> None:
        if self._writer is None:
            return
        self._writer.close()
        final = self._path(len(self.shards))
        os.replace(final.with_suffix(".parquet.tmp"), final)
        self.shards.append({
            "path": str(final.relative_to(self.run_dir)), "split": self.split, "rows": self._rows,
            "bytes": final.stat().st_size, "sha256": sha256_file(final), **({"kind": self.kind} if self.kind else {}),
        })
        self._writer, self._rows, self._bytes = None, 0, 0

    def close(self) -> list[dict]:
        self._close_shard()
        return self.shards


def kind_of_set(record: Record, kind: str | None) -> bool:
    """Whether the record belongs to the shard set `kind` (None: the one set of all records)."""
    return kind is None or (kind == "text") == (record.get("messages") is None)


class WriteStep(Step):
    """The last step: each record to the shard writer of its split (and, with write.split_by_kind, of its
    kind: chat and plain-text records in separate shard sets, no null messages/text columns), after the
    overflow policy (`overflow`: records -> records, counting its drops in the write stage). One step
    writes every shard in input order, so the shards are the same for the same inputs."""

    name = "write"
    config_sections = ("write",)

    def __init__(self, run_dir: str | Path, cfg: WriteConfig, overflow=None,
                 claim: Callable[[list[str]], None] | None = None):
        kinds = ("chat", "text") if cfg.split_by_kind else (None,)
        self.writers = {(split, kind): ShardWriter(run_dir, split, cfg, kind, claim)
                        for split in ("train", "validation") for kind in kinds}
        self.overflow = overflow
        self.kinds = KindCounts()  # the manifest's per-kind counts, whether or not the kinds are written apart

    def process(self, batch: list[Record] | pa.Table) -> list[Record] | pa.Table:
        """Record dicts, or, when there is no overflow policy to apply, the Arrow rows of a processed work file
        as they are: its canonical columns are already what to_table makes of the records."""
        if isinstance(batch, pa.Table):
            if self.overflow is not None:
                raise ValueError("the overflow policy works on record dicts: pass records, not a table")
            return self._write_table(batch)
        if self.overflow is not None:
            batch = self.overflow(batch, self.stats)
        self.kinds.add_records(batch)
        written = []
        for (split, kind), writer in self.writers.items():
            part = [r for r in batch if r["_split"] == split and kind_of_set(r, kind)]
            writer.write(part)
            written += part
        return written

    def _write_table(self, table: pa.Table) -> pa.Table:
        self.kinds.add_table(table)
        parts = []
        for (split, kind), writer in self.writers.items():
            mask = pc.equal(table.column("_split"), split)
            if kind is not None:
                mask = pc.and_(mask, pc.is_null(table.column("messages")) if kind == "text"
                               else pc.is_valid(table.column("messages")))
            part = table.filter(mask)
            if part.num_rows:
                writer.write_table(part)
                parts.append(part)
        return pa.concat_tables(parts) if parts else table.slice(0, 0)

    def close(self) -> list[dict]:
        return [s for w in self.writers.values() for s in w.close()]


def build_manifest(run_id: str, config: dict, counts: dict, shards: list[dict], extra: dict | None = None) -> dict:
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "config": config,
        "counts": counts,
        "shards": shards,
        **(extra or {}),
    }


def write_manifest(run_dir: str | Path, manifest: dict) -> Path:
    path = Path(run_dir) / "manifest.json"
    atomic_write_text(path, json.dumps(manifest, indent=2, ensure_ascii=False, sort_keys=False) + "\n")
    return path
