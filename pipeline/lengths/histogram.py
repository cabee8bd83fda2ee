"""Token-length statistics: log-spaced histograms, percentiles, the max sequence length chosen from the data, the
trade-off per candidate length, a best-fit-decreasing packing simulation, sample uncertainty, and rendering
(Markdown, terminal text, PNG). Pure numpy (+ matplotlib for the PNG); no tokenizer here.

Conventions:
  * percentiles are observed lengths: np.percentile(x, q, method="inverted_cdf"), i.e. the smallest length L
    such that at least q% of the records have at most L tokens;
  * "tokens lost" at a length L is what truncation to L removes: sum(max(x - L, 0));
  * padding waste without packing: records in random order (seed 0), batches of `batch_size`, each padded to its
    longest record (dynamic padding, as trl's collator does); "padding_waste_fixed" pads every row to L;
  * packing: best-fit decreasing (trl's "bfd"): records longer than L are truncated to L first, each record goes
    into the open sequence with the least room that still fits it, or opens a new one.
"""
from __future__ import annotations

import textwrap

import math
from statistics import NormalDist

import numpy as np

from pipeline.config import LengthsConfig
from pipeline.markdown import table

PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9)
PCT_KEYS = tuple(f"p{q:g}" for q in PERCENTILES)          # p50 p90 p95 p99 p99.9
BINS_PER_OCTAVE = 4
EXACT_PACKING_LIMIT = 200_000   # trade-off rows simulate packing on a uniform sample above this many records


# ------------------------------------------------------------------------------------------------ basics

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


def _stats(x: np.ndarray) -> dict:
    x = np.asarray(x, dtype=np.int64)
    if x.size == 0:
        return {"total": 0, "mean": 0.0, "min": 0, "max": 0, **{k: 0 for k in PCT_KEYS}}
    return {"total": int(x.sum()), "mean": round(float(x.mean()), 2), "min": int(x.min()), "max": int(x.max()),
            **percentiles(x)}


def round_up(value: float, grid: int) -> int:
    return max(grid, int(math.ceil(value / grid)) * grid)


def coverage_at(x: np.ndarray, length: int) -> tuple[float, float]:
    """(share of records with at most `length` tokens, share of tokens kept when truncating to `length`)."""
    x = np.asarray(x, dtype=np.int64)
    if x.size == 0:
        return 1.0, 1.0
    total = x.sum()
    return float((x <= length).mean()), float(np.minimum(x, length).sum() / total) if total else 1.0


# --------------------------------------------------------------------------------------------- max length

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


# ------------------------------------------------------------------------------------------------- packing

def pack_bfd(lengths, max_len: int) -> np.ndarray:
    """Best-fit decreasing: the packed-sequence index of each record (records longer than max_len count as
    max_len). Records above half the length each open their own sequence (vectorized); the rest go, longest
    first, into the sequence with the least room that fits, found through a bit set of the free-room values."""
    x = np.minimum(np.asarray(lengths, dtype=np.int64), max_len)
    n = x.size
    bins = np.empty(n, dtype=np.int64)
    if n == 0:
        return bins
    order = np.argsort(-x, kind="stable")
    xs = x[order]
    n_big = int(np.count_nonzero(xs * 2 > max_len))
    bins[order[:n_big]] = np.arange(n_big)
    buckets: dict[int, list[int]] = {}
    mask = 0

    def add(room: int, b: int) -> None:  # bin b now has `room` tokens free
        nonlocal mask
        lst = buckets.get(room)
        if lst is None:
            buckets[room] = [b]
            mask |= 1 << room
        else:
            lst.append(b)

    for b, room in enumerate((max_len - xs[:n_big]).tolist()):
        if room > 0:
            add(room, b)
    n_bins = n_big
    rest_items = order[n_big:].tolist()
    for item, s in zip(rest_items, xs[n_big:].tolist()):
        m = mask >> s
        if m:
            room = s + (m & -m).bit_length() - 1
            lst = buckets[room]
            b = lst.pop()
            if not lst:
                del buckets[room]
                mask ^= 1 << room
        else:
            b, room = n_bins, max_len
            n_bins += 1
        bins[item] = b
        if room > s:
            add(room - s, b)
    return bins


def packing_summary(lengths, max_len: int, batch_size: int) -> dict:
    x = np.asarray(lengths, dtype=np.int64)
    kept = np.minimum(x, max_len)
    bins = pack_bfd(x, max_len)
    packed = int(bins.max()) + 1 if bins.size else 0
    tokens = int(kept.sum())
    capacity = packed * max_len
    steps = math.ceil(packed / batch_size) if packed else 0
    return {
        "max_seq_len": int(max_len), "records": int(x.size), "packed_sequences": packed,
        "tokens": tokens, "tokens_lost": int((x - kept).sum()),
        "packing_efficiency": round(tokens / capacity, 6) if capacity else 0.0,
        "padding_ratio": round(1 - tokens / capacity, 6) if capacity else 0.0,
        "batch_size": batch_size, "steps_per_epoch": steps,
        "tokens_per_step": batch_size * max_len,
        "real_tokens_per_step": round(tokens / steps, 1) if steps else 0.0,
        "tokens_per_epoch": capacity, "sequences_per_epoch": packed,
    }


def dynamic_padding_waste(x: np.ndarray, length: int, batch_size: int, seed: int = 0) -> float:
    """Share of padding when records (truncated to `length`) are batched in random order and each batch is
    padded to its longest record."""
    x = np.minimum(np.asarray(x, dtype=np.int64), length)
    n = x.size
    if n == 0:
        return 0.0
    xs = x[np.random.default_rng(seed).permutation(n)]
    full = n // batch_size * batch_size
    slots = int(xs[:full].reshape(-1, batch_size).max(axis=1).sum()) * batch_size if full else 0
    if full < n:
        slots += int(xs[full:].max()) * (n - full)
    return round(1 - int(xs.sum()) / slots, 6) if slots else 0.0


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


# ------------------------------------------------------------------------------------------- uncertainty

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


# --------------------------------------------------------------------------------------------------- summary

def summarize_lengths(groups: dict[str, tuple[np.ndarray, np.ndarray]], cfg: LengthsConfig,
                      max_position_embeddings: int | None = None,
                      population: dict[str, int] | None = None) -> dict:
    """JSON-serializable summary. `groups`: {"all": (tokens, trainable), "split:train": ..., "file:x": ...}.
    The max length, the trade-off, the packing and the overflow figures use "split:train" when present (what
    the trainer trains on), else "all". `population` ({group: records}) marks groups measured on a sample: their
    count-like figures (records, totals, sequences, steps, tokens per epoch) are scaled to the population and
    the group gets percentile confidence intervals."""
    population = population or {}
    out_groups: dict[str, dict] = {}
    all_max = max((int(np.max(t)) for t, _ in groups.values() if len(t)), default=1)
    edges = log_bin_edges(all_max)
    for name, (tokens, trainable) in groups.items():
        tokens = np.asarray(tokens, dtype=np.int64)
        trainable = np.asarray(trainable, dtype=np.int64)
        g = {"records": int(tokens.size), "tokens": _stats(tokens), "trainable": _stats(trainable),
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
    choice = choose_max_seq_len(tokens, cfg, max_position_embeddings)
    length = choice["value"]
    tradeoff = tradeoff_table(tokens, trainable, candidate_lengths(tokens, length, cfg.grid,
                                                                   max_position_embeddings),
                              cfg.batch_size, chosen=length)
    if cfg.overflow == "drop":
        packed_input = tokens[tokens <= length]
    elif cfg.overflow == "split":  # approximate: every long record becomes full-length chunks plus a remainder
        full, rem = np.divmod(tokens, length)
        packed_input = np.concatenate([np.repeat(length, int(full[tokens > length].sum())),
                                       np.where(tokens > length, rem, tokens)])
        packed_input = packed_input[packed_input > 0]
    else:
        packed_input = tokens
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


# ------------------------------------------------------------------------------------------------- rendering

def _n(v) -> str:
    """1234 -> 1,234; 1234567 -> 1.23M."""
    if isinstance(v, float) and not v.is_integer():
        return f"{v:,.1f}"
    v = int(v)
    if abs(v) >= 10_000_000_000:
        return f"{v / 1e9:,.1f}B"
    if abs(v) >= 10_000_000:
        return f"{v / 1e6:,.1f}M"
    return f"{v:,}"


def _pct(v: float) -> str:
    return f"{v * 100:.2f}%" if v < 0.1 else f"{v * 100:.1f}%"


def _len(v: int) -> str:
    return f"{v / 1024:g}k" if v >= 1024 and v % 1024 == 0 else f"{v:,}"


def _choice_line(s: dict) -> str:
    c = s.get("max_seq_len_choice") or {}
    if not c:
        return ""
    line = (f"max_seq_len {c['value']:,}: {c['reason']} (basis: {s.get('basis')}); covers "
            f"{_pct(c['records_covered'])} of records and {_pct(c['tokens_covered'])} of tokens")
    for w in c.get("warnings", []):
        line += f"; {w}"
    return line


def _uncertainty(s: dict) -> dict | None:
    if s.get("uncertainty"):
        return s["uncertainty"]
    basis = s.get("basis")
    return (s.get("groups", {}).get(basis) or {}).get("uncertainty") if basis else None


def _ci_text(u: dict) -> str:
    if not u or u.get("exact"):
        return ""
    parts = []
    for key, d in u["percentiles"].items():
        if key == "coverage":
            continue
        hi = f"{d['high']:,}" + ("+" if d.get("open_high") else "")
        parts.append(f"{key} {d['low']:,}–{hi}")
    return (f"{u['confidence']:.0%} intervals from a sample of {u['sampled']:,} of {u['population']:,} records: "
            + ", ".join(parts))


def render_lengths_markdown(summary: dict) -> str:
    s = summary
    lines: list[str] = []
    if s.get("tokenizer"):
        lines += [f"Tokenizer: `{s['tokenizer']}`", ""]
    header = ["group", "records", "mean", *PCT_KEYS, "max", "tokens", "trainable tokens"]
    rows = [[name, _n(g["records"]), f"{g['tokens']['mean']:,.1f}", *(_n(g["tokens"][k]) for k in PCT_KEYS),
             _n(g["tokens"]["max"]), _n(g["tokens"]["total"]), _n(g["trainable"]["total"])]
            for name, g in s.get("groups", {}).items()]
    lines.append(table(header, rows, numeric=tuple(range(1, len(header)))))
    ci = _ci_text(_uncertainty(s))
    if ci:
        lines += ["", f"Percentiles from a sample: {ci}."]
    if s.get("max_seq_len"):
        lines += ["", f"**{_choice_line(s)}**"]
    if s.get("tradeoff"):
        header = ["max_seq_len", "records over", "tokens lost", "trainable lost", "padding waste (no packing)",
                  "packing efficiency", "sequences / epoch", "steps / epoch", "packed sequences",
                  "packed steps / epoch"]
        rows = [[f"{r['max_seq_len']:,}" + (" ◀" if r.get("chosen") else ""),
                 f"{_n(r['records_over'])} ({_pct(r['records_over_share'])})",
                 f"{_n(r['tokens_lost'])} ({_pct(r['tokens_lost_share'])})", _n(r["trainable_lost"]),
                 _pct(r["padding_waste"]), _pct(r["packing_efficiency"]), _n(r["sequences_per_epoch"]),
                 _n(r["steps_per_epoch"]), _n(r["packed_sequences"]), _n(r["packed_steps_per_epoch"])]
                for r in s["tradeoff"]]
        lines += ["", table(header, rows, numeric=tuple(range(len(header))))]
        lines += ["", f"Batch size {s.get('batch_size')}. Padding waste: random batches padded to their longest "
                      "record. Packing: best-fit decreasing; longer records truncated to the length."]
    p = s.get("packing") or {}
    if p:
        lines += ["", f"**Packing at {p['max_seq_len']:,}** (best-fit decreasing, policy {p.get('policy')}): "
                      f"{_n(p['records'])} records → {_n(p['packed_sequences'])} sequences, padding "
                      f"{_pct(p['padding_ratio'])}, {_n(p['tokens_per_step'])} tokens per step "
                      f"({_n(p['real_tokens_per_step'])} real), {_n(p['steps_per_epoch'])} steps and "
                      f"{_n(p['tokens_per_epoch'])} tokens per epoch at batch size {p['batch_size']}."]
    o = s.get("overflow") or {}
    if o:
        lines += ["", _overflow_line(o)]
    hist = _text_histogram(s)
    if hist:
        lines += ["", f"Histogram ({s.get('basis')}):", "", "```text", hist, "```"]
    return "\n".join(lines)


def _overflow_line(o: dict) -> str:
    what = {"keep": "kept unchanged; the trainer will cut", "truncate_response": "responses truncated, removing",
            "truncate_prompt": "prompts truncated, removing", "drop": "dropped, with",
            "split": "split into chunks (text records; chat records kept), covering"}[o["policy"]]
    return (f"Over {o['max_seq_len']:,} tokens: {_n(o['records_over'])} records, {what} "
            f"{_n(o['tokens_over'])} tokens ({_n(o['trainable_over'])} of them trainable).")


def _text_histogram(s: dict, width: int = 40, max_rows: int = 24) -> str:
    g = s.get("groups", {}).get(s.get("basis") or "")
    if not g or not g["histogram"]["counts"]:
        return ""
    edges = list(g["histogram"]["edges"])
    counts = list(g["histogram"]["counts"])
    while len(counts) > max_rows:
        counts = [sum(counts[i:i + 2]) for i in range(0, len(counts), 2)]
        edges = edges[::2] + ([edges[-1]] if (len(edges) - 1) % 2 else [])
    chosen = s.get("max_seq_len")
    top = max(counts) or 1
    blocks = " ▏▎▍▌▋▊▉█"
    label_w = max(len(f"{_len(a)}–{_len(b - 1)}") for a, b in zip(edges, edges[1:]))
    rows = []
    for a, b, c in zip(edges, edges[1:], counts):
        units = c / top * width
        bar = "█" * int(units) + (blocks[int((units % 1) * 8)] if units % 1 and int(units) < width else "")
        if c and not bar.strip():
            bar = "▏"
        label = f"{_len(a)}–{_len(b - 1)}" if b - 1 > a else _len(a)
        mark = "  ◀ max_seq_len" if chosen and a <= chosen < b else ""
        rows.append(f"{label:>{label_w}} │{bar:<{width}} {_n(c)}{mark}")
    if chosen and chosen >= edges[-1]:
        rows.append(f"{'':>{label_w}} │  (max_seq_len {chosen:,} is above every record)")
    return "\n".join(rows)


def render_lengths_text(summary: dict) -> str:
    """For the terminal: headline figures, the histogram, the choice, packing and overflow."""
    s = summary
    basis = s.get("basis")
    g = s.get("groups", {}).get(basis or "")
    if not g:
        return "token lengths: no records"
    t = g["tokens"]
    out = [f"token lengths ({basis}): {_n(g['records'])} records, {_n(t['total'])} tokens "
           f"({_n(g['trainable']['total'])} trainable), mean {t['mean']:,.1f}",
           "  " + "  ".join(f"{k} {_n(t[k])}" for k in PCT_KEYS) + f"  max {_n(t['max'])}"]
    ci = _ci_text(_uncertainty(s))
    if ci:
        out.append("  " + ci)
    for name, other in s.get("groups", {}).items():
        if name != basis and name.startswith("split:"):
            ot = other["tokens"]
            out.append(f"  {name}: {_n(other['records'])} records, p50 {_n(ot['p50'])}, p99 {_n(ot['p99'])}, "
                       f"max {_n(ot['max'])}")
    out += ["", _text_histogram(s), ""]
    if s.get("max_seq_len"):
        out.append(_choice_line(s))
    if s.get("tradeoff"):
        out.append(f"  {'length':>8} {'over':>14} {'tokens lost':>16} {'pad waste':>9} {'packing':>8} "
                   f"{'steps/epoch':>11} {'packed steps':>12}")
        for r in s["tradeoff"]:
            mark = " ◀" if r.get("chosen") else ""
            out.append(f"  {r['max_seq_len']:>8,} {_n(r['records_over']) + ' (' + _pct(r['records_over_share']) + ')':>14} "
                       f"{_n(r['tokens_lost']):>16} {_pct(r['padding_waste']):>9} {_pct(r['packing_efficiency']):>8} "
                       f"{_n(r['steps_per_epoch']):>11} {_n(r['packed_steps_per_epoch']):>12}{mark}")
    p = s.get("packing") or {}
    if p:
        out.append(f"packing at {p['max_seq_len']:,}: {_n(p['packed_sequences'])} sequences, padding "
                   f"{_pct(p['padding_ratio'])}, {_n(p['tokens_per_step'])} tokens/step, "
                   f"{_n(p['steps_per_epoch'])} steps/epoch at batch size {p['batch_size']}")
    if s.get("overflow"):
        out.append(_overflow_line(s["overflow"]))
    return "\n".join(out)


def plot_lengths_png(summary: dict, path) -> None:
    import matplotlib.pyplot as plt

    fig = draw_lengths(summary)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def draw_lengths(summary: dict):
    """Left: histograms per split and source file (log-spaced bins, log x axis) with p50/p99 and the chosen
    length; right: the trade-off (records over the limit, packing efficiency, padding waste) per length."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = summary.get("groups", {})
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [3, 2]})
    shown = [n for n in groups if n == "all" or n.startswith("split:")]
    shown += [n for n in groups if n.startswith("file:")][:6]
    for name in shown:
        h = groups[name]["histogram"]
        if not h["counts"]:
            continue
        edges = np.maximum(np.array(h["edges"], dtype=float), 0.8)
        ax.stairs(h["counts"], edges, label=f"{name} ({groups[name]['records']:,})",
                  linewidth=2.0 if name == summary.get("basis") else 1.0,
                  fill=name == summary.get("basis"), alpha=0.35 if name == summary.get("basis") else 0.9)
    basis = groups.get(summary.get("basis") or "")
    if basis:
        for key, style in (("p50", ":"), ("p99", "--")):
            ax.axvline(max(basis["tokens"][key], 1), color="grey", linestyle=style, linewidth=1,
                       label=f"{key} {basis['tokens'][key]:,}")
    if summary.get("max_seq_len"):
        ax.axvline(summary["max_seq_len"], color="red", linewidth=1.5,
                   label=f"max_seq_len {summary['max_seq_len']:,}")
    ax.set_xscale("log")
    ax.set_xlabel("tokens per record (chat template applied)")
    ax.set_ylabel("records")
    title = "Token lengths"
    if summary.get("tokenizer"):  # wrapped, not cut: the tokenizer's name says which counts these are
        title += "\n" + "\n".join(textwrap.wrap(str(summary["tokenizer"]), 90))
    ax.set_title(title, fontsize=9)
    # below the axes, so no legend entry hides a bar or a marker line
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0, -0.2), ncol=2, frameon=False)
    rows = summary.get("tradeoff") or []
    if rows:
        xs = [r["max_seq_len"] for r in rows]
        ax2.plot(xs, [r["records_over_share"] * 100 for r in rows], "o-", label="records over (%)")
        ax2.plot(xs, [r["packing_efficiency"] * 100 for r in rows], "s-", label="packing efficiency (%)")
        ax2.plot(xs, [r["padding_waste"] * 100 for r in rows], "^-", label="padding waste, no packing (%)")
        if summary.get("max_seq_len"):
            ax2.axvline(summary["max_seq_len"], color="red", linewidth=1.5)
        ax2.set_xscale("log", base=2)
        ax2.set_xticks(xs)
        ax2.set_xticklabels([_len(x) for x in xs], rotation=45, fontsize=7)
        ax2.set_xlabel("max_seq_len")
        ax2.set_ylabel("%")
        ax2.set_title("Trade-off per candidate length", fontsize=10)
        ax2.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0, -0.26), frameon=False)
    else:
        ax2.axis("off")
    fig.tight_layout()
    return fig
