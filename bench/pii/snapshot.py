"""Dump what the PII step decides on bench/pii's generated set, to compare two versions of the code.

    .venv/bin/python bench/pii/snapshot.py --out /tmp/after.json
    cmp /tmp/before.json /tmp/after.json

Writes, per record, PiiStep.findings (language; per content field the kept spans and the residual
candidates) and the record process() outputs, plus the step's counters. `--root` runs another checkout's
pipeline package (the one before a change) on the same records.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=1800)
    ap.add_argument("--name-records", type=int, default=300)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--batch-size", type=int, default=500)
    ap.add_argument("--root", default=str(HERE.parents[1]), help="checkout whose pipeline package runs")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    sys.path.insert(0, args.root)
    # imported before generate.py, which puts its own checkout first on sys.path and imports pipeline
    import pipeline
    if not Path(pipeline.__file__).resolve().is_relative_to(Path(args.root).resolve()):
        raise SystemExit(f"pipeline imported from {pipeline.__file__}, not from {args.root}")
    sys.path.insert(0, str(HERE))
    from generate import generate, generate_names

    from pipeline.core.config import PiiConfig
    from pipeline.data.pii import PiiStep

    rows = generate(args.records, args.seed) + generate_names(args.name_records, args.seed)
    records = [r["record"] for r in rows]
    step = PiiStep(PiiConfig(), salt=b"snapshot-salt")
    outputs = []
    for i in range(0, len(records), args.batch_size):
        outputs += step(records[i:i + args.batch_size])
    findings = step.findings(records)
    counters = {k: v for k, v in step.stats.to_dict().items() if k not in ("seconds", "cpu_seconds")}
    doc = {"findings": [[lang, [[list(loc), [list(h) for h in kept], [list(h) for h in res]]
                                for loc, kept, res in fields]] for lang, fields in findings],
           "outputs": outputs, "counters": counters}
    Path(args.out).write_text(json.dumps(doc, ensure_ascii=False, indent=0, sort_keys=True), encoding="utf-8")
    print(f"{len(records)} records, {len(outputs)} out -> {args.out}")


if __name__ == "__main__":
    main()
