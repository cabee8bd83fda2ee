"""Measured trial points that correct later plans: `prepare calibrate` appends one per trial run, and the GPU
planner scales its time estimate for the same model, method and card by the measured slowdown.

The store is one local JSON list (PREPARE_CALIBRATION, default ~/.cache/prepare/calibration.json): it holds
model names and timings only, never data."""
from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

# A trial this far from its plan measured something else than the planned card (the CPU, a broken trial): the
# estimate is within 2x of published runs, so a point outside corrects no plan (earlier versions stored CPU trials).
PLAUSIBLE_SLOWDOWN = (0.1, 10.0)


def plausible(slowdown: float) -> bool:
    return PLAUSIBLE_SLOWDOWN[0] <= slowdown <= PLAUSIBLE_SLOWDOWN[1]


def store_path() -> Path:
    return Path(os.environ.get("PREPARE_CALIBRATION") or Path.home() / ".cache" / "prepare" / "calibration.json")


def load_points() -> list[dict]:
    """The stored points; an unreadable store corrects nothing rather than stopping a plan."""
    try:
        points = json.loads(store_path().read_text())
    except (OSError, ValueError):
        return []
    return [p for p in points if isinstance(p, dict)] if isinstance(points, list) else []


def measured_slowdown(model: str, method: str, gpu: str, points: list[dict] | None = None) -> dict | None:
    """Median measured/planned step time of the trials of this model, method and card (per-card speed, so any
    card count), or None when there is none."""
    points = load_points() if points is None else points
    ratios = [float(p["slowdown"]) for p in points
              if p.get("model") == model and p.get("method") == method and p.get("gpu") == gpu
              and isinstance(p.get("slowdown"), (int, float)) and plausible(p["slowdown"])]
    if not ratios:
        return None
    return {"slowdown": round(statistics.median(ratios), 4), "points": len(ratios)}
