"""Step 2, global: duplicate decisions from the per-shard key files, with memory bounded by the small columns.

Records are identified by their dense position (rank of ``_order``). The global step holds a few int arrays
per record (order, eval flag, content hash, length, turns), one LSH band column and its proposed pairs at a
time, the verified pairs, and the MinHash signatures of the records that share a band with another only
(memory-mapped in ``work_dir`` when large).

    exact groups    sort by the 128-bit content hash; group representative = smallest position
    LSH candidates  per band: sort the band hashes of the representatives; a bucket is a run of equal hashes
    verification    estimated Jaccard (share of equal signature values) >= threshold
    clusters        connected components of exact + verified near edges (vectorized union-find)
    decisions       cluster with a validation record: every train record removed (validation_leak);
                    otherwise one record kept by cfg.keep, the others removed (exact_ or near_duplicate)

Bands are taken one at a time and the clusters updated after each batch of verifications, so a proposed pair
whose records are already in one cluster is not verified (it cannot change the clusters). A bucket of up to
BUCKET_ALL_PAIRS members proposes every pair. A larger one proposes each member with the bucket's first
member; if at least LARGE_BUCKET_MIN_ALIKE of them match it (or are in its cluster already), the bucket is a
cluster of duplicates and each member is also proposed with its LARGE_BUCKET_WINDOW predecessors; otherwise
it is a bucket of records that share template text only (one such bucket can hold a tenth of a templated
corpus, its pairs just below the threshold) and its verified pairs are dropped: there they are mostly pairs
passing verification by estimation error, which would chain unrelated records into one cluster, while true
duplicates also share the bands that fall on their own text (5.5 of 21 bands on average at Jaccard 0.8), small
buckets. So a band costs at most max((BUCKET_ALL_PAIRS - 1) / 2, 1 + LARGE_BUCKET_WINDOW) verifications per
record, and time and memory grow linearly with the records whatever the duplicate rate.
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.core.config import DedupConfig
from pipeline.core.step import GlobalStep, Step
from pipeline.data.dedup.params import KEY_SETTINGS, REASONS, params, sketch_window
from pipeline.data.dedup.sketch import gather, pair_jaccard, sketch_arrays
from pipeline.data.normalize import ORDER_SHIFT

BUCKET_ALL_PAIRS = 64  # LSH buckets up to this size propose all pairs
LARGE_BUCKET_WINDOW = 63  # a large bucket of duplicates: each member also with this many predecessors
LARGE_BUCKET_MIN_ALIKE = 0.2  # share of a large bucket's members matching its first member for it to count
VERIFY_CHUNK = 32768  # candidate pairs verified per numpy chunk
SIGNATURES_IN_MEMORY = 1 << 30  # bytes of signatures held in memory; beyond, a memory map in work_dir
# bytes of pass 1's shared buckets kept for pass 2 (a band past it is read from the key files again)
SHARED_BANDS_IN_MEMORY = 1 << 27
EXAMPLE_CLUSTERS = 5
EXAMPLE_MEMBERS = 10
_U64 = np.uint64

REMOVED_SCHEMA = pa.schema([
    pa.field("_order", pa.int64()), pa.field("id", pa.string()), pa.field("reason", pa.string()),
    pa.field("duplicate_of", pa.string()), pa.field("duplicate_of_order", pa.int64()),
    pa.field("similarity", pa.float32()),
    # where the removed record and the kept one it duplicates came from (file as in source.file: a label where
    # the file name is redacted; line as in source.line), so a removal can be checked in the input
    pa.field("source_file", pa.string()), pa.field("source_line", pa.int64()),
    pa.field("duplicate_of_file", pa.string()), pa.field("duplicate_of_line", pa.int64()),
])


@dataclass
class DedupResult:
    """removed: _order, id, reason, duplicate_of, duplicate_of_order, similarity (estimated Jaccard with
    duplicate_of; 1.0 for the same normalized content), source_file/source_line of the removed record and
    duplicate_of_file/duplicate_of_line of the kept one, sorted by _order. report: JSON-serializable."""

    removed: pa.Table
    report: dict = field(default_factory=dict)


class _Keys:
    """The key files of a run, read column by column, rows addressed by dense position."""

    META = ("_order", "_eval", "exact_hi", "exact_lo", "length", "turns", "near_mode")

    def __init__(self, key_paths: list[str], cfg: DedupConfig, p: dict):
        self.paths = list(key_paths)
        expect = {k: p[k] for k in KEY_SETTINGS}
        self.row_groups: list[list[int]] = []
        for path in self.paths:
            meta = pq.read_metadata(path)
            self.row_groups.append([meta.row_group(i).num_rows for i in range(meta.num_row_groups)])
            settings = json.loads((meta.metadata or {}).get(b"dedup", b"{}"))
            if cfg.near and not settings.get("near"):
                raise ValueError(f"{path}: dedup keys computed without near dedup; compute them with dedup.near on")
            wrong = {k: (settings.get(k), v) for k, v in expect.items() if k != "near" and settings.get(k) != v}
            if wrong:
                raise ValueError(f"{path}: dedup keys computed with other settings {wrong} (file, now)")
        self.sizes = np.array([sum(rg) for rg in self.row_groups], dtype=np.int64)
        self.bounds = np.concatenate(([0], np.cumsum(self.sizes)))
        self.n = int(self.bounds[-1])
        if self.n >= 1 << 32:
            raise ValueError("more than 2^32 records in one dedup run")
        order = self.column("_order", positions=False)
        self.row_of_pos = np.argsort(order, kind="stable")  # row: index in the concatenation of the files
        self.pos_of_row = np.empty(self.n, dtype=np.int64)
        self.pos_of_row[self.row_of_pos] = np.arange(self.n)
        self.order = order[self.row_of_pos]
        if self.n > 1 and not (self.order[1:] > self.order[:-1]).all():
            raise ValueError("_order values are not unique across the key files")

    def _open(self, i: int) -> pq.ParquetFile:
        # Opened per read: an open ParquetFile keeps the buffers of its last read alive. No pre_buffer: it
        # would load the column chunks of all row groups read at once before decoding any.
        return pq.ParquetFile(self.paths[i], pre_buffer=False)

    def column(self, name: str, positions: bool = True) -> np.ndarray:
        """One column of every file, concatenated; in position order unless positions=False."""
        parts = []
        for i in range(len(self.paths)):
            with self._open(i) as f:
                parts.append(f.read(columns=[name]).column(0).to_numpy(zero_copy_only=False))
        values = np.concatenate(parts) if parts else np.zeros(0)
        return values[self.row_of_pos] if positions else values

    def _by_row_group(self, positions: np.ndarray, column: str):
        """For each row group holding some of the (sorted, unique) positions: (indices into positions, their rows
        in the row group, the row group's `column`). The rows are sorted once and sliced per row group: one row
        group per runner batch, so a mask per row group over all positions would grow with records x batches."""
        rows = self.row_of_pos[positions]
        by_row = np.argsort(rows, kind="stable")
        sorted_rows = rows[by_row]
        for i, groups in enumerate(self.row_groups):
            start = int(self.bounds[i])
            with self._open(i) as f:
                for rg, rg_rows in enumerate(groups):
                    lo, hi = np.searchsorted(sorted_rows, [start, start + rg_rows])
                    sel = by_row[lo:hi]
                    if len(sel):
                        yield sel, rows[sel] - start, f.read_row_group(rg, columns=[column]).column(0)
                    start += rg_rows

    def signatures(self, positions: np.ndarray, num_perm: int, work_dir: str) -> np.ndarray:
        """Signatures of the given (sorted, unique) positions, in that order: row i is positions[i]."""
        size = len(positions) * num_perm * 4
        if size > SIGNATURES_IN_MEMORY:
            Path(work_dir).mkdir(parents=True, exist_ok=True)
            path = os.path.join(work_dir, f"dedup-signatures-{os.getpid()}.npy")
            out = np.lib.format.open_memmap(path, mode="w+", dtype=np.uint32, shape=(len(positions), num_perm))
            os.unlink(path)  # the mapping stays valid; the file goes when it is closed
        else:
            out = np.empty((len(positions), num_perm), dtype=np.uint32)
        for sel, local, column in self._by_row_group(positions, "signature"):
            out[sel] = signature_array(column, num_perm)[local]
        return out

    def sketches(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sketches of the given (sorted, unique) positions: (values, offsets), sketch i of positions[i] being
        values[offsets[i]:offsets[i + 1]]."""
        sizes = np.zeros(len(positions), dtype=np.int64)
        parts = []  # (indices into positions, their values)
        for sel, local, column in self._by_row_group(positions, "sketch"):
            values, offsets = sketch_arrays(column)
            sizes[sel] = offsets[local + 1] - offsets[local]
            parts.append((sel, gather(values, offsets, local)))
        offsets = np.concatenate(([0], np.cumsum(sizes)))
        values = np.empty(int(offsets[-1]), dtype=np.uint32)
        for sel, part in parts:
            lens = sizes[sel]
            values[np.repeat(offsets[sel] - (np.cumsum(lens) - lens), lens) + np.arange(len(part))] = part
        return values, offsets

    def lookup(self, positions: np.ndarray, columns: list[str]) -> dict[int, tuple]:
        """position -> values of the given columns, for a few positions."""
        rows = self.row_of_pos[positions]
        out: dict[int, tuple] = {}
        for i in range(len(self.paths)):
            sel = np.flatnonzero((rows >= self.bounds[i]) & (rows < self.bounds[i + 1]))
            if not len(sel):
                continue
            with self._open(i) as f:
                table = f.read(columns=columns).take(pa.array(rows[sel] - self.bounds[i]))
            values = zip(*(table.column(c).to_pylist() for c in columns))
            out.update(zip(positions[sel].tolist(), values))
        return out


def signature_array(column: pa.ChunkedArray | pa.Array, num_perm: int) -> np.ndarray:
    """The "signature" key column (fixed-size binary) as an (n, num_perm) uint32 array."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    raw = np.frombuffer(arr.buffers()[1], dtype="<u4")
    return raw[arr.offset * num_perm:(arr.offset + len(arr)) * num_perm].reshape(-1, num_perm)


def _components(n: int, parent: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Connected components: vectorized hooking + pointer jumping from a forest ``parent`` (parent[x] <= x)
    over the edges (u, v). Returns each node's root, the smallest position of its component."""
    parent = parent.copy()

    def compress():
        nonlocal parent
        while True:
            nxt = parent[parent]
            if np.array_equal(nxt, parent):
                return
            parent = nxt

    compress()
    while len(u):
        pu, pv = parent[u], parent[v]
        live = pu != pv
        if not live.any():
            break
        u, v, pu, pv = u[live], v[live], pu[live], pv[live]
        np.minimum.at(parent, np.maximum(pu, pv), np.minimum(pu, pv))  # hook the larger root under the smaller
        compress()
    return parent


def _runs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Stable sort order of ``values`` and, per sorted element, the start index of its run of equal values."""
    order = np.argsort(values, kind="stable")
    sv = values[order]
    new = np.ones(len(sv), dtype=bool)
    new[1:] = sv[1:] != sv[:-1]
    starts = np.flatnonzero(new)
    return order, starts[np.cumsum(new) - 1]


def _repeated(values: np.ndarray) -> np.ndarray:
    """The indices (ascending) of the values that occur more than once. An unstable argsort: which copy comes
    first does not matter here, and the stable one _runs needs for the pairs cost 3x (1M hashes: 0.085 CPU-s)."""
    order = np.argsort(values, kind="quicksort")
    ordered = values[order]
    same = ordered[1:] == ordered[:-1]  # same[i]: sorted elements i and i + 1 are equal
    repeated = np.zeros(len(values), dtype=bool)
    repeated[1:] = same
    repeated[:-1] |= same
    return np.sort(order[repeated])


class _NearEdges:
    """Verified near edges, band by band, with the clusters updated after each batch (see the module doc).

    Local indices address ``sig_pos`` (the sorted positions in a bucket of two or more in some band) and
    ``sigs``; ``root`` is every position's cluster root, kept fully compressed."""

    REJECTED, VERIFIED, JOINED = 0, 1, 2

    def __init__(self, n: int, parent: np.ndarray, sig_pos: np.ndarray, sigs: np.ndarray,
                 sketches: tuple[np.ndarray, np.ndarray], cfg: DedupConfig, stats: dict):
        self.n, self.sig_pos, self.sigs, self.sketches, self.stats = n, sig_pos, sigs, sketches, stats
        self.root = _components(n, parent, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        self.verify, self.threshold, self.sketch_size = cfg.verify, cfg.threshold, params(cfg)["sketch_size"]
        # Equal signature values below `low`: rejected; from `high` on: accepted; between: the sketches decide.
        low, high = sketch_window(cfg.num_perm, cfg.threshold)
        self.low, self.high, self.need = (math.ceil(t * cfg.num_perm - 1e-9) for t in (low, high, cfg.threshold))
        self.sketch_rejected = np.zeros(0, dtype=np.uint64)  # local index pairs, (smaller << 32) | larger
        self.edges_u: list[np.ndarray] = []
        self.edges_v: list[np.ndarray] = []

    def _status(self, a: np.ndarray, b: np.ndarray, estimate_only: bool = False) -> np.ndarray:
        """Per proposed pair (local indices): JOINED (already one cluster: not verified), VERIFIED, REJECTED.
        estimate_only: by the MinHash estimate alone, enough to tell a large bucket's kind."""
        self.stats["proposed_pairs"] += int(len(a))
        status = np.full(len(a), self.JOINED, dtype=np.int8)
        live = np.flatnonzero(self.root[self.sig_pos[a]] != self.root[self.sig_pos[b]])
        self.stats["verifications"] += int(len(live))
        if not self.verify:
            status[live] = self.VERIFIED
            return status
        for s in range(0, len(live), VERIFY_CHUNK):
            sel = live[s:s + VERIFY_CHUNK]
            ok = (self._equal(a[sel], b[sel]) >= self.need) if estimate_only else self._verified(a[sel], b[sel])
            status[sel] = np.where(ok, self.VERIFIED, self.REJECTED)
        return status

    def _equal(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.count_nonzero(self.sigs[a] == self.sigs[b], axis=1)

    def _verified(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Near duplicates or not, per pair: by the estimate far from the threshold, else by the sketches."""
        equal = self._equal(a, b)
        ok = equal >= self.high
        near = np.flatnonzero((equal >= self.low) & ~ok)
        ok[near] = self._sketch_check(a[near], b[near])
        return ok

    def _sketch_check(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Sketch Jaccard >= threshold per pair. A pair that shares several bands is proposed in each, and
        one rejected stays apart: the rejected pairs are remembered, not compared again."""
        pair = (np.minimum(a, b).astype(np.uint64) << _U64(32)) | np.maximum(a, b).astype(np.uint64)
        known = self.sketch_rejected  # sorted; searched, not np.isin/union1d: their hashing took half the step
        again = np.zeros(len(pair), dtype=bool)
        if len(known):
            again = known[np.minimum(np.searchsorted(known, pair), len(known) - 1)] == pair
        ok = np.zeros(len(a), dtype=bool)
        new = np.flatnonzero(~again)
        self.stats["sketch_checks"] += int(len(new))
        ok[new] = pair_jaccard(*self.sketches, a[new], b[new], self.sketch_size) >= self.threshold
        rejected = np.sort(pair[new[~ok[new]]])
        self.sketch_rejected = np.sort(np.concatenate((known, rejected)), kind="stable")  # two sorted runs
        return ok

    def _join(self, a: np.ndarray, b: np.ndarray) -> None:
        if not len(a):
            return
        u, v = self.sig_pos[a], self.sig_pos[b]
        self.stats["verified_pairs"] += int(len(u))
        self.root = _components(self.n, self.root, np.minimum(u, v), np.maximum(u, v))
        self.edges_u.append(u)
        self.edges_v.append(v)

    def band(self, values: np.ndarray, local: np.ndarray) -> None:
        """One band: ``values`` are the band hashes of the sig_pos at ``local`` (ascending local indices): all of
        them, or only those in a bucket of two or more in this band (the others propose no pair)."""
        order, start = _runs(values)
        size = np.bincount(start, minlength=len(order))[start]  # members of each element's bucket
        order = local[order]  # from here on, local indices into sig_pos
        self.stats["largest_bucket"] = max(self.stats["largest_bucket"], int(size.max()) if len(size) else 0)
        # Small buckets: every pair (d apart in the sorted order, same bucket).
        small = np.flatnonzero((size > 1) & (size <= BUCKET_ALL_PAIRS))
        so, ss = order[small], start[small]
        a_parts, b_parts = [], []
        for d in range(1, min(BUCKET_ALL_PAIRS, int(size[small].max()) if len(small) else 0)):
            m = ss[d:] == ss[:-d]
            a_parts.append(so[:-d][m])
            b_parts.append(so[d:][m])
        if a_parts:
            a, b = np.concatenate(a_parts), np.concatenate(b_parts)
            verified = self._status(a, b) == self.VERIFIED
            self._join(a[verified], b[verified])
        # Large buckets: each member with the bucket's first member, then, in a bucket that is evidence, with
        # its LARGE_BUCKET_WINDOW predecessors.
        big = np.flatnonzero((size > BUCKET_ALL_PAIRS) & (start != np.arange(len(order))))
        if not len(big):
            return
        a, b = order[start[big]], order[big]
        # The estimate tells the bucket's kind; the sketches then decide the pairs of a bucket of duplicates
        # only (a bucket of template text held a quarter of the sketch comparisons of a templated corpus).
        status = self._status(a, b, estimate_only=True)
        # Evidence only where LARGE_BUCKET_MIN_ALIKE of the members match the first (see the module doc).
        ids, inverse = np.unique(start[big], return_inverse=True)
        alike = np.bincount(inverse, weights=status != self.REJECTED) / np.bincount(inverse)
        evidence = alike[inverse] >= LARGE_BUCKET_MIN_ALIKE
        self.stats["large_buckets"] += int(len(ids))
        self.stats["weak_large_buckets"] += int(np.count_nonzero(alike < LARGE_BUCKET_MIN_ALIKE))
        self.stats["verified_in_weak_buckets"] += int(np.count_nonzero((status == self.VERIFIED) & ~evidence))
        check = np.flatnonzero(evidence & (status != self.JOINED))
        joined = check[self._verified(a[check], b[check])] if self.verify else check
        self._join(a[joined], b[joined])
        big = big[evidence]
        lo = 1
        while lo <= LARGE_BUCKET_WINDOW and len(big):  # distances 1, 2-3, 4-7, ...: few cluster updates
            a_parts, b_parts = [], []
            for d in range(lo, min(2 * lo, LARGE_BUCKET_WINDOW + 1)):
                sel = big[big - d > start[big]]  # the predecessor is in the bucket and is not its first member
                a_parts.append(order[sel - d])
                b_parts.append(order[sel])
            a, b = np.concatenate(a_parts), np.concatenate(b_parts)
            verified = self._status(a, b) == self.VERIFIED
            self._join(a[verified], b[verified])
            lo *= 2

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.edges_u:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate(self.edges_u), np.concatenate(self.edges_v)


def _max_rss_mb() -> float:
    try:
        import resource
    except ImportError:  # not on this platform
        return 0.0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(rss / (1 << 20) if sys.platform == "darwin" else rss / 1024, 1)


def _empty(report: dict) -> DedupResult:
    return DedupResult(REMOVED_SCHEMA.empty_table(), report)


class _Laps:
    """Seconds and the process's peak RSS after each named phase of find_duplicates."""

    def __init__(self):
        self.start = self.tick = time.perf_counter()
        self.cpu_start = time.process_time()
        self.seconds: dict[str, float] = {}
        self.peak_mb: dict[str, float] = {}

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = round(now - self.tick, 3)
        self.peak_mb[name] = _max_rss_mb()
        self.tick = now

    def total(self) -> dict[str, float]:
        return {**self.seconds, "total": round(time.perf_counter() - self.start, 3)}


def find_duplicates(key_paths: list[str], cfg: DedupConfig, work_dir: str) -> DedupResult:
    """Exact groups, LSH candidates, verification, clusters and the keep policy over all shards' keys."""
    lap = _Laps()
    p = params(cfg)
    if not (cfg.exact or cfg.near):
        return _empty({"enabled": False, "parameters": p})
    keys = _Keys(key_paths, cfg, p)
    n = keys.n
    report = _report_skeleton(p, n)
    if n == 0:
        return _empty(report)
    is_eval = keys.column("_eval").astype(bool)
    report["eval_records"] = int(is_eval.sum())
    hi, lo = keys.column("exact_hi"), keys.column("exact_lo")
    pos = np.arange(n, dtype=np.int64)
    lap("read")

    exact_rep = _exact_representatives(hi, lo, pos)
    lap("exact")

    parent = exact_rep.copy() if cfg.exact else pos.copy()
    near = _near_duplicates(keys, cfg, p, parent, exact_rep, pos, work_dir, lap) if cfg.near else _Near(parent)
    comp = _components(n, near.root, near.eu, near.ev)
    del parent
    lap("components")

    removed_pos, dup_of, reason, same_hash, winner_stats = _decide(
        cfg, comp, pos, is_eval, hi, lo, exact_rep, keys)
    similarity = _similarity(removed_pos, dup_of, same_hash, near.sig_pos, near.sigs, near.mode, keys, cfg,
                             work_dir)
    lap("decide")

    size = np.bincount(comp, minlength=n)
    has_eval = np.zeros(n, dtype=bool)
    has_eval[comp[is_eval]] = True
    ex_roots = _example_roots(comp, size, has_eval)
    ex_members = np.flatnonzero(np.isin(comp, ex_roots))
    removed = _removed_table(keys, removed_pos, dup_of, reason, similarity)

    counts = Counter(REASONS[r] for r in reason.tolist())
    report["counts"] = {r: int(counts.get(r, 0)) for r in REASONS} | {"total": int(len(removed_pos))}
    leak = reason == 2
    report["validation_leak"] = {"exact": int((leak & same_hash).sum()), "near": int((leak & ~same_hash).sum())}
    report["clusters"] = _cluster_counts(size, exact_rep, winner_stats)
    report["lsh"] = near.lsh or {}
    report["examples"] = _examples(ex_roots, comp, ex_members, keys, is_eval, removed_pos, reason, dup_of,
                                   similarity)
    lap("report")
    report["seconds"] = lap.total()
    report["cpu_seconds"] = round(time.process_time() - lap.cpu_start, 3)
    report["peak_rss_mb"] = lap.peak_mb  # of this process so far, after each phase
    return DedupResult(removed, report)


def _exact_representatives(hi: np.ndarray, lo: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Per record, the smallest position with the same content hash (its exact group's representative)."""
    n = len(pos)
    order = np.lexsort((pos, lo, hi))
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = (hi[order][1:] != hi[order][:-1]) | (lo[order][1:] != lo[order][:-1])
    group_id = np.cumsum(new_group) - 1
    exact_rep = np.empty(n, dtype=np.int64)
    exact_rep[order] = order[new_group][group_id]
    return exact_rep


class _Near(NamedTuple):
    """What the near-duplicate pass leaves: the union-find roots after it, its verified edges, the positions
    and signatures it loaded, each record's near_mode, and its LSH counters (all empty when it is off)."""
    root: np.ndarray
    eu: np.ndarray = np.zeros(0, dtype=np.int64)
    ev: np.ndarray = np.zeros(0, dtype=np.int64)
    sig_pos: np.ndarray = np.zeros(0, dtype=np.int64)
    sigs: np.ndarray | None = None
    mode: np.ndarray | None = None
    lsh: dict | None = None


def _near_duplicates(keys: "_Keys", cfg: DedupConfig, p: dict, parent: np.ndarray, exact_rep: np.ndarray,
                     pos: np.ndarray, work_dir: str, lap: _Laps) -> _Near:
    """LSH candidates verified by estimated Jaccard, joined into `parent`: one record per exact group takes part
    (its copies follow it through the exact edges). Pass 1 finds the records in a bucket of two or more in some
    band, the only ones whose signatures are loaded; pass 2 verifies and joins band by band."""
    lsh = {"proposed_pairs": 0, "verifications": 0, "verified_pairs": 0, "rejected_pairs": 0,
           "sketch_checks": 0, "largest_bucket": 0, "large_buckets": 0, "weak_large_buckets": 0,
           "verified_in_weak_buckets": 0,
           "signatures_loaded": 0,
           "max_verifications_per_record_band": max((BUCKET_ALL_PAIRS - 1) / 2, 1 + LARGE_BUCKET_WINDOW)}
    mode = keys.column("near_mode")
    members = np.flatnonzero((mode > 0) & ((exact_rep == pos) if cfg.exact else True))
    in_bucket = np.zeros(len(members), dtype=bool)
    # per band, its members in a bucket of two or more (indices into members, ascending) and their hashes: pass 2
    # needs no other (a member alone in its bucket proposes no pair), and reading every band column of every key
    # file again cost as much as pass 1's reads; None: past SHARED_BANDS_IN_MEMORY, read again
    shared_bands: list[tuple[np.ndarray, np.ndarray] | None] = []
    kept_bytes = 0
    for k in range(p["bands"]):
        values = keys.column(f"band_{k:03d}")[members]
        shared = _repeated(values)
        in_bucket[shared] = True
        kept_bytes += shared.nbytes + 8 * len(shared)
        shared_bands.append((shared, values[shared]) if kept_bytes <= SHARED_BANDS_IN_MEMORY else None)
    sig_pos = members[in_bucket]
    lap("lsh")
    sigs = keys.signatures(sig_pos, cfg.num_perm, work_dir)
    sketches = keys.sketches(sig_pos) if cfg.verify else (np.zeros(0, np.uint32), np.zeros(len(sig_pos) + 1))
    lsh["signatures_loaded"] = int(len(sig_pos))
    lap("signatures")
    near = _NearEdges(len(pos), parent, sig_pos, sigs, sketches, cfg, lsh)
    every = np.arange(len(sig_pos))
    for k, shared in enumerate(shared_bands):
        if shared is None:
            near.band(keys.column(f"band_{k:03d}")[sig_pos], every)
        else:
            near.band(shared[1], np.searchsorted(sig_pos, members[shared[0]]))
    del members, shared_bands
    eu, ev = near.edges()
    lsh["rejected_pairs"] = lsh["verifications"] - lsh["verified_pairs"]
    lap("verify")
    return _Near(near.root, eu, ev, sig_pos, sigs, mode, lsh)


def _removed_table(keys: "_Keys", removed_pos: np.ndarray, dup_of: np.ndarray, reason: np.ndarray,
                   similarity) -> pa.Table:
    """dedup_removed.parquet: each removed record and the one it duplicates, by id and source position."""
    ids = keys.lookup(np.union1d(removed_pos, dup_of), ["id", "source_file", "source_line"])
    removed, of = removed_pos.tolist(), dup_of.tolist()
    return pa.table({
        "_order": pa.array(keys.order[removed_pos], pa.int64()),
        "id": pa.array([ids[q][0] for q in removed], pa.string()),
        "reason": pa.array(np.array(REASONS, dtype=object)[reason], pa.string()),
        "duplicate_of": pa.array([ids[q][0] for q in of], pa.string()),
        "duplicate_of_order": pa.array(keys.order[dup_of], pa.int64()),
        "similarity": pa.array(similarity, pa.float32()),
        "source_file": pa.array([ids[q][1] for q in removed], pa.string()),
        "source_line": pa.array([ids[q][2] for q in removed], pa.int64()),
        "duplicate_of_file": pa.array([ids[q][1] for q in of], pa.string()),
        "duplicate_of_line": pa.array([ids[q][2] for q in of], pa.int64()),
    }, schema=REMOVED_SCHEMA)


def _cluster_counts(size: np.ndarray, exact_rep: np.ndarray, winner_stats: dict) -> dict:
    sizes = size[size > 1]
    return {
        "count": int(len(sizes)),
        "records_in_clusters": int(sizes.sum()),
        "exact_groups": int(np.count_nonzero(np.bincount(exact_rep, minlength=len(size)) > 1)),
        "largest": int(sizes.max()) if len(sizes) else 0,
        "size_histogram": _histogram(sizes),
        "kept_by_policy": winner_stats,
    }


def _decide(cfg, comp, pos, is_eval, hi, lo, exact_rep, keys):
    """Removed positions, what each duplicates, reason index, same-content flag; winners per policy."""
    n = len(comp)
    size = np.bincount(comp, minlength=n)
    has_eval = np.zeros(n, dtype=bool)
    has_eval[comp[is_eval]] = True
    member = size[comp] > 1
    # The record each cluster keeps (clusters without validation records), by policy; ties: lowest _order.
    if cfg.keep == "first":
        rank = np.lexsort((pos, comp))
    else:
        length = keys.column("length")
        if cfg.keep == "longest":
            rank = np.lexsort((pos, -length, comp))
        else:  # most_turns, then longest, then first
            rank = np.lexsort((pos, -length, -keys.column("turns").astype(np.int64), comp))
    first = np.ones(n, dtype=bool)
    first[1:] = comp[rank][1:] != comp[rank][:-1]
    winner = np.full(n, -1, dtype=np.int64)
    winner[comp[rank][first]] = rank[first]
    # Validation anchor: lowest-position validation record of the exact group, else of the cluster.
    eval_pos = np.flatnonzero(is_eval)
    comp_eval = np.full(n, n, dtype=np.int64)
    np.minimum.at(comp_eval, comp[eval_pos], eval_pos)
    group_eval = np.full(n, n, dtype=np.int64)
    np.minimum.at(group_eval, exact_rep[eval_pos], eval_pos)

    leak = member & has_eval[comp] & ~is_eval
    dup = member & ~has_eval[comp] & (winner[comp] != pos)
    removed_pos = np.flatnonzero(leak | dup)
    leak_r = leak[removed_pos]
    anchor = group_eval[exact_rep[removed_pos]]
    anchor = np.where(anchor < n, anchor, comp_eval[comp[removed_pos]])
    dup_of = np.where(leak_r, anchor, winner[comp[removed_pos]])
    same_hash = (hi[removed_pos] == hi[dup_of]) & (lo[removed_pos] == lo[dup_of])
    reason = np.where(leak_r, 2, np.where(same_hash & cfg.exact, 0, 1)).astype(np.int8)
    kept = winner[(size > 1) & ~has_eval & (np.arange(n) == comp)]
    not_first = int(np.count_nonzero(kept != comp[kept])) if len(kept) else 0
    return removed_pos, dup_of, reason, same_hash, {"policy": cfg.keep, "kept_not_first": not_first}


def _similarity(removed_pos, dup_of, same_hash, sig_pos, sigs, mode, keys, cfg, work_dir) -> np.ndarray:
    """Estimated Jaccard of each removed record with the one it duplicates (1.0 for the same content;
    NaN where a signature is missing: near dedup off, or a text without words)."""
    sim = np.ones(len(removed_pos), dtype=np.float32)
    est = np.flatnonzero(~same_hash)
    if not len(est):
        return sim
    if sigs is None:
        sim[est] = np.nan
        return sim
    a, b = removed_pos[est], dup_of[est]
    missing = np.setdiff1d(np.union1d(a, b), sig_pos)
    if len(missing):  # e.g. a validation anchor reached through exact copies only
        sig_pos2 = np.union1d(sig_pos, missing)
        extra = keys.signatures(missing, cfg.num_perm, work_dir)
        merged = np.empty((len(sig_pos2), cfg.num_perm), dtype=np.uint32)
        merged[np.searchsorted(sig_pos2, sig_pos)] = sigs
        merged[np.searchsorted(sig_pos2, missing)] = extra
        sig_pos, sigs = sig_pos2, merged
    ia, ib = np.searchsorted(sig_pos, a), np.searchsorted(sig_pos, b)
    values = np.empty(len(a), dtype=np.float32)
    for s in range(0, len(a), VERIFY_CHUNK):
        sl = slice(s, s + VERIFY_CHUNK)
        values[sl] = np.count_nonzero(sigs[ia[sl]] == sigs[ib[sl]], axis=1) / cfg.num_perm
    values[(mode[a] == 0) | (mode[b] == 0)] = np.nan
    sim[est] = values
    return sim


def _report_skeleton(p: dict, n: int) -> dict:
    return {"enabled": True, "records": n, "eval_records": 0,
            "counts": {r: 0 for r in REASONS} | {"total": 0},
            "validation_leak": {"exact": 0, "near": 0},
            "clusters": {"count": 0, "records_in_clusters": 0, "exact_groups": 0, "largest": 0,
                         "size_histogram": {}},
            "lsh": {}, "examples": [], "parameters": p}


_HIST_BUCKETS = ((11, 20), (21, 50), (51, 100), (101, 1000), (1001, None))


def _histogram(sizes: np.ndarray) -> dict:
    """Cluster sizes: each size up to 10, then ranges ("11-20", ..., "1001+")."""
    out: dict[str, int] = {}
    for s, c in sorted(Counter(sizes.tolist()).items()):
        key = str(s)
        if s > 10:
            lo, hi = next(b for b in _HIST_BUCKETS if b[1] is None or s <= b[1])
            key = f"{lo}+" if hi is None else f"{lo}-{hi}"
        out[key] = out.get(key, 0) + int(c)
    return out


def _example_roots(comp: np.ndarray, size: np.ndarray, has_eval: np.ndarray) -> np.ndarray:
    """A few clusters to show: the largest ones, and the largest one with a validation record."""
    roots = np.flatnonzero((size > 1) & (comp == np.arange(len(comp))))
    if not len(roots):
        return roots
    ranked = roots[np.lexsort((roots, -size[roots]))]
    chosen = list(ranked[:EXAMPLE_CLUSTERS])
    leaky = ranked[has_eval[ranked]]
    if len(leaky) and leaky[0] not in chosen:
        chosen[-1] = leaky[0]
    return np.array(sorted(set(int(r) for r in chosen), key=lambda r: (-size[r], r)), dtype=np.int64)


def _examples(roots, comp, members, keys, is_eval, removed_pos, reason, dup_of, similarity) -> list[dict]:
    """Example clusters by record id and source (file, line), never content."""
    if not len(roots):
        return []
    shown_pos = np.concatenate([members[comp[members] == r][:EXAMPLE_MEMBERS] for r in roots])
    info = keys.lookup(shown_pos, ["id", "source_file", "source_line"])
    at = {int(q): i for i, q in enumerate(removed_pos.tolist())}
    examples = []
    for r in roots.tolist():
        in_cluster = members[comp[members] == r]
        shown = []
        for q in in_cluster[:EXAMPLE_MEMBERS].tolist():
            rid, file, line = info[q]
            entry = {"id": rid, "order": int(keys.order[q]), "source": {"file": file, "line": line},
                     "eval": bool(is_eval[q])}
            if q in at:
                i = at[q]
                sim = float(similarity[i])
                entry.update(removed=REASONS[int(reason[i])], duplicate_of_order=int(keys.order[dup_of[i]]),
                             similarity=None if math.isnan(sim) else round(sim, 4))
            else:
                entry["kept"] = True
            shown.append(entry)
        example = {"size": int(len(in_cluster)), "members": shown}
        if len(in_cluster) > EXAMPLE_MEMBERS:
            example["more_members"] = int(len(in_cluster) - EXAMPLE_MEMBERS)
        examples.append(example)
    return examples


# --- for the runner ------------------------------------------------------------------------------------


def removed_reasons(removed: DedupResult | str | os.PathLike | None, shard: int | None = None) -> dict[int, str]:
    """_order -> reason of the removed records, from a DedupResult or its audit file (write_audit, Parquet);
    with `shard`, only those of that input shard (its _order range), read with a filter."""
    if removed is None or (not isinstance(removed, DedupResult) and not os.path.exists(removed)):
        return {}
    filters = None
    if shard is not None:
        filters = [("_order", ">=", shard << ORDER_SHIFT), ("_order", "<", (shard + 1) << ORDER_SHIFT)]
    if isinstance(removed, DedupResult):
        t = removed.removed
        if filters:
            import pyarrow.compute as pc

            t = t.filter(pc.and_(pc.greater_equal(t["_order"], filters[0][2]), pc.less(t["_order"], filters[1][2])))
    else:
        t = pq.read_table(removed, columns=["_order", "reason"], filters=filters)
    return dict(zip(t.column("_order").to_pylist(), t.column("reason").to_pylist()))


def apply_removals(records: Iterable[dict], reasons: dict[int, str], stats=None) -> list[dict]:
    """The records not removed; each removed one is counted in ``stats`` (a StageStats) as dropped(reason)."""
    kept = []
    for rec in records:
        reason = reasons.get(rec["_order"])
        if reason is None:
            kept.append(rec)
        elif stats is not None:
            stats.drop(reason)
    return kept


class DedupFilter(Step):
    """Phase 3's part of the dedup stage: drops the records the global decision removed (`reasons`,
    removed_reasons of the shard), each counted as dropped(reason)."""

    name = "dedup"
    config_sections = ("dedup",)

    def __init__(self, reasons: dict[int, str]):
        self.reasons = reasons

    def process(self, batch: list[dict]) -> list[dict]:
        return apply_removals(batch, self.reasons, self.stats) if self.reasons else batch


class DedupClusters(GlobalStep):
    """Phase 2's part of the dedup stage: exact, near and leakage duplicates over every shard's key file
    (find_duplicates); the audit file it writes lists every removal and is what DedupFilter drops."""

    name = "dedup"
    config_sections = ("dedup",)

    def __init__(self, cfg: DedupConfig, key_paths: list[str], work_dir: str, audit_path: str):
        self.cfg, self.key_paths, self.work_dir, self.decision = cfg, key_paths, work_dir, audit_path

    def run(self) -> dict:
        result = find_duplicates(self.key_paths, self.cfg, self.work_dir)
        write_audit(result, self.decision)
        return result.report


def write_audit(result: DedupResult, path: str | os.PathLike) -> str:
    """The audit file: every removed record with its reason and the record it duplicates. Parquet when the
    path ends in .parquet, else JSON lines."""
    path = str(path)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    if path.endswith(".parquet"):
        pq.write_table(result.removed, path, compression="zstd")
        return path
    with open(path, "w", encoding="utf-8") as fh:
        for row in result.removed.to_pylist():
            sim = row["similarity"]
            row["similarity"] = None if sim is None or math.isnan(sim) else round(float(sim), 4)
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path
