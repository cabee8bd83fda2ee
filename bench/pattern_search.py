"""The fitter the calibration benches share (bench/calibrate_memory.py, bench/time/loso.py): a handful of
constants, each within physical bounds, fitted to published figures without gradients."""
from __future__ import annotations

from typing import Callable


def pattern_search(loss: Callable[[dict], float], start: dict, bounds: dict[str, tuple[float, float]],
                   min_step: float = 1e-4) -> dict:
    """Pattern search in the unit cube of the bounds: try +-step on each constant, keep improvements, halve the
    step when none helps. Returns the constants named in `bounds`, unrounded."""
    names = list(bounds)
    lo = {n: bounds[n][0] for n in names}
    span = {n: bounds[n][1] - bounds[n][0] for n in names}
    x = {n: min(max((start[n] - lo[n]) / span[n], 0.0), 1.0) for n in names}

    def constants_of(u: dict) -> dict:
        return {n: lo[n] + u[n] * span[n] for n in names}

    best = loss(constants_of(x))
    step = 0.25
    while step >= min_step:
        improved = False
        for n in names:
            for direction in (1, -1):
                trial = dict(x)
                trial[n] = min(max(x[n] + direction * step, 0.0), 1.0)
                if trial[n] == x[n]:
                    continue
                value = loss(constants_of(trial))
                if value < best - 1e-12:
                    x, best, improved = trial, value, True
                    break
        if not improved:
            step /= 2
    return constants_of(x)
