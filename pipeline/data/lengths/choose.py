"""Choosing the max sequence length from the data, and the trade-off of each candidate length (records over the
limit, tokens lost, padding waste, packing).

"Tokens lost" at a length L is what truncation to L removes: sum(max(x - L, 0)). Padding waste without packing:
records in random order (seed 0), batches of `batch_size`, each padded to its longest record (dynamic padding, as
trl's collator does); "padding_waste_fixed" pads every row to L.
"""
from __future__ import annotations

import math

import numpy as np

from pipeline.core.config import LengthsConfig
from pipeline.data.lengths.histogram import percentiles
from pipeline.data.lengths.packing import dynamic_padding_waste, packing_summary

EXACT_PACKING_LIMIT = 200_000   # trade-off rows simulate packing on a uniform sample above this many records
# Under lengths.text_chunking: max_len a document counts as at most this many tokens when the max length is chosen:
# it is cut into chunks of the chosen length anyway, so whole documents must not drag the length (and the GPU) up.
# 2,048 is LLaMA-Factory's default cutoff_len, the block length its pre-training stage cuts documents to.
TEXT_CHOICE_CAP = 2048


def round_up(value: float, grid: int) -> int:
    return max(grid, int(math.ceil(value / grid)) * grid)


def coverage_at(x: np.ndarray, length: int) -> tuple[float, float]:
    """(share of records with at most `length` tokens, share of tokens kept when truncating to `length`)."""
    x = np.asarray(x, dtype=np.int64)
    if x.size == 0:
        return 1.0, 1.0
    total = x.sum()
    return float((x <= length).mean()), float(np.minimum(x, length).sum() / total) if total else 1.0


def choose_max_seq_len(x: np.ndarray, cfg: LengthsConfig, max_position_embeddings: int | None = None) -> dict:
    """The smallest multiple of cfg.grid covering cfg.coverage of the records (or of the tokens: truncating to it
    keeps that share of the tokens), capped by max_position_embeddings; or cfg.max_seq_len when set."""
    x = np.sort(np.asarray(x, dtype=np.int64))
    grid, n = cfg.grid, x.size
    warnings: list[str] = []
    uncapped = None
    if cfg.max_seq_len:
        value, reason = int(cfg.max_seq_len), "configured (lengths.max_seq_len)"
        if max_position_embeddings and value > max_position_embeddings:
            warnings.append(f"max_seq_len {value} is above the model's max_position_embeddings "
                            f"{max_position_embeddings}")
    elif n == 0:
        value, reason = grid, "no records"
    else:
        if cfg.coverage_of == "records":
            k = max(1, math.ceil(cfg.coverage * n - 1e-9))
            uncapped = round_up(int(x[k - 1]), grid)
        else:
            cands = grid * np.arange(1, math.ceil(int(x[-1]) / grid) + 1, dtype=np.int64)
            csum = np.concatenate([[0], np.cumsum(x)])
            idx = np.searchsorted(x, cands, side="right")
            kept = csum[idx] + cands * (n - idx)
            ok = np.nonzero(kept >= cfg.coverage * csum[-1] - 1e-6)[0]
            uncapped = int(cands[ok[0]]) if ok.size else round_up(int(x[-1]), grid)
        value = uncapped
        reason = f"smallest multiple of {grid} covering {cfg.coverage * 100:g}% of {cfg.coverage_of}"
        if max_position_embeddings and value > max_position_embeddings:
            capped = (max_position_embeddings // grid) * grid or int(max_position_embeddings)
            warnings.append(f"{uncapped} would be needed for the target coverage; capped by the model's "
                            f"max_position_embeddings {max_position_embeddings}")
            value, reason = capped, f"capped by max_position_embeddings ({max_position_embeddings})"
    records_cov, tokens_cov = coverage_at(x, value)
    return {"value": value, "reason": reason, "coverage": cfg.coverage, "coverage_of": cfg.coverage_of,
            "grid": grid, "uncapped": uncapped, "max_position_embeddings": max_position_embeddings,
            "records_covered": round(records_cov, 6), "tokens_covered": round(tokens_cov, 6),
            "warnings": warnings}


def candidate_lengths(x: np.ndarray, chosen: int, grid: int, max_position_embeddings: int | None) -> list[int]:
    x = np.asarray(x, dtype=np.int64)
    if x.size == 0:
        return [chosen]
    pct = percentiles(x)
    top = int(x.max())
    cands = {chosen, round_up(top, grid)} | {round_up(pct[k], grid) for k in ("p50", "p90", "p95", "p99", "p99.9")}
    p = 1
    while p < round_up(top, grid):
        if p >= max(grid, pct["p50"]):
            cands.add(round_up(p, grid))
        p *= 2
    if max_position_embeddings:
        over = {c for c in cands if c > max_position_embeddings}
        if over:
            cands -= over
            cands.add(max(grid, (max_position_embeddings // grid) * grid))
    out = sorted(cands)
    while len(out) > 12:  # thin out, keeping the chosen length and the ends
        keep = {chosen, out[0], out[-1]}
        out = [c for i, c in enumerate(out) if i % 2 == 0 or c in keep]
    return out


def tradeoff_table(x: np.ndarray, trainable: np.ndarray, candidates: list[int], batch_size: int,
                   chosen: int | None = None, seed: int = 0) -> list[dict]:
    x = np.asarray(x, dtype=np.int64)
    trainable = np.asarray(trainable, dtype=np.int64)
    n = x.size
    sample = x
    if n > EXACT_PACKING_LIMIT:
        sample = x[np.random.default_rng(seed).choice(n, EXACT_PACKING_LIMIT, replace=False)]
    rows = []
    for length in candidates:
        excess = np.maximum(x - length, 0)
        over = int(np.count_nonzero(excess))
        kept = int(np.minimum(x, length).sum())
        pack = packing_summary(sample, length, batch_size)
        scale = n / sample.size if sample.size else 1.0
        packed = int(round(pack["packed_sequences"] * scale))
        rows.append({
            "max_seq_len": int(length),
            "chosen": length == chosen,
            "records_over": over,
            "records_over_share": round(over / n, 6) if n else 0.0,
            "tokens_lost": int(excess.sum()),
            "tokens_lost_share": round(int(excess.sum()) / int(x.sum()), 6) if n and x.sum() else 0.0,
            "trainable_lost": int(np.minimum(trainable, excess).sum()),
            "padding_waste": dynamic_padding_waste(x, length, batch_size, seed),
            "padding_waste_fixed": round(1 - kept / (n * length), 6) if n else 0.0,
            "packing_efficiency": pack["packing_efficiency"],
            "sequences_per_epoch": n,
            "steps_per_epoch": math.ceil(n / batch_size),
            "packed_sequences": packed,
            "packed_steps_per_epoch": math.ceil(packed / batch_size),
            **({"packing_sampled": int(sample.size)} if sample is not x else {}),
        })
    return rows
