"""Train/validation split, deterministic per record id and seed, so a re-run or another shard count gives the
same split and exact duplicates (same id) always land on the same side.

With the language step on (filters.detect_language), the split is stratified by language: phase 1 writes each
shard's (_order, id, lang) to a small work file (`lang_ids`), `stratified_validation` picks, once for the run
and after dedup and canned answers have removed theirs, fraction * n records (rounded half up) of each
language, those with the lowest blake2b(seed:id) hash, and SplitStep is given that id set. Without languages
each record's side is `split_of`, the same hash against the fraction. User-given validation inputs go to
validation whole, and then no random fraction is taken from train.
"""
from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.core.config import SplitConfig
from pipeline.core.step import GlobalStep, Step
from pipeline.data.lang import record_lang

LANG_IDS_SCHEMA = pa.schema([("_order", pa.int64()), ("id", pa.string()), ("lang", pa.string())])
IDS_SCHEMA = pa.schema([("id", pa.string())])


def id_hash(record_id: str, seed: int) -> int:
    return int.from_bytes(hashlib.blake2b(f"{seed}:{record_id}".encode(), digest_size=8).digest(), "big")


def id_hashes(record_ids: list[str], seed: int) -> np.ndarray:
    """id_hash of each id, as uint64: the digests joined and read as big-endian numbers in one step."""
    prefix = f"{seed}:".encode()
    digests = b"".join(hashlib.blake2b(prefix + rid.encode(), digest_size=8).digest() for rid in record_ids)
    return np.frombuffer(digests, dtype=">u8").astype(np.uint64)


def split_of(record_id: str, cfg: SplitConfig) -> str:
    return "validation" if id_hash(record_id, cfg.seed) / 2**64 < cfg.validation_fraction else "train"


def lang_ids(records: list[dict]) -> pa.Table:
    """One shard's part of the stratified split: order, id and language of each record (no text)."""
    cols = ([r["_order"] for r in records], [r["id"] for r in records],
            [record_lang(r) or "und" for r in records])
    return pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(cols, LANG_IDS_SCHEMA)],
                                schema=LANG_IDS_SCHEMA)


class LanguageIdsStep(Step):
    """Phase 1's part of the stratified split: each batch's (_order, id, language) go to `write` (the shard's
    language file); the records pass unchanged. Timed into the "split" stage; its records are counted by
    SplitStep."""

    name = "split"
    config_sections = ()
    counts_records = False

    def __init__(self, write):
        self.write = write

    def process(self, batch: list[dict]) -> list[dict]:
        self.write(lang_ids(batch))
        return batch


def stratified_validation(chunks: Iterable[tuple[list[str], list[str]]], fraction: float,
                          seed: int = 0) -> tuple[set[str], dict[str, dict[str, int]]]:
    """The ids of a validation split stratified by language, and per language its records and validation
    records. `chunks` yields (ids, langs) lists and is iterated twice (counts first, then the choice), so that
    memory holds one chunk and the chosen records, not the whole run. From each language the fraction * n
    records (rounded half up) with the lowest blake2b(seed:id) hash are chosen: the same ids and seed give the
    same split in any order and chunking. Copies of one id share its hash; a chosen id takes all of them
    along (a copy past the boundary goes too), so the share is exact when ids are distinct (exact dedup on)."""
    totals: Counter = Counter()
    for _ids, langs in chunks:
        totals.update(lang or "und" for lang in langs)
    want = {lang: int(fraction * n + 0.5) for lang, n in totals.items()}
    best: dict[str, tuple[np.ndarray, list[str]]] = {}
    for ids, langs in chunks:
        grouped: dict[str, list[str]] = {}
        for rid, lang in zip(ids, langs):
            grouped.setdefault(lang or "und", []).append(rid)
        for lang, group in grouped.items():
            k = want[lang]
            if not k:
                continue
            old_h, old_ids = best.get(lang, (np.zeros(0, np.uint64), []))
            hashes = np.concatenate([old_h, id_hashes(group, seed)])
            pool = old_ids + group
            if len(pool) > k:
                keep = np.argpartition(hashes, k - 1)[:k]
                hashes, pool = hashes[keep], [pool[i] for i in keep.tolist()]
            best[lang] = (hashes, pool)
    chosen = {rid for _h, pool in best.values() for rid in pool}
    per_lang = {lang: {"records": n, "validation": min(want[lang], n)} for lang, n in sorted(totals.items())}
    return chosen, per_lang


class LangIdFiles:
    """The phase-1 (_order, id, lang) files as (ids, langs) chunks, one per shard, without the records dedup
    and the canned-answer cap removed (read per shard: their _order ranges, never the whole audit at once).
    Iterable more than once."""

    def __init__(self, paths: list[str], removed_paths: list[str], order_shift: int):
        self.paths, self.order_shift = paths, order_shift
        self.removed_paths = [p for p in removed_paths if p and Path(p).exists()]
        self._removed: np.ndarray | None = None

    def removed(self) -> np.ndarray:
        """The removed records' _order, sorted: read once (8 bytes a removed record), not per shard and pass."""
        if self._removed is None:
            self._removed = np.sort(np.concatenate(
                [np.zeros(0, np.int64)]
                + [pq.read_table(p, columns=["_order"]).column("_order").to_numpy() for p in self.removed_paths]))
        return self._removed

    def __iter__(self):
        for path in self.paths:
            table = pq.read_table(path, columns=["_order", "id", "lang"])
            if not table.num_rows:
                continue
            orders = table.column("_order").to_numpy()
            shard = int(orders[0]) >> self.order_shift
            removed = self.removed()
            lo, hi = np.searchsorted(removed, [shard << self.order_shift, (shard + 1) << self.order_shift])
            if self.removed_paths:
                keep = ~np.isin(orders, removed[lo:hi])
                table = table.filter(pa.array(keep))
            yield table.column("id").to_pylist(), table.column("lang").to_pylist()


def choose_validation(lang_paths: list[str], removed_paths: list[str], cfg: SplitConfig, ids_path: str,
                      order_shift: int) -> dict:
    """The run's stratified validation ids, written to ids_path (sorted: the same split, the same file and
    hash, so a resumed run reuses its phase-3 work). Returns the report's `split` section."""
    ids, per_lang = stratified_validation(LangIdFiles(lang_paths, removed_paths, order_shift),
                                          cfg.validation_fraction, cfg.seed)
    pq.write_table(pa.table({"id": pa.array(sorted(ids), pa.string())}, schema=IDS_SCHEMA), ids_path,
                   compression="zstd")
    return {"method": "stratified_by_language", "languages": per_lang}


class ValidationChoice(GlobalStep):
    """Phase 2's part of the split stage: the stratified validation ids of the whole run (choose_validation)
    from every shard's language file, without what dedup and the canned-answer cap removed (`removed_paths`,
    their decision files); SplitStep reads the ids file it writes."""

    name = "split"
    config_sections = ("split",)

    def __init__(self, cfg: SplitConfig, lang_paths: list[str], removed_paths: list[str | None], ids_path: str,
                 order_shift: int):
        self.cfg, self.lang_paths, self.decision, self.order_shift = cfg, lang_paths, ids_path, order_shift
        self.removed_paths = removed_paths  # None for a stage that is off

    def run(self) -> dict:
        return choose_validation(self.lang_paths, self.removed_paths, self.cfg, self.decision, self.order_shift)


def read_validation_ids(path: str) -> set[str]:
    return set(pq.read_table(path, columns=["id"]).column("id").to_pylist())


class SplitStep(Step):
    """Sets rec["_split"]. Records from user-given validation inputs ("_eval") go to validation whole;
    when such inputs are given, the random validation fraction is not taken from train. With
    `validation_ids` (the stratified choice) a record is in validation when its id is in the set; without,
    by its own hash (split_of)."""

    name = "split"
    config_sections = ("split",)

    def __init__(self, cfg: SplitConfig, has_eval_inputs: bool, validation_ids: set[str] | None = None):
        self.cfg, self.has_eval_inputs, self.validation_ids = cfg, has_eval_inputs, validation_ids

    def process(self, batch: list[dict]) -> list[dict]:
        chosen = self.validation_ids
        for rec in batch:
            if rec.get("_eval"):
                rec["_split"] = "validation"
            elif self.has_eval_inputs:
                rec["_split"] = "train"
            elif chosen is not None:
                rec["_split"] = "validation" if rec["id"] in chosen else "train"
            else:
                rec["_split"] = split_of(rec["id"], self.cfg)
            self.stats.add(f"splits.{rec['_split']}")
        return batch
