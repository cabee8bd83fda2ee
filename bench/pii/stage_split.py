"""Where the PII stage's CPU time goes: PiiStep.process over bench/pii's generated records in one fresh
process, set-up included, split by part (each part timed by wrapping the function that does it).

    .venv/bin/python bench/pii/stage_split.py            # 1500 + 300 name records, seed 7

Parts: set-up (PiiStep(), the detector, natasha's model load on first use), natasha's windows, the two name
recognizers, the identifier recognizers (triggered() and find() of each, phone parsing inside), and what
the step does around the detector (walking the records, the language guess, span plan and name mentions,
special categories, operators). The wrappers add about 0.5 us a call; the shares are what to read.
"""
from __future__ import annotations

import argparse
import copy
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

NAME_RECOGNIZERS = ("LatinNameRecognizer", "RussianNameGazetteer")


def _wrap(obj, attr: str, key: str, acc: Counter) -> None:
    fn = getattr(obj, attr)

    def timed(*args, **kwargs):
        c = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            acc[key] += time.process_time() - c
    setattr(obj, attr, timed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=1500)
    ap.add_argument("--name-records", type=int, default=300)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--batch-size", type=int, default=500)
    args = ap.parse_args()
    from generate import generate, generate_names

    rows = generate(args.records, args.seed) + generate_names(args.name_records, args.seed)
    records = [copy.deepcopy(r["record"]) for r in rows]
    import pipeline.data.pii.engine  # noqa: F401  imports outside the timer, as in run.py
    from pipeline.core.config import PiiConfig
    from pipeline.data.pii import PiiStep
    from pipeline.data.pii import step as step_module

    acc: Counter = Counter()
    c0 = time.process_time()
    step = PiiStep(PiiConfig(), salt=b"bench-salt-not-secret")
    detector = step.detector
    acc["set-up: PiiStep() and the detector"] = time.process_time() - c0
    for recs in detector.fast.values():
        for rec in recs:
            name = type(rec).__name__
            group = "names: " + name if name in NAME_RECOGNIZERS else "identifiers: " + name
            _wrap(rec, "triggered", group, acc)
            _wrap(rec, "find", group, acc)
    for rec in detector.natasha.values():
        _wrap(rec, "find_many", "names: natasha windows (model load on first use included)", acc)
    for attr, key in (("_walk_columns", "step: walking the records"), ("_language", "step: language guess"),
                      ("_plan", "step: span plan, name mentions"),
                      ("_special_removes", "step: special categories"), ("_write_back", "step: operators, write-back")):
        _wrap(step, attr, key, acc)
    c1 = time.process_time()
    for i in range(0, len(records), args.batch_size):
        step(records[i:i + args.batch_size])
    total = time.process_time() - c0
    parts = dict(acc)
    ident = sum(v for k, v in parts.items() if k.startswith("identifiers: "))
    step_parts = sum(v for k, v in parts.items() if k.startswith("step: "))
    wrapped = sum(parts.values())
    print(f"{len(records)} records, CPU {total:.3f} s with set-up ({time.process_time() - c1:.3f} s processing)")
    print(f"{'part':64s} {'CPU s':>7s} {'share':>6s}")
    for k, v in sorted(parts.items(), key=lambda kv: -kv[1]):
        if not k.startswith("identifiers: "):
            print(f"{k:64s} {v:7.3f} {v / total:6.1%}")
    print(f"{'identifiers: all 16 recognizers':64s} {ident:7.3f} {ident / total:6.1%}")
    for k, v in sorted(parts.items(), key=lambda kv: -kv[1])[:40]:
        if k.startswith("identifiers: ") and v / total >= 0.01:
            print(f"{'  ' + k[13:]:64s} {v:7.3f} {v / total:6.1%}")
    print(f"{'step parts together':64s} {step_parts:7.3f} {step_parts / total:6.1%}")
    print(f"{'the rest (detector loop, text views, counting, wrappers)':64s} {total - wrapped:7.3f} "
          f"{(total - wrapped) / total:6.1%}")
    del step_module


if __name__ == "__main__":
    main()
