"""Datasets with history: the text-free dedup index a released dataset carries, and the keys it is made of.

The index (``dedup_index.parquet`` beside the manifest) holds, per record written to the shards, its id, its
shard, the 128-bit content hash, the LSH band hashes and the MinHash signature: what a later run needs to
find its own records' duplicates among them (``prepare run --against``) without reading the text again.

Where the keys are taken: in phase 3, right after the PII step (``HistoryKeysStep``), from the record as that
step leaves it with every pseudonym ``<PERSON_1a2b3c4d5e>`` collapsed to its type ``<PERSON>``
(``masked_record``). Phase 1's dedup keys cannot serve: they are taken from the raw text, so an index of them
would confirm that a given person's text was in the data (hash the text, look the hash up). Only the PII step
knows the spans, and it runs in phase 3, after the in-run dedup has dropped the duplicates (the PII work they
would cost). Its placeholders are typed already; its pseudonyms carry a digest keyed by the run's salt, which
is why they are collapsed: two runs with different salts then take the same keys of the same record, and
nobody without the text's personal data masked exactly as the detector masks it can reproduce a key. The
new records of a run with ``--against`` are keyed by the same step in the same place, so both sides of the
comparison are masked the same way. The mask operator (``***``) holds no salt and stays as it is.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.core.config import DedupConfig
from pipeline.data.dedup.keys import TEXT_HASH, KeysStep, compute_keys, key_schema, text_hashes
from pipeline.data.dedup.params import KEY_SETTINGS, params

INDEX_FORMAT = 1  # bump when the index layout or the masking changes: an index of another format is refused
INDEX_FILE = "dedup_index.parquet"
# pii.operators.Operators.pseudonym: <ENTITY_hex>; the entity names are upper case with digits and "_"
PSEUDONYM = re.compile(r"<([A-Z][A-Z0-9_]*)_[0-9a-f]{10}>")
# the keys a run's work file keeps of each record: the index's columns, and where the record came from (for
# the audit, never released)
WORK_COLUMNS = ("_order", "id", "exact_hi", "exact_lo", "near_mode", "source_file", "source_line")


def mask_text(text: str) -> str:
    """`text` with every pseudonym collapsed to its typed placeholder (the salt's part removed)."""
    return PSEUDONYM.sub(r"<\1>", text) if "_" in text else text


def _masked(value):
    if isinstance(value, str):
        return mask_text(value)
    if isinstance(value, list):
        return [_masked(v) for v in value]
    if isinstance(value, dict):
        return {k: _masked(v) for k, v in value.items()}
    return value


def masked_record(record: dict) -> dict:
    """The fields the keys are taken from (messages, text, tools), pseudonyms collapsed; the rest as it is."""
    return {**record, **{k: _masked(record[k]) for k in ("messages", "text", "tools") if record.get(k)}}


def index_settings(cfg: DedupConfig) -> dict:
    """What two indexes (or an index and a run) must agree on to be compared."""
    p = params(cfg)
    return {"index_format": INDEX_FORMAT, **{k: p[k] for k in KEY_SETTINGS}}


def _kept(names: list[str]) -> list[str]:
    return [c for c in names if c in WORK_COLUMNS or c.startswith("band_") or c == "signature"]


def history_keys(records: list[dict], cfg: DedupConfig, earlier: EarlierKeys | None = None) -> pa.Table:
    """The keys of each record, masked (WORK_COLUMNS, the band hashes and the signature with near dedup).
    `earlier`: phase 1's keys of the shard, whose rows serve for the records the masking left as they were."""
    masked = [masked_record(r) for r in records]
    if earlier is not None and cfg.near:
        table = earlier.reused(masked, cfg)
    else:
        table = compute_keys(masked, cfg)
        table = table.select(_kept(table.column_names))
    return table.replace_schema_metadata({b"history": json.dumps(index_settings(cfg)).encode()})


class EarlierKeys:
    """Phase 1's key file of a shard (keys.KeysStep), looked up by _order. Shingling and MinHash are most of a
    key's cost, and a record the PII step did not change (most of them) has the keys it had in phase 1: a record
    whose text hash (keys.TEXT_HASH: its whole text, tools included) and id match its phase-1 row takes that row;
    every other record is keyed anew."""

    def __init__(self, path: str | Path, cfg: DedupConfig):
        schema = key_schema(cfg)
        names = _kept(schema.names)
        table = pq.read_table(path, columns=[*names, TEXT_HASH.name])
        self.hashes = table[TEXT_HASH.name].combine_chunks()
        self.table = table.select(names).cast(pa.schema([schema.field(n) for n in names], metadata=schema.metadata))
        orders = table["_order"].to_numpy()
        self.by_order = np.argsort(orders, kind="stable")
        self.orders = orders[self.by_order]
        self.ids = table["id"].to_pylist()

    @staticmethod
    def usable(path: str | Path) -> bool:
        """Whether the file is there and holds the text hashes (a key file of an earlier version does not)."""
        return os.path.exists(path) and TEXT_HASH.name in pq.read_schema(path).names

    def rows(self, orders: np.ndarray) -> np.ndarray:
        """The row of each order in the file, -1 where it has none."""
        if not len(self.orders):
            return np.full(len(orders), -1, dtype=np.int64)
        at = np.searchsorted(self.orders, orders)
        found = at < len(self.orders)
        found[found] = self.orders[at[found]] == orders[found]
        return np.where(found, self.by_order[np.minimum(at, len(self.orders) - 1)], -1)

    def reused(self, masked: list[dict], cfg: DedupConfig) -> pa.Table:
        """history_keys' table of the masked records: phase 1's rows where they serve, the rest computed."""
        rows = self.rows(np.array([int(r["_order"]) for r in masked], dtype=np.int64))
        hashes = text_hashes(masked)
        known = np.flatnonzero(rows >= 0)
        same = np.zeros(len(masked), dtype=bool)
        if len(known):
            same[known] = pc.equal(hashes.take(pa.array(known)), self.hashes.take(pa.array(rows[known]))).to_numpy(
                zero_copy_only=False)
        same &= np.array([same[i] and masked[i].get("id") == self.ids[rows[i]] for i in range(len(masked))],
                         dtype=bool)
        fresh = np.flatnonzero(~same)
        if not len(fresh):
            return self.table.take(pa.array(rows))
        computed = compute_keys([masked[i] for i in fresh.tolist()], cfg)
        parts = pa.concat_tables([self.table.take(pa.array(rows[same])), computed.select(_kept(computed.column_names))])
        # the reused rows came first, then the computed ones, each in the batch's order: back to the batch's order
        position = np.concatenate([np.flatnonzero(same), fresh])
        return parts.take(pa.array(np.argsort(position, kind="stable")))


class HistoryKeysStep(KeysStep):
    """Phase 3, after the PII step: each batch's masked keys to `write` (the shard's history work file); the
    records pass unchanged. Timed into the dedup stage, whose records are counted by DedupFilter.
    `phase1_keys`: the shard's phase-1 key file (EarlierKeys), when there is one."""

    def __init__(self, cfg: DedupConfig, write, phase1_keys: str | Path | None = None):
        super().__init__(cfg, write)
        self.phase1_keys, self._earlier = phase1_keys, None

    def keys(self, batch: list[dict]) -> pa.Table:
        if self._earlier is None:  # once per shard; False: nothing to take from
            usable = self.phase1_keys is not None and self.cfg.near and EarlierKeys.usable(self.phase1_keys)
            self._earlier = EarlierKeys(self.phase1_keys, self.cfg) if usable else False
        return history_keys(batch, self.cfg, self._earlier or None)


def index_schema(cfg: DedupConfig) -> pa.Schema:
    p = params(cfg)
    fields = [pa.field("shard", pa.string()), pa.field("row", pa.int32()),
              pa.field("exact_hi", pa.uint64()), pa.field("exact_lo", pa.uint64()), pa.field("near_mode", pa.int8())]
    if cfg.near:
        fields += [pa.field(f"band_{k:03d}", pa.uint64()) for k in range(p["bands"])]
        fields.append(pa.field("signature", pa.binary(4 * cfg.num_perm)))
    return pa.schema(fields, metadata={b"history": json.dumps(index_settings(cfg)).encode()})


def write_index(key_paths: list[Path], written: dict[str, pa.Array], cfg: DedupConfig, path: Path) -> int:
    """The index of the records written: the rows of the history work files (`key_paths`, in shard order)
    whose id is in a shard (`written`: shard path -> its id column), each named by its shard and its row there.
    Returns the rows written. A record left out of the shards (dropped at write, or cut into chunks with ids of
    their own) has no row. The record id itself stays out: it is a hash of the text as read, before the PII
    step, so an index holding it would confirm a known text was in the data."""
    schema = index_schema(cfg)
    names = sorted(written)
    shards = pa.array(names, pa.string())
    ids = pa.chunked_array([written[s] for s in names], pa.string()).combine_chunks()
    sizes = [len(written[s]) for s in names]
    shard_of = pa.array(np.repeat(np.arange(len(names), dtype=np.int32), sizes))
    row_of = pa.array(np.concatenate([np.arange(n, dtype=np.int32) for n in sizes]) if sizes
                      else np.zeros(0, np.int32))
    # every file's ids looked up in one call: index_in hashes the value set anew on each call (24 calls over the
    # ids of 1M records took 2.75 CPU-s, one call 0.18)
    key_ids = [chunk for k in key_paths for chunk in pq.read_table(k, columns=["id"])["id"].chunks]
    found = pc.index_in(pa.chunked_array(key_ids, pa.string()), value_set=ids)
    rows = start = 0
    # the index's own columns only: the ids were read above, and _order and the source stay in the work files
    columns = [f.name for f in schema if f.name not in ("shard", "row")]
    with pq.ParquetWriter(path, schema, compression="zstd") as out:
        for key_path in key_paths:
            table = pq.read_table(key_path, columns=columns)
            at = found.slice(start, table.num_rows)
            start += table.num_rows
            if at.null_count:  # records not written (dropped at write, chunked); most runs have none: no copy
                keep = at.is_valid()
                table, at = table.filter(keep), at.filter(keep)
            if not table.num_rows:
                continue
            out.write_table(pa.Table.from_arrays([shards.take(shard_of.take(at)), row_of.take(at),
                                                  *(table[name] for name in columns)], schema=schema),
                            row_group_size=1 << 16)
            rows += table.num_rows
    return rows


def read_index_settings(path: str | Path) -> dict:
    """The settings an index was written with ({} for a file that is no index)."""
    return json.loads((pq.read_metadata(path).metadata or {}).get(b"history", b"{}"))
