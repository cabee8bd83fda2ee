"""Token-length statistics: percentiles, log-spaced histograms, and the percentiles' confidence intervals on a
sample. Pure numpy.

Percentiles are observed lengths: np.percentile(x, q, method="inverted_cdf"), i.e. the smallest length L such that
at least q% of the records have at most L tokens.
"""
from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9)
PCT_KEYS = tuple(f"p{q:g}" for q in PERCENTILES)          # p50 p90 p95 p99 p99.9
BINS_PER_OCTAVE = 4


def percentiles(x: np.ndarray) -> dict[str, int]:
    x = np.asarray(x)
    if x.size == 0:
        return {k: 0 for k in PCT_KEYS}
    values = np.percentile(x, PERCENTILES, method="inverted_cdf")
    return {k: int(v) for k, v in zip(PCT_KEYS, values)}


def log_bin_edges(max_value: int) -> np.ndarray:
    """Integer edges 0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 13, 16, 19, 22, 26, 32, ... (4 per octave), with the
    last edge above max_value. Bin i holds lengths in [edges[i], edges[i+1])."""
    top = max(int(max_value), 1)
    k_max = int(math.ceil(math.log2(top + 1) * BINS_PER_OCTAVE)) + 1
    edges = np.unique(np.floor(2.0 ** (np.arange(k_max + 1) / BINS_PER_OCTAVE)).astype(np.int64))
    edges = np.concatenate([[0], edges])
    while edges[-1] <= top:
        edges = np.append(edges, int(math.ceil(edges[-1] * 2 ** (1 / BINS_PER_OCTAVE))) + 1)
    return edges


def log_histogram(x: np.ndarray, edges: np.ndarray | None = None) -> dict:
    x = np.asarray(x, dtype=np.int64)
    if edges is None:
        edges = log_bin_edges(int(x.max()) if x.size else 1)
    counts = np.bincount(np.searchsorted(edges, x, side="right") - 1, minlength=len(edges) - 1)[: len(edges) - 1]
    nz = np.nonzero(counts)[0]
    lo, hi = (int(nz[0]), int(nz[-1]) + 1) if nz.size else (0, 0)
    return {"edges": [int(e) for e in edges[lo:hi + 1]], "counts": [int(c) for c in counts[lo:hi]]}


def length_stats(x: np.ndarray) -> dict:
    x = np.asarray(x, dtype=np.int64)
    if x.size == 0:
        return {"total": 0, "mean": 0.0, "min": 0, "max": 0, **{k: 0 for k in PCT_KEYS}}
    return {"total": int(x.sum()), "mean": round(float(x.mean()), 2), "min": int(x.min()), "max": int(x.max()),
            **percentiles(x)}



def percentile_uncertainty(lengths, population: int | None = None, confidence: float = 0.95,
                           coverage: float | None = None) -> dict:
    """Distribution-free confidence intervals of the percentiles of a uniform sample (without replacement) of
    `population` records: the order statistics whose ranks are n*p -/+ z*sqrt(n*p*(1-p)*fpc), fpc the
    finite-population correction (N-n)/(N-1). Exact (zero width) when the sample is the whole population.
    `open_high` marks an upper bound that falls past the largest sampled value (the true value may be higher).
    With `coverage`, also the interval of that quantile (what the max length is chosen from)."""
    xs = np.sort(np.asarray(lengths, dtype=np.int64))
    n = int(xs.size)
    N = int(population or n)
    exact = n >= N
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    fpc = 0.0 if exact or N <= 1 else (N - n) / (N - 1)
    qs = list(PERCENTILES) + ([coverage * 100] if coverage is not None else [])
    keys = list(PCT_KEYS) + (["coverage"] if coverage is not None else [])
    out: dict = {"sampled": n, "population": N, "exact": exact, "confidence": confidence, "percentiles": {}}
    if n == 0:
        return out
    for key, q in zip(keys, qs):
        p = q / 100
        k = max(1, math.ceil(p * n - 1e-9))
        value = int(xs[k - 1])
        sd = math.sqrt(n * p * (1 - p) * fpc)
        lo_rank = max(1, math.floor(n * p - z * sd))
        hi_rank = math.ceil(n * p + z * sd) + (0 if exact else 1)
        open_high = hi_rank > n
        hi_rank = min(n, hi_rank)
        low = value if exact else int(xs[lo_rank - 1])
        high = value if exact else int(xs[hi_rank - 1])
        out["percentiles"][key] = {"value": value, "low": min(low, value), "high": max(high, value),
                                   "open_high": bool(open_high and not exact)}
    return out
