"""Benchmark of pipeline.data.dedup on a synthetic corpus with planted duplicates, against a plain datasketch loop.

    .venv/bin/python bench/dedup/run.py                    # 100k records (+1% validation records)
    .venv/bin/python bench/dedup/run.py --records 1000000  # the 1M run
    .venv/bin/python bench/dedup/run.py --records 20000 --baseline 2000   # quick
    .venv/bin/python bench/dedup/run.py --shape templated --baseline 0    # another corpus shape (corpus.py)

Steps (each timed):
  corpus     generated once per (records, seed) into --data-dir as Parquet shards (not part of the stage)
  keys       per shard in --workers worker processes: read the shard, compute_keys, write the key Parquet
  global     find_duplicates over the key files, in a fresh process (so its peak RSS is its own)
  baseline   on the first --baseline records: one datasketch MinHash per record with update() per shingle,
             one MinHashLSH insert + query per record (single process)
Prints the figures and writes them as JSON to --out.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import re
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import corpus as C  # noqa: E402

TRUTH_SCHEMA = pa.schema([("order", pa.int64()), ("type", pa.int8()), ("family", pa.int64()),
                          ("jaccard", pa.float32())])


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ---------------------------------------------------------------------------------------------- corpus

def _gen_shard(args):
    seed, start, stop, n_train, path, shape = args
    from pipeline.core.records import to_table

    records, truth = C.make_shard(seed, start, stop, n_train, Path(path).stem + ".jsonl", shape)
    table = to_table(records, extra={"_order": pa.int64(), "_eval": pa.bool_()})
    pq.write_table(table, path, compression="zstd")
    order, typ, fam, jac = zip(*truth)
    pq.write_table(pa.table([pa.array(order, pa.int64()), pa.array(typ, pa.int8()), pa.array(fam, pa.int64()),
                             pa.array(jac, pa.float32())], schema=TRUTH_SCHEMA), path + ".truth")
    return stop - start


def ensure_corpus(data_dir: Path, n_train: int, n_eval: int, seed: int, shard_rows: int, workers: int,
                  shape: str = "planted") -> list[str]:
    total = n_train + n_eval
    ranges = [(s, min(s + shard_rows, total)) for s in range(0, total, shard_rows)]
    paths = [str(data_dir / f"shard-{i:05d}.parquet") for i in range(len(ranges))]
    done = data_dir / "DONE"
    stamp = f"{n_train} {n_eval} {seed} {shard_rows} v{C.VERSION}" + ("" if shape == "planted" else f" {shape}")
    if done.exists() and done.read_text() == stamp:
        return paths
    data_dir.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as pool:
        list(pool.map(_gen_shard, [(seed, a, b, n_train, p, shape) for (a, b), p in zip(ranges, paths)]))
    done.write_text(stamp)
    print(f"corpus: generated {total} records in {time.perf_counter() - t:.1f}s -> {data_dir}", flush=True)
    return paths


# ---------------------------------------------------------------------------------------------- stage

def _keys_task(args):
    shard_path, key_path, cfg_json = args
    from pipeline.core.config import DedupConfig
    from pipeline.core.records import from_table
    from pipeline.data.dedup import compute_keys, write_keys

    cfg = DedupConfig.model_validate_json(cfg_json)
    t0 = time.perf_counter()
    records = from_table(pq.read_table(shard_path))
    t1, c1 = time.perf_counter(), time.process_time()
    keys = compute_keys(records, cfg)
    t2, c2 = time.perf_counter(), time.process_time()
    write_keys(keys, key_path)
    t3 = time.perf_counter()
    return {"records": len(records), "read_s": t1 - t0, "keys_s": t2 - t1, "keys_cpu_s": c2 - c1, "write_s": t3 - t2,
            "key_bytes": os.path.getsize(key_path), "rss_mb": _rss_mb()}


def _global_task(args):
    key_paths, cfg_json, work_dir = args
    from pipeline.core.config import DedupConfig
    from pipeline.data.dedup import find_duplicates

    cfg = DedupConfig.model_validate_json(cfg_json)
    t, c = time.perf_counter(), time.process_time()
    result = find_duplicates(key_paths, cfg, work_dir)
    seconds = time.perf_counter() - t
    result.report["cpu_s"] = round(time.process_time() - c, 2)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, result.removed.schema) as w:
        w.write_table(result.removed)
    return sink.getvalue().to_pybytes(), result.report, seconds, _rss_mb()


# ---------------------------------------------------------------------------------------------- baseline

def baseline(records: list[dict], ngram: int = 5) -> dict:
    """The plain loop: per record one MinHash, update() per shingle, one LSH query + insert."""
    from datasketch import MinHash, MinHashLSH

    from pipeline.data.dedup import trainer_text

    word = re.compile(r"\w+")
    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    t, c = time.perf_counter(), time.process_time()
    dups = 0
    for rec in records:
        tokens = word.findall(trainer_text(rec).casefold())
        m = MinHash(num_perm=128)
        for i in range(max(1, len(tokens) - ngram + 1)):
            m.update(" ".join(tokens[i:i + ngram]).encode("utf-8"))
        if lsh.query(m):
            dups += 1
        lsh.insert(str(rec["_order"]), m)
    seconds, cpu = time.perf_counter() - t, time.process_time() - c
    return {"records": len(records), "seconds": seconds, "records_per_s": len(records) / seconds,
            "records_per_cpu_s": len(records) / cpu, "flagged": dups}


def bulk_reference(records: list[dict], ngram: int = 5) -> dict:
    """datasketch's batch path for comparison: MinHash.bulk with xxhash (signatures only)."""
    import xxhash
    from datasketch import MinHash

    from pipeline.data.dedup import trainer_text

    word = re.compile(r"\w+")
    t, c = time.perf_counter(), time.process_time()
    sets = []
    for rec in records:
        tokens = word.findall(trainer_text(rec).casefold())
        sets.append([" ".join(tokens[i:i + ngram]).encode() for i in range(max(1, len(tokens) - ngram + 1))])
    MinHash.bulk(sets, num_perm=128, hashfunc=xxhash.xxh32_intdigest)
    seconds, cpu = time.perf_counter() - t, time.process_time() - c
    return {"records": len(records), "seconds": seconds, "records_per_s": len(records) / seconds,
            "records_per_cpu_s": len(records) / cpu}


def our_signatures_single(records: list[dict], cfg) -> dict:
    from pipeline.data.dedup import compute_keys

    compute_keys(records[:50], cfg)  # warm caches (word-char table, permutations)
    t, c = time.perf_counter(), time.process_time()
    compute_keys(records, cfg)
    seconds, cpu = time.perf_counter() - t, time.process_time() - c
    return {"records": len(records), "seconds": seconds, "records_per_s": len(records) / seconds,
            "records_per_cpu_s": len(records) / cpu}


# ---------------------------------------------------------------------------------------------- metrics

def metrics(removed: pa.Table, truth: dict[str, np.ndarray], threshold: float) -> dict:
    order, typ, fam, jac = truth["order"], truth["type"], truth["family"], truth["jaccard"]
    idx = np.argsort(order)
    order, typ, fam, jac = order[idx], typ[idx], fam[idx], jac[idx]
    at = lambda o: np.searchsorted(order, o)  # noqa: E731
    r_order = removed.column("_order").to_numpy()
    r_dup = removed.column("duplicate_of_order").to_numpy()
    r_reason = np.array(removed.column("reason").to_pylist(), dtype=object)
    removed_mask = np.zeros(len(order), dtype=bool)
    removed_mask[at(r_order)] = True
    same_family = fam[at(r_order)] == fam[at(r_dup)]

    # Removed as a duplicate of its own family: a removal through a chain of false matches is not a find.
    found_mask = np.zeros(len(order), dtype=bool)
    found_mask[at(r_order[same_family])] = True
    near = typ == C.T_NEAR
    out = {}
    for lo, hi in ((0.85, 1.01), (0.85, 0.9), (0.9, 0.95), (0.95, 1.01), (threshold, 0.85), (0.7, threshold),
                   (0.0, 0.7)):
        sel = near & (jac >= lo) & (jac < hi)
        key = f"near_J[{lo:.2f},{min(hi, 1.0):.2f}{']' if hi > 1 else ')'}"
        out[key] = {"planted": int(sel.sum()), "removed": int((sel & removed_mask).sum()),
                    "rate": round(float((sel & removed_mask).sum() / max(1, sel.sum())), 4),
                    "rate_same_family": round(float((sel & found_mask).sum() / max(1, sel.sum())), 4)}
    exact = typ == C.T_EXACT
    out["exact"] = {"planted": int(exact.sum()), "removed": int((exact & removed_mask).sum())}
    neg = typ == C.T_NEG
    out["hard_negatives"] = {"planted": int(neg.sum()), "removed": int((neg & removed_mask).sum()),
                             "max_jaccard": round(float(jac[neg].max()) if neg.any() else 0.0, 3)}
    originals = typ == C.T_ORIG
    # Originals removed for a reason other than leakage: false positives unless copied from elsewhere.
    out["originals_removed_not_leak"] = int((originals[at(r_order)] & (r_reason != "validation_leak")).sum())
    nd = r_reason == "near_duplicate"
    out["near_removals"] = int(nd.sum())
    # Planted near copies removed as near duplicates, by their word-5-gram Jaccard with their original.
    planted_j = jac[at(r_order)][nd & (typ[at(r_order)] == C.T_NEAR)]
    out["near_removals_by_planted_jaccard"] = {
        ">=0.80": int((planted_j >= 0.8).sum()), "0.70-0.80": int(((planted_j >= 0.7) & (planted_j < 0.8)).sum()),
        "0.50-0.70": int(((planted_j >= 0.5) & (planted_j < 0.7)).sum()), "<0.50": int((planted_j < 0.5).sum())}
    out["near_precision_same_family"] = round(float(same_family[nd].mean()) if nd.any() else 1.0, 5)
    out["precision_all_removals_same_family"] = round(float(same_family.mean()) if len(same_family) else 1.0, 5)
    # Leakage: train records whose family has a validation copy (exact, or near with J >= 0.85).
    leak_fams = np.unique(fam[(typ == C.T_EVAL_EXACT) | ((typ == C.T_EVAL_NEAR) & (jac >= 0.85))])
    train = typ < C.T_EVAL_EXACT
    in_leak = train & np.isin(fam, leak_fams) & ((typ != C.T_NEAR) | (jac >= 0.85))
    leak_removed = np.zeros(len(order), dtype=bool)
    leak_removed[at(r_order[r_reason == "validation_leak"])] = True
    out["leak"] = {"train_records_copying_val": int(in_leak.sum()),
                   "removed_as_leak": int((in_leak & leak_removed).sum()),
                   "eval_records_removed": int((typ[at(r_order)] >= C.T_EVAL_EXACT).sum())}
    return out


# ---------------------------------------------------------------------------------------------- main

def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=100_000, help="train records (validation: +1%%)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shape", default="planted", choices=C.SHAPES, help="corpus shape (see corpus.py)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--shard-rows", type=int, default=25_000)
    ap.add_argument("--baseline", type=int, default=3000, help="records for the plain-loop baseline (0: skip)")
    ap.add_argument("--data-dir", default=None, help="corpus cache (default /tmp/dedup_bench/<records>_<seed>)")
    ap.add_argument("--work-dir", default=None)
    ap.add_argument("--out", default=None, help="JSON results (default <work-dir>/bench.json)")
    ap.add_argument("--keep", default="first", choices=["first", "longest", "most_turns"])
    args = ap.parse_args(argv)

    from pipeline.core.config import DedupConfig

    cfg = DedupConfig(keep=args.keep)
    n_eval = max(1, args.records // 100)
    tag = f"{args.records}_{args.seed}" if args.shape == "planted" else f"{args.shape}_{args.records}_{args.seed}"
    data_dir = Path(args.data_dir or f"/tmp/dedup_bench/{tag}")
    work_dir = Path(args.work_dir or f"/tmp/dedup_bench/work_{tag}")
    work_dir.mkdir(parents=True, exist_ok=True)
    shards = ensure_corpus(data_dir, args.records, n_eval, args.seed, args.shard_rows, args.workers, args.shape)
    total = args.records + n_eval
    load_before = [round(x, 2) for x in os.getloadavg()]
    ctx = mp.get_context("spawn")
    cfg_json = cfg.model_dump_json()

    # Keys: per shard in worker processes (pool start-up included in the wall time).
    key_paths = [str(work_dir / f"keys-{i:05d}.parquet") for i in range(len(shards))]
    t = time.perf_counter()
    with ProcessPoolExecutor(args.workers, mp_context=ctx) as pool:
        per_shard = list(pool.map(_keys_task, zip(shards, key_paths, [cfg_json] * len(shards))))
    keys_wall = time.perf_counter() - t

    # Global step in its own process.
    t = time.perf_counter()
    with ProcessPoolExecutor(1, mp_context=ctx) as pool:
        removed_bytes, report, global_s, global_rss = pool.submit(
            _global_task, (key_paths, cfg_json, str(work_dir))).result()
    global_wall = time.perf_counter() - t
    removed = pa.ipc.open_stream(removed_bytes).read_all()
    pq.write_table(removed, work_dir / "removed.parquet")  # the audit file, for a closer look

    truth = pa.concat_tables([pq.read_table(p + ".truth") for p in shards])
    truth = {c: truth.column(c).to_numpy() for c in TRUTH_SCHEMA.names}
    quality = metrics(removed, truth, cfg.threshold)

    res = {
        "shape": args.shape, "records": total, "train": args.records, "validation": n_eval, "shards": len(shards),
        "workers": args.workers, "cpu_count": os.cpu_count(),
        "load_average_before_after": [load_before, [round(x, 2) for x in os.getloadavg()]],
        "keys": {
            "wall_s": round(keys_wall, 2),
            "compute_keys_s_sum": round(sum(s["keys_s"] for s in per_shard), 2),
            "read_shard_s_sum": round(sum(s["read_s"] for s in per_shard), 2),
            "compute_keys_cpu_s_sum": round(sum(s["keys_cpu_s"] for s in per_shard), 2),
            "signature_records_per_s_per_core": round(total / sum(s["keys_s"] for s in per_shard), 1),
            "signature_records_per_cpu_s": round(total / sum(s["keys_cpu_s"] for s in per_shard), 1),
            "records_per_s_wall": round(total / keys_wall, 1),
            "key_bytes_per_record": round(sum(s["key_bytes"] for s in per_shard) / total, 1),
            "worker_peak_rss_mb": round(max(s["rss_mb"] for s in per_shard), 1),
        },
        "global": {"wall_s": round(global_wall, 2), "find_duplicates_s": round(global_s, 2),
                   "cpu_s": report.get("cpu_s"), "peak_rss_mb": round(global_rss, 1),
                   "seconds": report.get("seconds"), "peak_rss_mb_after_phase": report.get("peak_rss_mb")},
        "stage": {"wall_s": round(keys_wall + global_wall, 2),
                  "records_per_s": round(total / (keys_wall + global_wall), 1),
                  "cpu_s": round(sum(s["keys_cpu_s"] for s in per_shard) + report.get("cpu_s", 0), 2),
                  "records_per_cpu_s": round(total / (sum(s["keys_cpu_s"] for s in per_shard)
                                                      + report.get("cpu_s", 0)), 1)},
        "report_counts": report["counts"], "report_leak": report["validation_leak"],
        "clusters": report["clusters"], "lsh": report["lsh"],
        "lsh_params": {k: report["parameters"][k] for k in ("bands", "rows", "lsh_threshold",
                                                              "candidate_probability")},
        "quality": quality,
    }
    if args.baseline:
        from pipeline.core.records import from_table

        sub = from_table(pq.read_table(shards[0]).slice(0, args.baseline))
        base = baseline(sub)
        ours = our_signatures_single(sub, cfg)
        bulk = bulk_reference(sub)
        res["baseline"] = {
            "plain_loop": {k: round(v, 2) if isinstance(v, float) else v for k, v in base.items()},
            "datasketch_bulk_xxhash_signatures_only": {k: round(v, 2) if isinstance(v, float) else v
                                                       for k, v in bulk.items()},
            "ours_compute_keys_same_subset_1_core": {k: round(v, 2) if isinstance(v, float) else v
                                                     for k, v in ours.items()},
            "speedup_stage_vs_plain_loop": round(res["stage"]["records_per_s"] / base["records_per_s"], 1),
            "speedup_signatures_1_core_vs_plain_loop": round(ours["records_per_s"] / base["records_per_s"], 1),
            "speedup_per_cpu_s_stage_vs_plain_loop": round(
                res["stage"]["records_per_cpu_s"] / base["records_per_cpu_s"], 1),
        }
    out = Path(args.out or work_dir / "bench.json")
    out.write_text(json.dumps(res, indent=2))
    print(json.dumps(res, indent=2))
    return res


if __name__ == "__main__":
    main()
