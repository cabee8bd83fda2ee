"""The dedup key step's CPU in a plain process and in one started as Dask's nanny starts workers
(MALLOC_TRIM_THRESHOLD_=65536), each with and without pipeline.core.env.steady_heap(), side by side.

    .venv/bin/python bench/e2e/malloc.py            # 20,000 bench/e2e-style records, 3 rounds
    .venv/bin/python bench/e2e/malloc.py --child steady --records 5000   # one measurement (what the rounds run)

Each measurement is a fresh process (the allocator's thresholds are per process); the rounds alternate the four
settings so the machine's load falls on each alike. Printed: CPU seconds (user + system), system seconds, minor
page faults and peak RSS of compute_keys over the records in batches of 1,000 (the runner's batch size).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = {  # name: (environment added, steady_heap called)
    "plain": ({}, False),
    "plain + steady_heap": ({}, True),
    "dask nanny env": ({"MALLOC_TRIM_THRESHOLD_": "65536"}, False),
    "dask nanny env + steady_heap": ({"MALLOC_TRIM_THRESHOLD_": "65536"}, True),
}


def child(steady: bool, records: int) -> dict:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from corpus import _text

    from pipeline.core.config import PrepareConfig
    from pipeline.core.env import steady_heap
    from pipeline.data.dedup.keys import compute_keys

    if steady:
        assert steady_heap()
    r = random.Random(1)
    recs = [{"_order": i, "id": str(i), "kind": "text", "source": {"file": "f", "line": i},
             "text": _text(r, r.choice(("tr", "ru", "en")), r.randint(20, 400))} for i in range(records)]
    cfg = PrepareConfig().dedup
    before = resource.getrusage(resource.RUSAGE_SELF)
    for lo in range(0, records, 1000):
        compute_keys(recs[lo:lo + 1000], cfg)
    after = resource.getrusage(resource.RUSAGE_SELF)
    return {"cpu": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
            "sys": after.ru_stime - before.ru_stime, "minflt": after.ru_minflt - before.ru_minflt,
            "rss_mib": after.ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", choices=("plain", "steady"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child == "steady", args.records)))
        return
    runs: dict[str, list[dict]] = {name: [] for name in SETTINGS}
    for _ in range(args.rounds):
        for name, (env, steady) in SETTINGS.items():
            out = subprocess.run([sys.executable, __file__, "--child", "steady" if steady else "plain",
                                  "--records", str(args.records)], env={**os.environ, **env},
                                 capture_output=True, text=True, check=True).stdout
            runs[name].append(json.loads(out))
    base = statistics.median(m["cpu"] for m in runs["plain"])
    print(f"compute_keys over {args.records:,} records, {args.rounds} rounds, medians; load {os.getloadavg()[0]:.1f}")
    print(f"{'setting':30} {'CPU-s':>7} {'sys-s':>7} {'minor faults':>13} {'peak RSS MiB':>13} {'CPU vs plain':>13}")
    for name, ms in runs.items():
        med = {k: statistics.median(m[k] for m in ms) for k in ms[0]}
        print(f"{name:30} {med['cpu']:7.2f} {med['sys']:7.2f} {med['minflt']:13,.0f} {med['rss_mib']:13,.0f} "
              f"{med['cpu'] / base:12.2f}x")


if __name__ == "__main__":
    main()
