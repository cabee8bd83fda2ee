"""Step 1, per shard: the small key table of each record (no text)."""
from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from pipeline.core.config import DedupConfig
from pipeline.core.records import PLAIN_FIELD, parquet_options
from pipeline.core.step import Step
from pipeline.data.dedup.minhash import band_hashes, minhash_signatures
from pipeline.data.dedup.params import KEY_SETTINGS, params
from pipeline.data.dedup.sketch import bottom_k, distinct_sorted
from pipeline.data.dedup.text import (
    encode_texts,
    exact_hashes,
    exact_text,
    near_source_text,
    shingle_hashes,
    trainer_text,
    turns,
)

RECORD_BATCH = 1024  # records shingled together
GROUP_CHARS = 1 << 22  # characters shingled together (a longer record alone)


def key_schema(cfg: DedupConfig) -> pa.Schema:
    p = params(cfg)
    fields = [
        pa.field("_order", pa.int64()), pa.field("id", pa.string()), pa.field("_eval", pa.bool_()),
        pa.field("exact_hi", pa.uint64()), pa.field("exact_lo", pa.uint64()),
        pa.field("length", pa.int64()), pa.field("turns", pa.int32()), pa.field("near_mode", pa.int8()),
        pa.field("source_file", pa.string()), pa.field("source_line", pa.int64()),
    ]
    if cfg.near:  # random hashes: written plain
        fields += [pa.field(f"band_{k:03d}", pa.uint64(), metadata=PLAIN_FIELD) for k in range(p["bands"])]
        # num_perm little-endian uint32
        fields.append(pa.field("signature", pa.binary(4 * cfg.num_perm), metadata=PLAIN_FIELD))
        # sketch.bottom_k: up to SKETCH_SIZE little-endian uint32 (binary: read 4 times faster than a list)
        fields.append(pa.field("sketch", pa.binary(), metadata=PLAIN_FIELD))
    return pa.schema(fields, metadata={b"dedup": json.dumps({k: p[k] for k in KEY_SETTINGS}).encode()})


def tools_hash(record: dict) -> int:
    """64-bit hash of a record's tool definitions, 0 without tools."""
    tools = record.get("tools")
    if not tools:
        return 0
    return xxhash.xxh3_64_intdigest(json.dumps(tools, ensure_ascii=False, separators=(",", ":")).encode()) or 1


def _text_groups(records: list[dict]):
    """(lo, hi, trainer texts of records[lo:hi]): at most RECORD_BATCH records and about GROUP_CHARS
    characters a group (a longer record alone). Hashing holds about 70 bytes per character of its group at
    its peak: two records of 8 MiB in one batch took 1.1 GB, one at a time half that."""
    for start in range(0, len(records), RECORD_BATCH):
        texts = [trainer_text(r) for r in records[start:start + RECORD_BATCH]]
        lo = chars = 0
        for i, text in enumerate(texts):
            if i > lo and chars + len(text) > GROUP_CHARS:
                yield start + lo, start + i, texts[lo:i]
                lo, chars = i, 0
            chars += len(text)
        yield start + lo, start + len(texts), texts[lo:]


# phase 1's key files only: xxh3_128 of each record's exact_text as it is, so that phase 3 knows the records the
# PII step left as they were without keying them again (history.EarlierKeys)
TEXT_HASH = pa.field("text_hash", pa.binary(16), metadata=PLAIN_FIELD)


def text_hashes(records: list[dict]) -> pa.Array:
    digest = xxhash.xxh3_128_digest
    blob = b"".join([digest(exact_text(r).encode("utf-8", "surrogatepass")) for r in records])
    return pa.FixedSizeBinaryArray.from_buffers(TEXT_HASH.type, len(records), [None, pa.py_buffer(blob)])


def compute_keys(records: list[dict], cfg: DedupConfig) -> pa.Table:
    """Dedup keys of one shard's records: small, no text. Deterministic per record."""
    schema = key_schema(cfg)
    p = params(cfg)
    n = len(records)
    exact = np.zeros((n, 2), dtype=np.uint64)
    lengths = np.zeros(n, dtype=np.int64)
    modes = np.zeros(n, dtype=np.int8)
    sigs = np.zeros((n, cfg.num_perm), dtype=np.uint32) if cfg.near else None
    sketch_parts, sketch_sizes = [], np.zeros(n, dtype=np.int64)
    for lo, hi, full in _text_groups(records):
        batch = records[lo:hi]
        lengths[lo:hi] = [len(t) for t in full]
        if cfg.case_fold:
            full = [t.casefold() for t in full]
        enc = encode_texts(full)
        if any(r.get("tools") for r in batch):  # the tools are part of the exact key (text.exact_text)
            with_tools = [exact_text(r) for r in batch]
            with_tools = [t.casefold() for t in with_tools] if cfg.case_fold else with_tools
            exact[lo:hi] = exact_hashes(with_tools, cfg.punctuation_fold)
        else:
            exact[lo:hi] = exact_hashes(full, cfg.punctuation_fold, enc)
        if cfg.near:
            if cfg.scope == "all":
                hashes, counts, m = shingle_hashes(full, cfg.ngram, cfg.char_ngram, enc)
            else:
                near = [near_source_text(r, cfg.scope) for r in batch]
                near = [t.casefold() for t in near] if cfg.case_fold else near
                hashes, counts, m = shingle_hashes(near, cfg.ngram, cfg.char_ngram)
            del enc
            modes[lo:hi] = m
            hashes, counts = distinct_sorted(hashes, counts)
            sigs[lo:hi] = minhash_signatures(hashes, counts, cfg.num_perm)
            values, sketch_sizes[lo:hi] = bottom_k(hashes, counts, p["sketch_size"])
            sketch_parts.append(values)
    sources = [r.get("source") or {} for r in records]
    columns = [
        pa.array([int(r["_order"]) for r in records], pa.int64()),
        pa.array([r.get("id") for r in records], pa.string()),
        pa.array([bool(r.get("_eval", False)) for r in records], pa.bool_()),
        pa.array(exact[:, 0]), pa.array(exact[:, 1]),
        pa.array(lengths), pa.array([turns(r) for r in records], pa.int32()), pa.array(modes),
        pa.array([s.get("file") for s in sources], pa.string()),
        pa.array([s.get("line") for s in sources], pa.int64()),
    ]
    if cfg.near:
        bh = band_hashes(sigs, p["bands"], p["rows"])
        # Records with different tool definitions are never near duplicates either: their band hashes are
        # keyed by the tools, so they never share an LSH bucket (records without tools are unchanged).
        salt = np.array([tools_hash(r) for r in records], dtype=np.uint64)
        if salt.any():
            bh ^= salt[:, None]
        columns += [pa.array(bh[:, k]) for k in range(p["bands"])]
        columns.append(pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(4 * cfg.num_perm), n, [None, pa.py_buffer(sigs.astype("<u4", copy=False).tobytes())]))
        offsets = 4 * np.concatenate(([0], np.cumsum(sketch_sizes))).astype(np.int32)
        values = np.concatenate(sketch_parts) if sketch_parts else np.zeros(0, np.uint32)
        columns.append(pa.BinaryArray.from_buffers(pa.binary(), n, [
            None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(values.astype("<u4", copy=False).tobytes())]))
    return pa.Table.from_arrays(columns, schema=schema)


def write_keys(table: pa.Table, path: str | os.PathLike) -> str:
    """Write one shard's keys (what the runner does with compute_keys' table)."""
    pq.write_table(table, str(path), row_group_size=1 << 16, **parquet_options(table.schema))
    return str(path)


class KeysStep(Step):
    """Phase 1's part of the dedup stage: each batch's key table goes to `write` (the shard's key file); the
    records pass unchanged. Timed into the "dedup" stage; its records are counted where duplicates are
    dropped (clusters.DedupFilter)."""

    name = "dedup"
    config_sections = ("dedup",)
    counts_records = False

    def __init__(self, cfg: DedupConfig, write):
        self.cfg, self.write = cfg, write

    def keys(self, batch: list[dict]):
        """The batch's key table, with the text hashes (history.HistoryKeysStep takes other keys)."""
        return compute_keys(batch, self.cfg).append_column(TEXT_HASH, text_hashes(batch))

    def process(self, batch: list[dict]) -> list[dict]:
        self.write(self.keys(batch))
        return batch
