"""`--against` at scale: the lookup of N new records in the dedup index of M earlier ones (dedup/against.py),
beside a single run's dedup global step (find_duplicates) over the same N + M records.

    .venv/bin/python bench/dedup/against.py                         # 1M new against 1M, 4M and 10M earlier
    .venv/bin/python bench/dedup/against.py --new 100000 --earlier 100000 400000 --file-rows 50000
    .venv/bin/python bench/dedup/against.py --earlier 1000000 --baseline-src /path/to/older/checkout

No text: the key columns are generated directly, in files of --file-rows records (the earlier index as
dedup_index.parquet holds it, the new side as phase 3's work files do). Signatures are random (num_perm
uint32 each, so unrelated records share no band); of the new records, --exact are copies of an earlier
record's keys and --near are near copies (--changed of the 128 signature values redrawn: estimated Jaccard
about 1 - changed/128, above the 0.8 threshold), their band hashes computed from the changed signature. Each
file carries both the index's and the in-run key files' metadata, so the same files feed both steps.

Each step runs in a fresh process (its peak RSS is its own): wall and CPU seconds, peak RSS, and the
removals found against those planted. The ratio that matters is the lookup's CPU seconds over the single
run's dedup step on the same records. Last output: bench/dedup/against_last_run.txt.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))


def _rss_mb() -> float:
    """This process's peak RSS. VmHWM, not ru_maxrss: Linux keeps ru_maxrss across the fork and exec of a
    spawned worker, so a worker reported its parent's peak whenever that was higher than its own."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _schema(cfg):
    import pyarrow as pa

    from pipeline.data.dedup import key_schema
    from pipeline.data.dedup.history import index_schema

    keys, index = key_schema(cfg), index_schema(cfg)
    fields = list(keys) + [f for f in index if f.name not in keys.names]
    return pa.schema(fields, metadata={**keys.metadata, **index.metadata})


def _write_files(folder: Path, first_order: int, count: int, file_rows: int, seed: int, plant=None) -> list[str]:
    """`count` records of random signatures in files of `file_rows`; `plant(sig, hi, lo, start)` changes a
    chunk's keys in place (the new side's copies of earlier records)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.core.config import DedupConfig
    from pipeline.data.dedup import band_hashes
    from pipeline.data.dedup.params import params

    cfg = DedupConfig()
    p = params(cfg)
    schema = _schema(cfg)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for start in range(0, count, file_rows):
        n = min(file_rows, count - start)
        rng = np.random.default_rng([seed, start])
        sig = rng.integers(0, 1 << 32, (n, cfg.num_perm), dtype=np.uint32)
        hi, lo = rng.integers(0, 1 << 63, n, dtype=np.uint64), rng.integers(0, 1 << 63, n, dtype=np.uint64)
        if plant is not None:
            plant(sig, hi, lo, start)
        bands = band_hashes(sig, p["bands"], p["rows"])
        order = np.arange(first_order + start, first_order + start + n, dtype=np.int64)
        ids = pa.array([f"{o:012d}" for o in order.tolist()], pa.string())
        columns = {
            "_order": pa.array(order), "id": ids, "_eval": pa.array(np.zeros(n, bool)),
            "exact_hi": pa.array(hi), "exact_lo": pa.array(lo), "length": pa.array(np.full(n, 500, np.int64)),
            "turns": pa.array(np.full(n, 2, np.int32)), "near_mode": pa.array(np.ones(n, np.int8)),
            "source_file": pa.array(["gen.jsonl"] * n, pa.string()), "source_line": pa.array(order - first_order + 1),
            **{f"band_{k:03d}": pa.array(bands[:, k]) for k in range(p["bands"])},
            "signature": pa.FixedSizeBinaryArray.from_buffers(pa.binary(4 * cfg.num_perm), n,
                                                              [None, pa.py_buffer(sig.astype("<u4").tobytes())]),
            "shard": pa.array([f"train/part-{start // file_rows:05d}.parquet"] * n, pa.string()),
            "row": pa.array(np.arange(n, dtype=np.int32)),
            # the in-run dedup's shingle sketch (sketch.py): the signature's values as a set, so a near copy's
            # sketch Jaccard is about (128 - changed) / (128 + changed), above the threshold as its estimate is
            "sketch": pa.array([row.tobytes() for row in np.sort(sig, axis=1).astype("<u4")], pa.binary()),
        }
        path = folder / f"part-{start // file_rows:05d}.parquet"
        pq.write_table(pa.table(columns, schema=schema), path, compression="zstd", row_group_size=1 << 16)
        paths.append(str(path))
    return paths


def _earlier_keys(paths: list[str], rows) -> tuple:
    """Signatures and content hashes of the given earlier rows (sorted), to copy into the new side."""
    import numpy as np

    from pipeline.core.config import DedupConfig
    from pipeline.data.dedup.against import _Files

    files = _Files(paths)
    sig = files.signatures(rows, DedupConfig().num_perm, str(Path(paths[0]).with_suffix(".sigs.npy")))
    hi, lo = files.column("exact_hi")[rows], files.column("exact_lo")[rows]
    return np.array(sig), hi, lo


def make_sides(work: Path, new_n: int, earlier_n: int, args) -> tuple[list[str], list[str], dict]:
    """The largest earlier index, written once (a smaller M is its first files), and the new side, whose
    copies are of records in the first file of the earlier index: one new side serves every M."""
    import numpy as np

    earlier = _write_files(work / "earlier", 1 << 40, earlier_n, args.file_rows, args.seed)
    rng = np.random.default_rng(args.seed + 1)
    picked = np.sort(rng.choice(min(earlier_n, args.file_rows), args.exact + args.near, replace=False))
    sig, hi, lo = _earlier_keys(earlier[:1], picked)
    exact_at = np.sort(rng.choice(new_n, args.exact + args.near, replace=False))  # where the copies go
    is_near = np.zeros(len(picked), bool)
    is_near[rng.choice(len(picked), args.near, replace=False)] = True
    changed = np.array([rng.choice(sig.shape[1], args.changed, replace=False) for _ in range(args.near)])
    near_sig = sig[is_near].copy()
    near_sig[np.arange(args.near)[:, None], changed] = rng.integers(0, 1 << 32, changed.shape, dtype=np.uint32)
    near_rank = np.cumsum(is_near) - 1

    def plant(s, h, lo_, start):
        sel = np.flatnonzero((exact_at >= start) & (exact_at < start + len(h)))
        at = exact_at[sel] - start
        exact, near = ~is_near[sel], is_near[sel]
        s[at[exact]], h[at[exact]], lo_[at[exact]] = sig[sel[exact]], hi[sel[exact]], lo[sel[exact]]
        s[at[near]] = near_sig[near_rank[sel[near]]]

    new = _write_files(work / "new", 0, new_n, args.file_rows, args.seed + 2, plant)
    return new, earlier, {"exact": args.exact, "near": args.near}


def _against(new, earlier, work):
    from pipeline.core.config import DedupConfig
    from pipeline.data.dedup.against import Earlier, find_earlier

    t, c = time.perf_counter(), time.process_time()
    removed, report = find_earlier(new, [Earlier("earlier", p) for p in earlier], DedupConfig(), work)
    sims = removed["similarity"].to_numpy()
    return {"seconds": round(time.perf_counter() - t, 1), "cpu_s": round(time.process_time() - c, 1),
            "peak_rss_mb": _rss_mb(), "removed": report["removed"], "exact_found": int((sims == 1.0).sum()),
            "near_found": int((sims < 1.0).sum()), "proposed_pairs": report["proposed_pairs"]}


def _against_at(src, new, earlier, work):
    """_against with the pipeline package of another checkout (--baseline-src), in this fresh process."""
    sys.path.insert(0, src)
    return _against(new, earlier, work)


def _single_run(paths, work):
    from pipeline.core.config import DedupConfig
    from pipeline.data.dedup import find_duplicates

    t, c = time.perf_counter(), time.process_time()
    result = find_duplicates(paths, DedupConfig(), work)
    return {"seconds": round(time.perf_counter() - t, 1), "cpu_s": round(time.process_time() - c, 1),
            "peak_rss_mb": _rss_mb(), "removed": result.report["counts"]["total"]}


def _lookups(new, earlier, work, args, ctx) -> dict:
    """The lookup, and the baseline's beside it (--baseline-src), each in a fresh process."""
    row = {}
    with ProcessPoolExecutor(1, mp_context=ctx) as pool:
        row["against"] = pool.submit(_against, new, earlier, str(work)).result()
    if args.baseline_src:
        with ProcessPoolExecutor(1, mp_context=ctx) as pool:
            row["baseline"] = pool.submit(_against_at, args.baseline_src, new, earlier, str(work)).result()
        row["baseline_cpu_ratio"] = round(row["against"]["cpu_s"] / max(row["baseline"]["cpu_s"], 1e-9), 3)
    return row


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--new", type=int, default=1_000_000)
    ap.add_argument("--earlier", type=int, nargs="+", default=[1_000_000, 4_000_000, 10_000_000])
    ap.add_argument("--exact", type=int, default=20_000, help="new records that copy an earlier one")
    ap.add_argument("--near", type=int, default=20_000, help="new records that nearly copy an earlier one")
    ap.add_argument("--changed", type=int, default=12, help="signature values a near copy redraws (of 128)")
    ap.add_argument("--file-rows", type=int, default=250_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-single-run", action="store_true", help="skip the single run's dedup step")
    ap.add_argument("--work", default="/tmp/against_bench")
    ap.add_argument("--baseline-src", help="a checkout of another commit: its lookup runs too, side by side")
    ap.add_argument("--repeat", type=int, default=1, help="lookups per size (the single run: once)")
    args = ap.parse_args(argv)
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    print(f"# bench/dedup/against.py {' '.join(argv if argv is not None else sys.argv[1:])}  (commit {rev.strip()})")
    ctx = mp.get_context("spawn")
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    t = time.perf_counter()
    new, earlier_all, planted = make_sides(work, args.new, max(args.earlier), args)
    print(json.dumps({"generated": {"new": args.new, "earlier": max(args.earlier), "planted": planted,
                                    "seconds": round(time.perf_counter() - t, 1)}}), flush=True)
    for m in sorted(args.earlier):
        if m % args.file_rows:
            raise SystemExit("--earlier sizes must be multiples of --file-rows")
        earlier = earlier_all[:m // args.file_rows]
        for rep in range(args.repeat - 1):  # the peak RSS of one process varies by tens of MB run to run
            print(json.dumps({"new": args.new, "earlier": m, "repeat": rep + 1,
                              **_lookups(new, earlier, work, args, ctx)}), flush=True)
        row = {"new": args.new, "earlier": m, **_lookups(new, earlier, work, args, ctx)}
        if not args.no_single_run:
            with ProcessPoolExecutor(1, mp_context=ctx) as pool:
                row["single_run"] = pool.submit(_single_run, earlier + new, str(work)).result()
            row["cpu_ratio"] = round(row["against"]["cpu_s"] / max(row["single_run"]["cpu_s"], 1e-9), 3)
            row["wall_ratio"] = round(row["against"]["seconds"] / max(row["single_run"]["seconds"], 1e-9), 3)
        print(json.dumps(row), flush=True)
    shutil.rmtree(work, ignore_errors=True)

if __name__ == "__main__":
    main()
