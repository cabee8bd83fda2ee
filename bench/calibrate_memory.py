"""Refit the framework constants of pipeline.plan.memory on the published measurements and print the per-point error.

    python bench/calibrate_memory.py            # fit, print, write pipeline/resources/memory_constants.json
    python bench/calibrate_memory.py --check    # print the errors of the stored constants only

The fit minimizes the mean squared log error (relative error, symmetric for over- and under-estimates) over all
points marked use=true in pipeline/resources/vram_calibration.json, inside the bounds in memory_constants.json, with a
bounded pattern search (no scipy needed). Points are never weighted or adjusted one by one.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.pattern_search import pattern_search  # noqa: E402
from pipeline.plan.memory import (  # noqa: E402
    CONSTANTS_FILE,
    UNIT_BYTES,
    calibration_summary,
    calibration_table,
    format_calibration_table,
    load_calibration_points,
    predict_calibration_point,
)


def objective(constants: dict, points: list[dict]) -> float:
    errors = [math.log(predict_calibration_point(p, constants) / (p["value"] * UNIT_BYTES[p["unit"]]))
              for p in points]
    return sum(e * e for e in errors) / len(errors)


def fit(points: list[dict], start: dict, bounds: dict, min_step: float = 1e-4) -> dict:
    return {n: round(v, 4) for n, v in pattern_search(lambda c: objective(c, points), start, bounds, min_step).items()}


def leave_one_source_out(points: list[dict], start: dict, bounds: dict) -> list[dict]:
    """For each source: fit on all the other sources' points, score this source's points (the honest figure:
    no point is scored with constants fitted on it)."""
    rows = []
    for source in sorted({p["source"] for p in points}):
        rest = [p for p in points if p["source"] != source]
        fitted = fit(rest, start, bounds, min_step=1e-3)
        for p in points:
            if p["source"] == source:
                measured = p["value"] * UNIT_BYTES[p["unit"]]
                rows.append({"source": source, "id": p["id"],
                             "error": predict_calibration_point(p, fitted) / measured - 1})
    return rows


def format_loso(rows: list[dict]) -> str:
    lines = ["leave-one-source-out (fitted on the other sources):",
             f"{'source':48s} {'points':>6s} {'median':>8s} {'max':>8s}"]
    for source in sorted({r["source"] for r in rows}):
        errs = sorted(abs(r["error"]) for r in rows if r["source"] == source)
        lines.append(f"{source[:48]:48s} {len(errs):6d} {statistics.median(errs):8.1%} {errs[-1]:8.1%}")
    errs = sorted(abs(r["error"]) for r in rows)
    lines.append(f"all {len(errs)} points: median |error| {statistics.median(errs):.1%}, max {errs[-1]:.1%}; "
                 f"within 25%: {sum(e <= 0.25 for e in errs)}")
    return "\n".join(lines)


def _dumps(table: dict) -> str:
    """Indented JSON with short lists and flat objects of numbers/strings on one line, for readable diffs."""
    text = json.dumps(table, indent=2)
    text = re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]",
                  text)
    return text + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="print the stored constants' errors, fit nothing")
    parser.add_argument("--constants", type=Path, default=CONSTANTS_FILE)
    args = parser.parse_args(argv)

    table = json.loads(args.constants.read_text())
    if not args.check:
        points = [p for p in load_calibration_points() if p["use"]]
        fitted = fit(points, table["fitted"], table["fit_bounds"])
        rows = calibration_table(fitted)
        summary = calibration_summary(rows)
        table["fitted"] = fitted
        table["fit_result"] = {"points": summary["points"],
                               "median_abs_error": round(summary["median_abs_error"], 4),
                               "max_abs_error": round(summary["max_abs_error"], 4),
                               "objective": "mean squared log error over use=true points"}
        args.constants.write_text(_dumps(table))
        print("fitted constants:", json.dumps(fitted))
    else:
        rows = calibration_table(table["fitted"])
    print(format_calibration_table(rows))
    points = [p for p in load_calibration_points() if p["use"]]
    print(format_loso(leave_one_source_out(points, table["fitted"], table["fit_bounds"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
