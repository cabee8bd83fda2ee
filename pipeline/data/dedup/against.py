"""`--against`: the records of a run that duplicate a record of an earlier dataset, from the run's masked keys
(history.HistoryKeysStep) and the earlier datasets' dedup indexes (history.write_index); no text is read.

    exact   the earlier content hashes sorted once; each new hash looked up (searchsorted)
    near    band by band, as the in-run dedup (clusters.py): the earlier band column sorted, each new record's
            band hash looked up; a new record in a bucket of earlier records is proposed with up to
            BUCKET_ALL_PAIRS of them (a template's bucket can hold a tenth of a corpus; true duplicates share
            the bands on their own text too); proposed pairs verified by estimated Jaccard >= threshold

The lookup runs as steps (Lookup) that hand their results on as files in a folder, so a cluster runs it as
tasks: exact_join, near_candidates (which records of either side share a bucket: the only signatures loaded,
into memory-mapped files), near_join per group of bands (independent tasks), and removals, which merges them.
Each step's memory is a few arrays per record of either side (one band column at a time).
Each removed record names the earlier record it duplicates: the one with the highest estimated similarity
(ties: the first of the earlier indexes, in the order given).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.core.config import DedupConfig
from pipeline.data.dedup.clusters import BUCKET_ALL_PAIRS, REMOVED_SCHEMA, signature_array
from pipeline.data.dedup.history import index_settings, read_index_settings
from pipeline.data.dedup.params import params

REASON = "earlier_duplicate"
AUDIT_SCHEMA = pa.schema([*REMOVED_SCHEMA, pa.field("duplicate_of_manifest", pa.string()),
                          pa.field("duplicate_of_shard", pa.string()), pa.field("duplicate_of_row", pa.int32())])


class Earlier(NamedTuple):
    """An earlier dataset's index: its manifest's run id and the local path of its dedup_index.parquet."""
    manifest_id: str
    index_path: str


class _Files:
    """Parquet files read column by column as one table; rows addressed by their position in it."""

    def __init__(self, paths: list[str]):
        self.paths = list(paths)
        self.row_groups = []
        for path in self.paths:
            meta = pq.read_metadata(path)
            self.row_groups.append([meta.row_group(i).num_rows for i in range(meta.num_row_groups)])
        self.bounds = np.concatenate(([0], np.cumsum([sum(rg) for rg in self.row_groups]))).astype(np.int64)
        self.n = int(self.bounds[-1])

    def column(self, name: str) -> np.ndarray:
        parts = [pq.read_table(p, columns=[name]).column(0).to_numpy(zero_copy_only=False) for p in self.paths]
        return np.concatenate(parts) if parts else np.zeros(0)

    def take(self, rows: np.ndarray, columns: list[str]) -> pa.Table:
        """The given columns of the given rows (sorted, unique), in that order."""
        parts = []
        for i, path in enumerate(self.paths):
            lo, hi = np.searchsorted(rows, self.bounds[i:i + 2])
            if hi > lo:
                parts.append(pq.read_table(path, columns=columns).take(pa.array(rows[lo:hi] - self.bounds[i])))
        return pa.concat_tables(parts) if parts else pq.read_schema(self.paths[0]).empty_table().select(columns)

    def signatures(self, rows: np.ndarray, num_perm: int, path: str) -> np.ndarray:
        """Signatures of the given (sorted, unique) rows, a row group at a time, into the .npy file `path`
        (a memory map: on disk, not in this process's memory, and readable by the tasks that come after)."""
        if not len(rows):  # a memory map cannot be empty
            np.save(path, np.zeros((0, num_perm), dtype=np.uint32))
            return np.load(path)
        out = np.lib.format.open_memmap(path, mode="w+", dtype=np.uint32, shape=(len(rows), num_perm))
        for i, file in enumerate(self.paths):
            start = int(self.bounds[i])
            f = pq.ParquetFile(file, pre_buffer=False)
            for rg, n in enumerate(self.row_groups[i]):
                lo, hi = np.searchsorted(rows, [start, start + n])
                if hi > lo:
                    values = signature_array(f.read_row_group(rg, columns=["signature"]).column(0), num_perm)
                    out[lo:hi] = values[rows[lo:hi] - start]
                start += n
        out.flush()
        return out


def check_index(path: str, cfg: DedupConfig) -> None:
    """ValueError when the index at `path` was keyed with other settings than this run's dedup."""
    have, want = read_index_settings(path), index_settings(cfg)
    if not have:
        raise ValueError(f"{path} is no dedup index")
    wrong = sorted(k for k in want if have.get(k) != want[k])
    if wrong:
        raise ValueError(f"{path}: keyed with other dedup settings ({', '.join(wrong)}) than this run's; "
                         "run with the earlier dataset's dedup settings")


def _exact_matches(new: _Files, old: _Files) -> np.ndarray:
    """Per new record, the earlier row with the same content hash, else -1."""
    match = np.full(new.n, -1, dtype=np.int64)
    ohi, olo = old.column("exact_hi"), old.column("exact_lo")
    order = np.lexsort((olo, ohi))
    shi, slo = ohi[order], olo[order]
    del ohi, olo
    nhi, nlo = new.column("exact_hi"), new.column("exact_lo")
    left, right = np.searchsorted(shi, nhi, "left"), np.searchsorted(shi, nhi, "right")
    cand, d = np.flatnonzero(right > left), 0
    while len(cand):  # equal high halves are nearly always one record: one step, rarely more
        at = left[cand] + d
        ok = slo[at] == nlo[cand]
        match[cand[ok]] = order[at[ok]]
        cand = cand[~ok]
        cand = cand[left[cand] + d + 1 < right[cand]]
        d += 1
    return match


def _bucket_pairs(sorted_values: np.ndarray, values: np.ndarray, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """(i, j): each element i of `values` with up to `cap` positions j of its value in `sorted_values`."""
    left = np.searchsorted(sorted_values, values, "left")
    count = np.minimum(np.searchsorted(sorted_values, values, "right") - left, cap)
    i = np.repeat(np.arange(len(values)), count)
    start = np.cumsum(count) - count
    j = left[i] + (np.arange(len(i)) - start[i])
    return i, j


class BandGroup(NamedTuple):
    """The LSH bands one near-join task compares (near_join)."""
    index: int
    bands: tuple[int, ...]


class Lookup(NamedTuple):
    """One lookup of new keys in earlier indexes, run as steps that leave their results in `folder` (shared by
    every worker of a cluster): exact_join, then near_candidates, then near_join per BandGroup (independent of
    each other), then removals. find_earlier runs them one after another."""
    new_paths: tuple[str, ...]
    earlier: tuple[Earlier, ...]
    cfg: DedupConfig
    folder: str

    def files(self) -> tuple[_Files, _Files]:
        return _Files(list(self.new_paths)), _Files([e.index_path for e in self.earlier])

    def path(self, name: str) -> str:
        return os.path.join(self.folder, name)

    def band_groups(self) -> list[BandGroup]:
        """NEAR_TASKS groups of consecutive bands (none without the near half)."""
        if not self.cfg.near:
            return []
        bands = params(self.cfg)["bands"]
        parts = np.array_split(np.arange(bands), min(NEAR_TASKS, bands))
        return [BandGroup(g, tuple(int(k) for k in part)) for g, part in enumerate(parts)]


NEAR_TASKS = 3  # near_join tasks per lookup: each reads its bands' columns; more tasks, more per-task overhead


def exact_join(lookup: Lookup) -> None:
    """exact.npy: per new record, the earlier row (of all earlier indexes in order) with its content hash, or -1."""
    new, old = lookup.files()
    Path(lookup.folder).mkdir(parents=True, exist_ok=True)
    if lookup.cfg.exact and new.n and old.n:
        match = _exact_matches(new, old)
    else:
        match = np.full(new.n, -1, dtype=np.int64)
    np.save(lookup.path("exact.npy"), match)


def near_candidates(lookup: Lookup) -> None:
    """Pass 1 of the near join: the records of either side that share a bucket with the other in some band,
    those not matched exactly yet on the new side (new_live.npy, old_live.npy, rows in sorted order), and their
    signatures (new_sigs.npy, old_sigs.npy): the only signatures the near join loads, read once here."""
    if not lookup.cfg.near:
        return
    new, old = lookup.files()
    cfg = lookup.cfg
    match = np.load(lookup.path("exact.npy"))
    new_live = np.flatnonzero((match < 0) & (new.column("near_mode") > 0)) if new.n and old.n else np.zeros(0, int)
    old_live = np.flatnonzero(old.column("near_mode") > 0) if new.n and old.n else np.zeros(0, int)
    del match
    new_in = np.zeros(len(new_live), dtype=bool)
    old_in = np.zeros(len(old_live), dtype=bool)
    for k in range(params(cfg)["bands"] if len(new_live) and len(old_live) else 0):
        ob, nb = old.column(f"band_{k:03d}")[old_live], new.column(f"band_{k:03d}")[new_live]
        order = np.argsort(ob, kind="stable")
        i, j = _bucket_pairs(ob[order], nb, BUCKET_ALL_PAIRS)
        new_in[i] = True
        old_in[order[j]] = True
    for side, files, live, within in (("new", new, new_live, new_in), ("old", old, old_live, old_in)):
        np.save(lookup.path(f"{side}_live.npy"), live[within])
        files.signatures(live[within], cfg.num_perm, lookup.path(f"{side}_sigs.npy"))


def near_join(group: BandGroup, lookup: Lookup) -> None:
    """Pass 2 of the near join for the bands of `group`: per new live record, the earlier live record with the
    most equal signature values at or above the threshold (ties: the lower row) in these bands; saved as
    near-NNN.npz (best: index into old_live or -1, equal: its count, proposed: the pairs compared)."""
    new, old = lookup.files()
    cfg = lookup.cfg
    new_live, old_live = np.load(lookup.path("new_live.npy")), np.load(lookup.path("old_live.npy"))
    new_sigs = np.load(lookup.path("new_sigs.npy"), mmap_mode="r")
    old_sigs = np.load(lookup.path("old_sigs.npy"), mmap_mode="r")
    need = int(np.ceil(cfg.threshold * cfg.num_perm - 1e-9)) if cfg.verify else 0
    best = np.full(len(new_live), -1, dtype=np.int64)
    best_equal = np.full(len(new_live), -1, dtype=np.int64)
    proposed = 0
    for k in group.bands if len(new_live) and len(old_live) else ():
        ob, nb = old.column(f"band_{k:03d}")[old_live], new.column(f"band_{k:03d}")[new_live]
        order = np.argsort(ob, kind="stable")
        i, j = _bucket_pairs(ob[order], nb, BUCKET_ALL_PAIRS)
        j = order[j]
        proposed += len(i)
        for s in range(0, len(i), 1 << 15):
            a, b = i[s:s + (1 << 15)], j[s:s + (1 << 15)]
            equal = np.count_nonzero(new_sigs[a] == old_sigs[b], axis=1)
            better = (equal >= need) & ((equal > best_equal[a]) | ((equal == best_equal[a]) & (b < best[a])))
            # one new record may appear twice in a chunk: the best of them wins (sorted, last write wins)
            a, b, equal = a[better], b[better], equal[better]
            by = np.lexsort((-b, equal, a))
            best[a[by]], best_equal[a[by]] = b[by], equal[by]
    np.savez(lookup.path(f"near-{group.index:03d}.npz"), best=best, equal=best_equal, proposed=proposed)


def _near_matches(lookup: Lookup, n: int, stats: dict) -> tuple[np.ndarray, np.ndarray]:
    """The near_join tasks' results as one: per new record the most similar earlier row at or above the
    threshold (-1: none; the same best as one pass over every band would keep) and the estimated similarity."""
    new_live, old_live = np.load(lookup.path("new_live.npy")), np.load(lookup.path("old_live.npy"))
    stats["signatures_loaded"] = int(len(new_live) + len(old_live))
    best = np.full(len(new_live), -1, dtype=np.int64)
    best_equal = np.full(len(new_live), -1, dtype=np.int64)
    for group in lookup.band_groups():
        with np.load(lookup.path(f"near-{group.index:03d}.npz")) as part:
            b, equal = part["best"], part["equal"]
            stats["proposed_pairs"] += int(part["proposed"])
        better = (b >= 0) & ((equal > best_equal) | ((equal == best_equal) & (b < best)))
        best[better], best_equal[better] = b[better], equal[better]
    found = best >= 0
    stats["verified_pairs"] = int(found.sum())
    near = np.full(n, -1, dtype=np.int64)
    near[new_live[found]] = old_live[best[found]]
    sim = np.zeros(n, dtype=np.float32)
    sim[new_live[found]] = best_equal[found] / lookup.cfg.num_perm
    return near, sim


def find_earlier(new_paths: list[str], earlier: list[Earlier], cfg: DedupConfig,
                 work_dir: str) -> tuple[pa.Table, dict]:
    """The lookup's steps (Lookup) one after another in this process, in a folder of `work_dir`."""
    lookup = Lookup(tuple(new_paths), tuple(earlier), cfg, os.path.join(work_dir, "against-lookup"))
    exact_join(lookup)
    near_candidates(lookup)
    for group in lookup.band_groups():
        near_join(group, lookup)
    return removals(lookup)


def removals(lookup: Lookup) -> tuple[pa.Table, dict]:
    """The audit rows (AUDIT_SCHEMA, reason earlier_duplicate) of the new records that duplicate an earlier
    dataset's record, in _order order, and a report (counts per earlier dataset and the lookup's counters),
    from the results the other steps left in the lookup's folder."""
    cfg, earlier = lookup.cfg, lookup.earlier
    for e in earlier:
        check_index(e.index_path, cfg)
    new, old = lookup.files()
    stats = {"records": new.n, "earlier_records": old.n, "proposed_pairs": 0, "verified_pairs": 0,
             "signatures_loaded": 0}
    if not new.n or not old.n:
        return AUDIT_SCHEMA.empty_table(), {**stats, "removed": 0, "by_earlier": {}}
    match = np.load(lookup.path("exact.npy"))
    sim = np.where(match >= 0, 1.0, 0.0).astype(np.float32)
    if cfg.near:
        near, near_sim = _near_matches(lookup, new.n, stats)
        sim = np.where(near >= 0, near_sim, sim)
        match = np.where(near >= 0, near, match)
    removed = np.flatnonzero(match >= 0)
    mine = new.take(removed, ["_order", "id", "source_file", "source_line"])
    of = match[removed]
    theirs = old.take(np.unique(of), ["shard", "row"])
    at = np.searchsorted(np.unique(of), of)
    source = np.searchsorted(old.bounds, of, side="right") - 1  # which earlier index
    manifest_ids = np.array([e.manifest_id for e in earlier], dtype=object)[source]
    table = pa.table({
        "_order": mine["_order"], "id": mine["id"], "reason": pa.array([REASON] * len(removed), pa.string()),
        "duplicate_of": pa.nulls(len(removed), pa.string()), "duplicate_of_order": pa.nulls(len(removed), pa.int64()),
        "similarity": pa.array(sim[removed], pa.float32()),
        "source_file": mine["source_file"], "source_line": mine["source_line"],
        "duplicate_of_file": pa.nulls(len(removed), pa.string()),
        "duplicate_of_line": pa.nulls(len(removed), pa.int64()),
        "duplicate_of_manifest": pa.array(manifest_ids.tolist(), pa.string()),
        "duplicate_of_shard": theirs["shard"].take(pa.array(at)),
        "duplicate_of_row": theirs["row"].take(pa.array(at)),
    }, schema=AUDIT_SCHEMA).sort_by("_order")
    by_earlier = dict.fromkeys((e.manifest_id for e in earlier), 0)  # one dataset named twice: summed
    for i, e in enumerate(earlier):
        by_earlier[e.manifest_id] += int((source == i).sum())
    return table, {**stats, "removed": len(removed), "by_earlier": by_earlier}
