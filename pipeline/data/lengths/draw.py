"""Rendering the lengths section: Markdown (report.md, the Prefect artifact), terminal text, and the PNG."""
from __future__ import annotations

import textwrap

import numpy as np

from pipeline.core.markdown import table
from pipeline.core.numfmt import number, percent
from pipeline.data.lengths.histogram import PCT_KEYS
from pipeline.data.lengths.tokenizer.resolve import fallback_warning


def tokenizer_label(tokenizer: dict | str) -> str:
    """`lengths.tokenizer` as one line: "name [why it was chosen]"."""
    if isinstance(tokenizer, dict):
        return f"{tokenizer.get('name')} [{tokenizer.get('source')}]"
    return str(tokenizer)


def _len(v: int) -> str:
    return f"{v / 1024:g}k" if v >= 1024 and v % 1024 == 0 else f"{v:,}"


def _choice_line(s: dict) -> str:
    c = s.get("max_seq_len_choice") or {}
    if not c:
        return ""
    line = (f"max_seq_len {c['value']:,}: {c['reason']} (basis: {s.get('basis')}); covers "
            f"{percent(c['records_covered'])} of records and {percent(c['tokens_covered'])} of tokens")
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
        lines += [f"Tokenizer: `{tokenizer_label(s['tokenizer'])}`", ""]
        warning = fallback_warning(s["tokenizer"])
        if warning:
            lines += [f"> **{warning}**", ""]
    header = ["group", "records", "mean", *PCT_KEYS, "max", "tokens", "trainable tokens"]
    rows = [[name, number(g["records"]), f"{g['tokens']['mean']:,.1f}", *(number(g["tokens"][k]) for k in PCT_KEYS),
             number(g["tokens"]["max"]), number(g["tokens"]["total"]), number(g["trainable"]["total"])]
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
                 f"{number(r['records_over'])} ({percent(r['records_over_share'])})",
                 f"{number(r['tokens_lost'])} ({percent(r['tokens_lost_share'])})", number(r["trainable_lost"]),
                 percent(r["padding_waste"]), percent(r["packing_efficiency"]), number(r["sequences_per_epoch"]),
                 number(r["steps_per_epoch"]), number(r["packed_sequences"]), number(r["packed_steps_per_epoch"])]
                for r in s["tradeoff"]]
        lines += ["", table(header, rows, numeric=tuple(range(len(header))))]
        lines += ["", f"Batch size {s.get('batch_size')}. Padding waste: random batches padded to their longest "
                      "record. Packing: best-fit decreasing; longer records truncated to the length."]
    p = s.get("packing") or {}
    if p:
        lines += ["", f"**Packing at {p['max_seq_len']:,}** (best-fit decreasing, policy {p.get('policy')}): "
                      f"{number(p['records'])} records → {number(p['packed_sequences'])} sequences, padding "
                      f"{percent(p['padding_ratio'])}, {number(p['tokens_per_step'])} tokens per step "
                      f"({number(p['real_tokens_per_step'])} real), {number(p['steps_per_epoch'])} steps and "
                      f"{number(p['tokens_per_epoch'])} tokens per epoch at batch size {p['batch_size']}."]
    o = s.get("overflow") or {}
    if o:
        lines += ["", _overflow_line(o)]
    if (s.get("chunking") or {}).get("records"):
        lines += ["", _chunking_line(s["chunking"])]
    hist = _text_histogram(s)
    if hist:
        lines += ["", f"Histogram ({s.get('basis')}):", "", "```text", hist, "```"]
    return "\n".join(lines)


def _overflow_line(o: dict) -> str:
    what = {"keep": "kept unchanged; the trainer will cut", "truncate_response": "responses truncated, removing",
            "truncate_prompt": "prompts truncated, removing", "drop": "dropped, with"}[o["policy"]]
    return (f"Over {o['max_seq_len']:,} tokens: {number(o['records_over'])} records, {what} "
            f"{number(o['tokens_over'])} tokens ({number(o['trainable_over'])} of them trainable).")


def _chunking_line(c: dict) -> str:
    about = "about " if c.get("estimated") else ""
    return (f"Text documents over {c['max_seq_len']:,} tokens: {number(c['records'])}, cut into {about}"
            f"{number(c['chunks'])} chunks that fit (lengths.text_chunking: max_len).")


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
        rows.append(f"{label:>{label_w}} │{bar:<{width}} {number(c)}{mark}")
    if chosen and chosen >= edges[-1]:
        rows.append(f"{'':>{label_w}} │  (max_seq_len {chosen:,} is above every record)")
    return "\n".join(rows)


def render_lengths_text(summary: dict) -> str:
    """For the terminal: headline figures, the histogram, the choice, packing and overflow. Approximate counts
    (a fallback tokenizer) are said once per command, by the CLI, not here."""
    s = summary
    basis = s.get("basis")
    g = s.get("groups", {}).get(basis or "")
    if not g:
        return "token lengths: no records"
    t = g["tokens"]
    out = [f"token lengths ({basis}): {number(g['records'])} records, {number(t['total'])} tokens "
           f"({number(g['trainable']['total'])} trainable), mean {t['mean']:,.1f}",
           "  " + "  ".join(f"{k} {number(t[k])}" for k in PCT_KEYS) + f"  max {number(t['max'])}"]
    ci = _ci_text(_uncertainty(s))
    if ci:
        out.append("  " + ci)
    for name, other in s.get("groups", {}).items():
        if name != basis and name.startswith("split:"):
            ot = other["tokens"]
            out.append(f"  {name}: {number(other['records'])} records, p50 {number(ot['p50'])}, p99 {number(ot['p99'])}, "
                       f"max {number(ot['max'])}")
    out += ["", _text_histogram(s), ""]
    if s.get("max_seq_len"):
        out.append(_choice_line(s))
    if s.get("tradeoff"):
        out.append(f"  {'length':>8} {'over':>14} {'tokens lost':>16} {'pad waste':>9} {'packing':>8} "
                   f"{'steps/epoch':>11} {'packed steps':>12}")
        for r in s["tradeoff"]:
            mark = " ◀" if r.get("chosen") else ""
            out.append(f"  {r['max_seq_len']:>8,} {number(r['records_over']) + ' (' + percent(r['records_over_share']) + ')':>14} "
                       f"{number(r['tokens_lost']):>16} {percent(r['padding_waste']):>9} {percent(r['packing_efficiency']):>8} "
                       f"{number(r['steps_per_epoch']):>11} {number(r['packed_steps_per_epoch']):>12}{mark}")
    p = s.get("packing") or {}
    if p:
        out.append(f"packing at {p['max_seq_len']:,}: {number(p['packed_sequences'])} sequences, padding "
                   f"{percent(p['padding_ratio'])}, {number(p['tokens_per_step'])} tokens/step, "
                   f"{number(p['steps_per_epoch'])} steps/epoch at batch size {p['batch_size']}")
    if s.get("overflow"):
        out.append(_overflow_line(s["overflow"]))
    if (s.get("chunking") or {}).get("records"):
        out.append(_chunking_line(s["chunking"]))
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
        title += "\n" + "\n".join(textwrap.wrap(tokenizer_label(summary["tokenizer"]), 90))
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
