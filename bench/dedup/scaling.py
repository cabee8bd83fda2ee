"""How the global dedup step grows with the records, per corpus shape: n, 2n and 4n records.

    .venv/bin/python bench/dedup/scaling.py                                   # templated + neardup, n = 25k
    .venv/bin/python bench/dedup/scaling.py --records 30000 --shapes templated planted
    git show <rev>:pipeline/data/dedup/clusters.py > /tmp/old.py
    .venv/bin/python bench/dedup/scaling.py --compare-with /tmp/old.py       # the same key files, both versions

Per shape and size: the corpus (cached in /tmp/dedup_bench like run.py's), the keys per shard in --workers
processes, then find_duplicates in a fresh process each time (its peak RSS is its own): seconds, peak RSS,
verifications and the quality figures of run.py. The figure that matters is the ratio to n in the same run:
time(4n) / time(n) near 4 means linear (CPU seconds too: on a shared machine the wall time is noisy). --compare-with runs a clusters.py from another revision on the same
key files (its decisions compared with this one's).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing as mp
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

import corpus as C  # noqa: E402
import run as R  # noqa: E402


def _global(args):
    key_paths, work_dir, impl = args
    import pyarrow as pa

    from pipeline.core.config import DedupConfig

    if impl:
        spec = importlib.util.spec_from_file_location("pipeline.data.dedup._compared_clusters", impl)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        find = mod.find_duplicates
    else:
        from pipeline.data.dedup import find_duplicates as find
    t, c = time.perf_counter(), time.process_time()
    result = find(key_paths, DedupConfig(), work_dir)
    seconds, cpu = time.perf_counter() - t, time.process_time() - c
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, result.removed.schema) as w:
        w.write_table(result.removed)
    return sink.getvalue().to_pybytes(), result.report, seconds, cpu, R._rss_mb()


def measure(shape: str, n_train: int, args, ctx) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.core.config import DedupConfig

    tag = f"{n_train}_{args.seed}" if shape == "planted" else f"{shape}_{n_train}_{args.seed}"
    data_dir, work_dir = Path(f"/tmp/dedup_bench/{tag}"), Path(f"/tmp/dedup_bench/work_{tag}")
    work_dir.mkdir(parents=True, exist_ok=True)
    shards = R.ensure_corpus(data_dir, n_train, max(1, n_train // 100), args.seed, args.shard_rows, args.workers,
                             shape)
    key_paths = [str(work_dir / f"keys-{i:05d}.parquet") for i in range(len(shards))]
    stamp = work_dir / "KEYS"
    if not (stamp.exists() and stamp.read_text() == (data_dir / "DONE").read_text()):
        cfg_json = DedupConfig().model_dump_json()
        with ProcessPoolExecutor(args.workers, mp_context=ctx) as pool:
            list(pool.map(R._keys_task, zip(shards, key_paths, [cfg_json] * len(shards))))
        stamp.write_text((data_dir / "DONE").read_text())
    truth = pa.concat_tables([pq.read_table(p + ".truth") for p in shards])
    truth = {c: truth.column(c).to_numpy() for c in R.TRUTH_SCHEMA.names}
    out = {"records": int(len(truth["order"]))}
    for name, impl in (("this", None), ("compared", args.compare_with)):
        if name == "compared" and not impl:
            continue
        with ProcessPoolExecutor(1, mp_context=ctx) as pool:
            removed, report, seconds, cpu, rss = pool.submit(_global, (key_paths, str(work_dir), impl)).result()
        removed = pa.ipc.open_stream(removed).read_all()
        q = R.metrics(removed, truth, DedupConfig().threshold)
        out[name] = {
            "seconds": round(seconds, 2), "cpu_s": round(cpu, 2), "peak_rss_mb": round(rss, 1),
            "phases_s": report.get("seconds"), "lsh": report.get("lsh"), "counts": report["counts"],
            "largest_cluster": report["clusters"]["largest"],
            "recall": {k: q[k]["rate"] for k in ("near_J[0.85,1.00]", "near_J[0.80,0.85)", "near_J[0.70,0.80)")},
            "recall_same_family": {k: q[k]["rate_same_family"]
                                   for k in ("near_J[0.85,1.00]", "near_J[0.80,0.85)", "near_J[0.70,0.80)")},
            "precision_all_removals_same_family": q["precision_all_removals_same_family"],
            "near_precision_same_family": q["near_precision_same_family"],
            "originals_removed_not_leak": q["originals_removed_not_leak"],
            "leak_removed": f"{q['leak']['removed_as_leak']}/{q['leak']['train_records_copying_val']}",
        }
        out[name]["_removed"] = removed
    if "compared" in out:
        out["same_decisions"] = bool(out["this"]["_removed"].equals(out["compared"]["_removed"]))
    for name in ("this", "compared"):
        out.get(name, {}).pop("_removed", None)
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=25_000, help="n: train records of the smallest size")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 4], help="multiples of n")
    ap.add_argument("--shapes", nargs="+", default=["templated", "neardup"], choices=C.SHAPES)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--shard-rows", type=int, default=25_000)
    ap.add_argument("--compare-with", default=None, help="a clusters.py of another revision, run on the same keys")
    ap.add_argument("--out", default="/tmp/dedup_bench/scaling.json")
    args = ap.parse_args(argv)
    ctx = mp.get_context("spawn")
    res: dict = {"n": args.records, "sizes": args.sizes, "shapes": {}}
    for shape in args.shapes:
        rows = {}
        for m in args.sizes:
            rows[str(m)] = measure(shape, args.records * m, args, ctx)
            print(f"{shape} {m}n: " + json.dumps({k: v for k, v in rows[str(m)].items() if k != "this"}
                                                 | {"this": {k: rows[str(m)]["this"][k] for k in (
                                                     "seconds", "peak_rss_mb", "counts")}}), flush=True)
        base = rows[str(args.sizes[0])]
        for name in ("this", "compared"):
            if name in base:
                for m in args.sizes:
                    r = rows[str(m)][name]
                    r["time_ratio_to_n"] = round(r["seconds"] / max(base[name]["seconds"], 1e-9), 2)
                    r["cpu_ratio_to_n"] = round(r["cpu_s"] / max(base[name]["cpu_s"], 1e-9), 2)
                    r["verifications_per_record"] = round(
                        (r["lsh"].get("verifications", r["lsh"].get("candidate_pairs", 0))) / rows[str(m)]["records"],
                        2)
        res["shapes"][shape] = rows
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2))
    summary = {shape: {m: {name: {k: rows[m][name][k] for k in (
        "seconds", "time_ratio_to_n", "cpu_s", "cpu_ratio_to_n", "peak_rss_mb", "verifications_per_record")}
                           for name in ("this", "compared") if name in rows[m]} for m in rows}
               for shape, rows in res["shapes"].items()}
    print(json.dumps(summary, indent=2))
    return res


if __name__ == "__main__":
    main()
