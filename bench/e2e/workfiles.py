"""Side by side, in one process: the work files' record (de)serialization (core.records to_table and from_table)
against a base checkout's, on the records of one phase-1 work file of a run.

    python bench/e2e/workfiles.py --work RUN/work --base /work/tmp/baseef67473 --rounds 5

  to_table    records -> Arrow table, as phase 1 writes work/normalized and phase 3 work/processed
  from_table  Arrow table -> records, as phase 3 reads work/normalized
  record_id   the id of each record (normalize; content_of is also the lengths step's cache key in phase 3)
Outputs checked equal (the tables' JSON texts byte for byte, the decoded records). CPU seconds (process_time),
best of the rounds, base and new alternating.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pipeline.core import records as new  # noqa: E402
from pipeline.runner.work import NORMALIZED_COLUMNS  # noqa: E402


def load_base(checkout: str):
    spec = importlib.util.spec_from_file_location("base_records", Path(checkout) / "pipeline/core/records.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def best(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", required=True, help="a run's kept work folder")
    parser.add_argument("--base", required=True, help="a checkout of the base commit")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    base = load_base(args.base)
    files = sorted((Path(args.work) / "normalized").glob("*.parquet"))
    print(f"{'work file':22} {'records':>8}  {'part':10} {'base CPU-s':>10} {'new CPU-s':>10} {'new/base':>8}  same")
    for path in files:
        table = pq.read_table(path)
        records = base.from_table(table)
        assert new.from_table(table) == records
        assert new.to_table(records, NORMALIZED_COLUMNS).equals(base.to_table(records, NORMALIZED_COLUMNS))
        assert [new.record_id(r) for r in records] == [base.record_id(r) for r in records]
        for part, fns in (("to_table", [lambda m=m: m.to_table(records, NORMALIZED_COLUMNS) for m in (base, new)]),
                          ("from_table", [lambda m=m: m.from_table(table) for m in (base, new)]),
                          ("record_id", [lambda m=m: [m.record_id(r) for r in records] for m in (base, new)])):
            pairs = [(best(fns[0], 1), best(fns[1], 1)) for _ in range(args.rounds)]  # alternating
            b, n = min(p[0] for p in pairs), min(p[1] for p in pairs)
            print(f"{path.parent.name + '/' + path.name:22} {len(records):8,}  {part:10} {b:10.3f} {n:10.3f} "
                  f"{n / b:8.2f}  yes")


if __name__ == "__main__":
    main()
