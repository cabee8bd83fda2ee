"""Fit the time model's constants on published throughput and print how well it predicts figures it never saw.

    python bench/time/loso.py            # fit, print the tables
    python bench/time/loso.py --write    # ... and store the constants and the held-out spread in
                                         # pipeline/resources/time_constants.json

The figures are the use=true entries of pipeline/resources/time_calibration.json (each with its source, quote,
config and conversion to tokens/s per GPU). The fit minimizes the mean squared log of planned/measured tokens/s
with a bounded pattern search (no scipy), each source weighted equally (a source of six figures counts as much
as a source of one). Leave-one-source-out: each source is predicted by constants fitted on the other sources
only; that is the figure to judge the model by. The H200 points of bench/gpu_peak (a plain PyTorch loop, three
steps) are printed as a check and used in no fit.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.pattern_search import pattern_search  # noqa: E402
from pipeline.plan.throughput import (  # noqa: E402
    CONSTANTS_FILE,
    figure_job,
    load_figures,
    planned_over_measured,
)

# The fitted constants and their bounds: physically plausible ranges, wide enough not to decide the fit.
BOUNDS = {
    "matmul_efficiency_ampere_datacenter": (0.2, 0.9),
    "matmul_efficiency_hopper": (0.15, 0.9),
    "matmul_efficiency_consumer": (0.2, 0.95),
    "elementwise_passes": (0.0, 40.0),
    "fused_share": (0.1, 1.0),
    "dequant_bytes_per_weight": (0.5, 30.0),
    "launch_seconds_per_kernel": (1e-6, 2e-5),  # a CUDA kernel launch with PyTorch dispatch: 5-20 us
    "flash_attention_efficiency": (0.2, 1.2),
}


def objective(constants: dict, points: list[tuple]) -> float:
    by_source: dict[str, list[float]] = {}
    for figure, job_card in points:
        by_source.setdefault(figure["source"], []).append(
            math.log(planned_over_measured(figure, constants, job_card)) ** 2)
    return statistics.fmean(statistics.fmean(v) for v in by_source.values())


def fit(points: list[tuple], start: dict, min_step: float = 1e-3) -> dict:
    fitted = {**start, **pattern_search(lambda c: objective({**start, **c}, points), start, BOUNDS, min_step)}
    return {n: (round(v, 8) if n.startswith("launch") else round(v, 4)) for n, v in fitted.items()}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    low, high = math.floor(k), math.ceil(k)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def loso(points: list[tuple], start: dict) -> dict[str, float]:
    """figure id -> planned/measured with constants fitted on the other sources."""
    ratios = {}
    for source in sorted({f["source"] for f, _ in points}):
        fitted = fit([p for p in points if p[0]["source"] != source], start)
        for figure, job_card in points:
            if figure["source"] == source:
                ratios[figure["id"]] = planned_over_measured(figure, fitted, job_card)
    return ratios


def summary(ratios: list[float]) -> str:
    errors = [abs(r - 1) for r in ratios]
    return (f"median |ratio-1| {statistics.median(errors):5.1%}, worst {max(errors):5.1%}, "
            f"within 10%: {sum(e <= 0.10 for e in errors)}/{len(errors)}, within 30%: "
            f"{sum(e <= 0.30 for e in errors)}/{len(errors)}")


def h200_check(constants: dict) -> list[str]:
    """The H200 points of bench/gpu_peak (plain PyTorch loop, SDPA, PEFT adapters, torch.optim.AdamW)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu_peak"))
    from compare import load_points, planned_tokens_per_second, scored_points

    clean, _ = scored_points(load_points(Path(__file__).resolve().parents[1] / "gpu_peak" / "h200_peaks.jsonl"))
    lines, by_size = [], {}
    for case in clean:
        ratio = planned_tokens_per_second(case, constants=constants) / case["tokens_per_s"]
        tokens = case["seq"] * case["mbs"]
        size = "512 tokens" if tokens <= 512 else "1-4k tokens" if tokens < 8192 else ">= 8k tokens"
        by_size.setdefault(size, []).append(ratio)
        lines.append(f"  {case['model']} {case['method']} seq {case['seq']} x{case['mbs']} "
                     f"{'ckpt' if case['gc'] else 'no-ckpt'} {case['attn']}: {ratio:.2f}")
    out = ["H200 check (bench/gpu_peak, plain PyTorch loop, last of 3 steps; no point fitted): planned/measured"]
    out += lines
    for size in ("512 tokens", "1-4k tokens", ">= 8k tokens"):
        if by_size.get(size):
            r = by_size[size]
            out.append(f"  {size:13s} per micro-batch ({len(r):2d} points): {min(r):.2f}-{max(r):.2f}, "
                       f"median {statistics.median(r):.2f}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="store the fitted constants and the held-out spread")
    args = ap.parse_args()
    stored = json.loads(CONSTANTS_FILE.read_text())
    figures = load_figures()
    used = [f for f in figures if f["use"]]
    points = [(f, figure_job(f)) for f in used]
    start = {k: v for k, v in stored.items() if not k.startswith("_") and k != "held_out_ratio"}
    fitted = fit(points, start)
    held_out = loso(points, start)
    print(f"{len(used)} figures from {len({f['source'] for f in used})} sources fitted "
          f"({len(figures) - len(used)} on record, out of the fit: suspect or outside the model)")
    print("fitted constants: " + ", ".join(f"{k} {fitted[k]:g}" for k in BOUNDS) + "\n")
    print(f"{'id':4s} {'card':24s} {'measured':>9s} {'in-sample':>10s} {'held out':>9s}  source")
    in_sample = {}
    for figure, job_card in points:
        in_sample[figure["id"]] = planned_over_measured(figure, fitted, job_card)
        print(f"{figure['id']:4s} {figure['card']['name']:24s} {figure['tokens_per_second_per_gpu']:9.0f} "
              f"{in_sample[figure['id']]:10.2f} {held_out[figure['id']]:9.2f}  {figure['source']}")
    print("\nplanned/measured tokens/s per GPU, by source (held out: fitted without that source)")
    for source in sorted({f["source"] for f in used}):
        ids = [f["id"] for f in used if f["source"] == source]
        print(f"  {source}: {len(ids)} figures")
        print(f"    in-sample  {summary([in_sample[i] for i in ids])}")
        print(f"    held out   {summary([held_out[i] for i in ids])}")
    print(f"\nall, in-sample:               {summary(list(in_sample.values()))}")
    print(f"all, leave-one-source-out:    {summary(list(held_out.values()))}")
    ratios = list(held_out.values())
    spread = {"p10": round(percentile(ratios, 0.10), 3), "p90": round(percentile(ratios, 0.90), 3),
              "basis": f"10th-90th percentile of planned/measured tokens/s on {len(ratios)} published figures "
                       f"from {len({f['source'] for f in used})} sources, each predicted without its source"}
    print(f"held-out ratio 10th-90th percentile: {spread['p10']:.2f}-{spread['p90']:.2f} (the plan's time range)")
    print()
    print("\n".join(h200_check(fitted)))
    if args.write:
        CONSTANTS_FILE.write_text(json.dumps({"_doc": stored["_doc"], **fitted, "held_out_ratio": spread},
                                             indent=2) + "\n")
        print(f"\nwrote {CONSTANTS_FILE}")


if __name__ == "__main__":
    main()
