"""CPU seconds per record of the dedup stage, this checkout against another one, side by side, with quality.

    .venv/bin/python bench/dedup/cost.py --baseline-root /work/main --records 20000 --reps 3
    .venv/bin/python bench/dedup/cost.py --baseline-root /work/main --shape templated

Each repetition runs both revisions, alternately, each in a fresh process that imports ``pipeline`` from its
own root: the keys step (compute_keys + write_keys per shard, one process) and the global step
(find_duplicates), timed with time.process_time (all threads of the process; the machine is shared, so CPU
seconds, not wall). The lowest of the repetitions is reported (the least disturbed), with the quality of the
last one from the planted ground truth (run.metrics) and where the misses fall (misses.py).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def child(root: str, shards: list[str], work_dir: str) -> dict:
    """Runs in the fresh process of one revision."""
    sys.path.insert(0, root)
    import pyarrow.parquet as pq

    from pipeline.core.config import DedupConfig
    from pipeline.core.records import from_table
    from pipeline.data.dedup import compute_keys, find_duplicates, write_keys

    cfg = DedupConfig()
    Path(work_dir).mkdir(parents=True, exist_ok=True)
    compute_keys(from_table(pq.read_table(shards[0]).slice(0, 50)), cfg)  # the char table, permutations
    keys_cpu, key_paths, records = 0.0, [], 0
    for i, shard in enumerate(shards):
        batch = from_table(pq.read_table(shard))
        records += len(batch)
        path = f"{work_dir}/keys-{i:05d}.parquet"
        c = time.process_time()
        write_keys(compute_keys(batch, cfg), path)
        keys_cpu += time.process_time() - c
        key_paths.append(path)
    c = time.process_time()
    result = find_duplicates(key_paths, cfg, work_dir)
    global_cpu = time.process_time() - c
    pq.write_table(result.removed, f"{work_dir}/removed.parquet")
    key_bytes = sum(Path(p).stat().st_size for p in key_paths)
    return {"records": records, "keys_cpu_s": keys_cpu, "global_cpu_s": global_cpu,
            "key_bytes_per_record": key_bytes / records, "lsh": result.report["lsh"]}


def _run(root: Path, shards: list[str], work_dir: Path) -> dict:
    code = (f"import sys, json; sys.path.insert(0, {str(HERE)!r}); import cost; "
            f"print(json.dumps(cost.child({str(root)!r}, {shards!r}, {str(work_dir)!r})))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         cwd=str(root), env={"PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline-root", required=True, help="a checkout of the baseline revision (e.g. main)")
    ap.add_argument("--records", type=int, default=20_000, help="train records (validation: +1%%)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shape", default="planted", help="corpus shape (corpus.SHAPES)")
    ap.add_argument("--shard-rows", type=int, default=5_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--work-dir", default=None)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(HERE))
    import misses
    import pyarrow as pa
    import pyarrow.parquet as pq
    import run as R

    tag = f"{args.shape}_{args.records}_{args.seed}_{args.shard_rows}"
    data_dir = Path(args.data_dir or f"/tmp/dedup_bench/cost_{tag}")
    work = Path(args.work_dir or f"/tmp/dedup_bench/cost_work_{tag}")
    shards = R.ensure_corpus(data_dir, args.records, max(1, args.records // 100), args.seed, args.shard_rows, 2,
                             args.shape)
    sides = {"baseline": Path(args.baseline_root).resolve(), "this": ROOT}
    runs: dict[str, list[dict]] = {s: [] for s in sides}
    for _ in range(args.reps):
        for side, root in sides.items():
            runs[side].append(_run(root, shards, work / side))
    truth = pa.concat_tables([pq.read_table(p + ".truth") for p in shards])
    truth = {c: truth.column(c).to_numpy() for c in R.TRUTH_SCHEMA.names}
    out: dict = {"shape": args.shape, "records": runs["this"][0]["records"], "reps": args.reps, "sides": {}}
    for side, root in sides.items():
        best = {k: min(r[k] for r in runs[side]) for k in ("keys_cpu_s", "global_cpu_s")}
        n = runs[side][0]["records"]
        quality = R.metrics(pq.read_table(work / side / "removed.parquet"), truth, 0.8)
        missed = misses.main(["--data-dir", str(data_dir), "--work-dir", str(work / side)])
        out["sides"][side] = {
            "root": str(root),
            "keys_cpu_us_per_record": round(1e6 * best["keys_cpu_s"] / n, 1),
            "global_cpu_us_per_record": round(1e6 * best["global_cpu_s"] / n, 1),
            "stage_cpu_us_per_record": round(1e6 * (best["keys_cpu_s"] + best["global_cpu_s"]) / n, 1),
            "all_reps_keys_cpu_s": [round(r["keys_cpu_s"], 3) for r in runs[side]],
            "all_reps_global_cpu_s": [round(r["global_cpu_s"], 3) for r in runs[side]],
            "key_bytes_per_record": round(runs[side][0]["key_bytes_per_record"], 1),
            "lsh": runs[side][-1]["lsh"],
            "recall_J>=0.85": quality["near_J[0.85,1.00]"],
            "recall_J[0.80,0.85)": quality["near_J[0.80,0.85)"],
            "recall_J[0.70,0.80)": quality["near_J[0.70,0.80)"],
            "near_removals_by_planted_jaccard": quality["near_removals_by_planted_jaccard"],
            "precision_all_removals_same_family": quality["precision_all_removals_same_family"],
            "hard_negatives": quality["hard_negatives"], "exact": quality["exact"], "leak": quality["leak"],
            "missed_J>=0.85": missed,
        }
    b, t = out["sides"]["baseline"], out["sides"]["this"]
    out["ratio_this_over_baseline"] = {k: round(t[k] / b[k], 3) for k in (
        "keys_cpu_us_per_record", "global_cpu_us_per_record", "stage_cpu_us_per_record")}
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
