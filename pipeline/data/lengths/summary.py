"""The lengths section of the report: statistics per group, the chosen max length, the trade-off table,
packing, and the overflow policy's effect."""
from __future__ import annotations

import math

import numpy as np

from pipeline.core.config import LengthsConfig
from pipeline.data.lengths.choose import TEXT_CHOICE_CAP, candidate_lengths, choose_max_seq_len, tradeoff_table
from pipeline.data.lengths.histogram import length_stats, log_bin_edges, log_histogram, percentile_uncertainty
from pipeline.data.lengths.packing import packing_summary


def summarize_lengths(groups: dict[str, tuple[np.ndarray, np.ndarray]], cfg: LengthsConfig,
                      max_position_embeddings: int | None = None,
                      population: dict[str, int] | None = None,
                      text: dict[str, np.ndarray] | None = None) -> dict:
    """JSON-serializable summary. `groups`: {"all": (tokens, trainable), "split:train": ..., "file:x": ...}.
    The max length, the trade-off, the packing and the overflow figures use "split:train" when present (what
    the trainer trains on), else "all". `population` ({group: records}) marks groups measured on a sample: their
    count-like figures (records, totals, sequences, steps, tokens per epoch) are scaled to the population and
    the group gets percentile confidence intervals. `text` ({group: mask}) marks the plain-text records, which
    lengths.text_chunking: max_len cuts into chunks of the chosen length: the choice counts them as at most
    TEXT_CHOICE_CAP tokens, and the trade-off, packing and overflow figures see their chunks."""
    population = population or {}
    text = text if cfg.text_chunking == "max_len" and text else {}
    out_groups: dict[str, dict] = {}
    all_max = max((int(np.max(t)) for t, _ in groups.values() if len(t)), default=1)
    edges = log_bin_edges(all_max)
    for name, (tokens, trainable) in groups.items():
        tokens = np.asarray(tokens, dtype=np.int64)
        trainable = np.asarray(trainable, dtype=np.int64)
        g = {"records": int(tokens.size), "tokens": length_stats(tokens), "trainable": length_stats(trainable),
             "histogram": log_histogram(tokens, edges)}
        pop = population.get(name)
        if pop and pop > tokens.size:
            scale = pop / max(tokens.size, 1)
            g["sample"] = {"sampled": int(tokens.size), "population": int(pop)}
            g["records"] = int(pop)
            g["tokens"]["total"] = int(round(g["tokens"]["total"] * scale))
            g["trainable"]["total"] = int(round(g["trainable"]["total"] * scale))
            g["uncertainty"] = percentile_uncertainty(tokens, pop, coverage=cfg.coverage)
        out_groups[name] = g
    basis = "split:train" if "split:train" in groups else "all" if "all" in groups else next(iter(groups), None)
    summary: dict = {"groups": out_groups, "basis": basis, "batch_size": cfg.batch_size}
    if basis is None:
        summary.update(max_seq_len=None, max_seq_len_choice=None, tradeoff=[], packing={}, overflow={})
        return summary
    tokens = np.asarray(groups[basis][0], dtype=np.int64)
    trainable = np.asarray(groups[basis][1], dtype=np.int64)
    scale = (population.get(basis) or tokens.size) / max(tokens.size, 1)
    is_text = text.get(basis, np.zeros(tokens.size, bool))
    choice = choose_max_seq_len(np.where(is_text, np.minimum(tokens, TEXT_CHOICE_CAP), tokens), cfg,
                                max_position_embeddings)
    length = choice["value"]
    if text:
        if not cfg.max_seq_len and (is_text & (tokens > TEXT_CHOICE_CAP)).any():
            choice["reason"] += f"; documents counted as at most {TEXT_CHOICE_CAP:,} tokens (they are chunked)"
        summary["chunking"] = chunking_estimate(groups, text, length, population)
        tokens, trainable = chunked(tokens, trainable, is_text, length)
    tradeoff = tradeoff_table(tokens, trainable, candidate_lengths(tokens, length, cfg.grid,
                                                                   max_position_embeddings),
                              cfg.batch_size, chosen=length)
    packed_input = tokens[tokens <= length] if cfg.overflow == "drop" else tokens
    packing = packing_summary(packed_input, length, cfg.batch_size)
    packing["policy"] = cfg.overflow
    excess = np.maximum(tokens - length, 0)
    overflow = {"policy": cfg.overflow, "max_seq_len": length, "records_over": int(np.count_nonzero(excess)),
                "tokens_over": int(excess.sum()), "trainable_over": int(np.minimum(trainable, excess).sum())}
    if scale != 1.0:
        for row in tradeoff:
            for key in ("records_over", "tokens_lost", "trainable_lost", "sequences_per_epoch",
                        "packed_sequences"):
                row[key] = int(round(row[key] * scale))
            row["steps_per_epoch"] = math.ceil(row["sequences_per_epoch"] / cfg.batch_size)
            row["packed_steps_per_epoch"] = math.ceil(row["packed_sequences"] / cfg.batch_size)
        for key in ("records", "packed_sequences", "tokens", "tokens_lost"):
            packing[key] = int(round(packing[key] * scale))
        packing["sequences_per_epoch"] = packing["packed_sequences"]
        packing["tokens_per_epoch"] = packing["packed_sequences"] * length
        packing["steps_per_epoch"] = math.ceil(packing["packed_sequences"] / cfg.batch_size)
        for key in ("records_over", "tokens_over", "trainable_over"):
            overflow[key] = int(round(overflow[key] * scale))
        packing["scaled_from_sample"] = True
    summary.update(max_seq_len=length, max_seq_len_choice=choice, tradeoff=tradeoff, packing=packing,
                   overflow=overflow)
    return summary


def chunked(tokens: np.ndarray, trainable: np.ndarray, is_text: np.ndarray, length: int) -> tuple[np.ndarray,
                                                                                                  np.ndarray]:
    """(tokens, trainable) with each text record over `length` replaced by its chunks: full-length ones and the
    remainder (an estimate: the run's chunks also carry the template's few tokens each). A text record's every
    token is trainable."""
    long = is_text & (tokens > length)
    if not long.any():
        return tokens, trainable
    full, rest = np.divmod(tokens[long], length)
    pieces = np.concatenate([np.repeat(length, int(full.sum())), rest[rest > 0]]).astype(np.int64)
    return np.concatenate([tokens[~long], pieces]), np.concatenate([trainable[~long], pieces])


def chunking_estimate(groups: dict, text: dict[str, np.ndarray], length: int, population: dict[str, int]) -> dict:
    """report `lengths.chunking` before the run chunks: text records over `length` in all splits, and about how
    many chunks they become (the run replaces these with its counts)."""
    tokens = np.asarray(groups["all"][0], dtype=np.int64) if "all" in groups else np.zeros(0, np.int64)
    long = tokens[text.get("all", np.zeros(tokens.size, bool)) & (tokens > length)]
    scale = (population.get("all") or tokens.size) / max(tokens.size, 1)
    return {"policy": "max_len", "max_seq_len": int(length), "records": int(round(long.size * scale)),
            "chunks": int(round(int(np.ceil(long / length).sum()) * scale)), "estimated": True}
