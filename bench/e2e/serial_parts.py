"""Side by side: the main process's serial parts of a run, under two checkouts of the code (base, new).

    python bench/e2e/serial_parts.py --run RUN_DIR --base /path/to/base/checkout --rounds 3 [--parts plan dedup]

RUN_DIR: a finished run whose work folder was kept (its key, history, lang and processed files) and whose
corpus is RUN_DIR/../corpus (bench/e2e's). Each part runs in a fresh process per round (`--part NAME`, the code of
one checkout on sys.path), base and new alternating; CPU seconds (process_time) of the part alone, best of the
rounds, and a digest of what it returned or wrote, which must be the same under both.
  plan       split_ranges over the corpus files (plan_shards' line counting), read.shard_bytes 6 MB
  dedup      find_duplicates over the key files (phase 2's global dedup)
  split      choose_validation over the language files, without the removed records (phase 2)
  untrained  count_untrained over the processed files at the run's max length (finalize)
  index      write_index of the history files against the shards' ids (finalize's write_dedup_index)
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

PARTS = ("plan", "dedup", "split", "untrained", "index")


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:12]


def run_part(part: str, run: Path) -> tuple[float, str]:
    from pipeline.core.config import PrepareConfig
    from pipeline.data.normalize import ORDER_SHIFT

    cfg = PrepareConfig(inputs=["x"], out=str(run))
    work = run / "work"
    if part == "plan":
        from pipeline.data.readers import describe, split_ranges

        files = sorted(glob.glob(str(run.parent / "corpus" / "*")))
        t = time.process_time()
        ranges = [(r.start, r.end, r.first_line) for f in files for r in split_ranges(describe(f), 6_000_000)]
        return time.process_time() - t, _digest(ranges)
    if part == "dedup":
        from pipeline.data.dedup.clusters import find_duplicates

        t = time.process_time()
        result = find_duplicates(sorted(glob.glob(str(work / "keys" / "*.parquet"))), cfg.dedup, str(work / "b"))
        spent = time.process_time() - t
        report = {k: v for k, v in result.report.items() if k not in ("seconds", "cpu_seconds", "peak_rss_mb")}
        return spent, _digest([report, result.removed.to_pydict()])
    if part == "split":
        from pipeline.data.split import choose_validation

        out = work / "b-validation_ids.parquet"
        t = time.process_time()
        report = choose_validation(sorted(glob.glob(str(work / "langs" / "*.parquet"))),
                                   [str(run / "dedup_removed.parquet"), str(work / "canned_drop.parquet")],
                                   cfg.split, str(out), ORDER_SHIFT)
        return time.process_time() - t, _digest([report, hashlib.sha256(out.read_bytes()).hexdigest()])
    if part == "untrained":
        from pipeline.data.lengths.untrained import count_untrained

        max_len = json.loads((run / "report.json").read_text())["lengths"]["max_seq_len"]
        processed = [Path(p) for p in sorted(glob.glob(str(work / "processed" / "*.parquet")))]
        t = time.process_time()
        found = count_untrained(processed, cfg, max_len, None)
        return time.process_time() - t, _digest(found)
    if part == "index":
        import pyarrow.parquet as pq

        from pipeline.data.dedup.history import write_index

        shards = json.loads((run / "manifest.json").read_text())["shards"]
        out = work / "b-index.parquet"
        t = time.process_time()
        written = {s["path"]: pq.read_table(run / s["path"], columns=["id"])["id"].combine_chunks() for s in shards}
        write_index(sorted(Path(p) for p in glob.glob(str(work / "history" / "*.parquet"))), written, cfg.dedup, out)
        return time.process_time() - t, hashlib.sha256(out.read_bytes()).hexdigest()[:12]
    raise ValueError(part)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--run", required=True)
    parser.add_argument("--base", help="the base checkout's root")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--part", choices=PARTS, help="(internal) one part, in this process")
    args = parser.parse_args()
    if args.part:
        spent, digest = run_part(args.part, Path(args.run))
        print(json.dumps([spent, digest]))
        return
    roots = {"base": args.base, "new": str(Path(__file__).resolve().parents[2])}
    print(f"{'part':<10} {'base CPU-s':>10} {'new CPU-s':>10} {'new/base':>9}  same output")
    for part in args.parts:
        best, digests = {}, {}
        for _ in range(args.rounds):
            for name, root in roots.items():
                env = {**os.environ, "PYTHONPATH": root}
                out = subprocess.run([sys.executable, __file__, "--run", args.run, "--part", part], env=env,
                                     capture_output=True, text=True, check=True, cwd=root)
                spent, digest = json.loads(out.stdout.strip().splitlines()[-1])
                best[name] = min(best.get(name, spent), spent)
                digests.setdefault(name, set()).add(digest)
        same = digests["base"] == digests["new"] and len(digests["new"]) == 1
        print(f"{part:<10} {best['base']:>10.3f} {best['new']:>10.3f} {best['new'] / best['base']:>9.2f}  "
              f"{'yes' if same else 'NO ' + str(digests)}")


if __name__ == "__main__":
    main()
