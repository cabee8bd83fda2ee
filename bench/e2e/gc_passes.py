"""The cyclic garbage collector's cost in a batch-working process: the PII step (the step that allocates the most
objects a record) over bench/e2e's corpus at Python's default thresholds and at the ones pipeline.core.env sets in
every worker (steady_heap), alternating in one process, CPU seconds, least of the rounds.

    .venv/bin/python bench/e2e/gc_passes.py [--work DIR] [--rounds 3] [--save]   # -> bench/e2e/gc_passes_last_run.txt

The records are those bench/pii/stage_speed.py makes (the corpus through `prepare run` with PII off; cached in
--work). Three copies of them stay alive beside the batches, as a worker holds its shard's other records.
"""
from __future__ import annotations

import argparse
import copy
import gc
import os
import pickle
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "pii"))

from stage_speed import BATCH, WARM, records_file  # noqa: E402

from pipeline.core.env import BATCH_GC_THRESHOLDS, set_defaults  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default="/tmp/prepare-stage-speed")
    ap.add_argument("--size", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--save", action="store_true")
    args = ap.parse_args()
    set_defaults()
    from pipeline.core.config import PiiConfig
    from pipeline.data.pii import PiiStep

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    records = pickle.loads(records_file(work, args.size).read_bytes())
    step = PiiStep(PiiConfig(), salt=b"bench")
    step(copy.deepcopy(records[:WARM]))
    alive = [copy.deepcopy(records) for _ in range(3)]  # noqa: F841  (a worker's other live records)
    modes = {"default (700, 10, 10)": (700, 10, 10), f"batch {BATCH_GC_THRESHOLDS}": BATCH_GC_THRESHOLDS}
    lines = [f"# command: bench/e2e/gc_passes.py --size {args.size} --rounds {args.rounds}; load "
             + " ".join(f"{x:.2f}" for x in os.getloadavg()),
             f"PII step over {len(records):,} records of bench/e2e's corpus, batches of {BATCH:,}; CPU-s per round:"]
    best: dict[str, float] = {}
    passes: dict[str, int] = {}
    for r in range(args.rounds):
        for label, thresholds in modes.items():
            batches = [copy.deepcopy(records[i:i + BATCH]) for i in range(0, len(records), BATCH)]
            step.detector.clear_cache()
            gc.collect()
            gc.set_threshold(*thresholds)
            before = sum(s["collections"] for s in gc.get_stats())
            t = time.process_time()
            for b in batches:
                step(b)
            dt = time.process_time() - t
            passes[label] = sum(s["collections"] for s in gc.get_stats()) - before
            gc.set_threshold(700, 10, 10)
            best[label] = min(best.get(label, dt), dt)
            lines.append(f"  round {r + 1}  {label:24s} {dt:6.2f}")
    base = best[next(iter(modes))]
    for label in modes:
        lines.append(f"least: {label:24s} {best[label]:6.2f} CPU-s ({best[label] / base:.2f}x), "
                     f"{passes[label]:,} collector passes a round")
    text = "\n".join(lines)
    print(text)
    if args.save:
        (HERE / "gc_passes_last_run.txt").write_text(text + "\n")


if __name__ == "__main__":
    main()
