"""report.html: the run's findings in one self-contained page (inline CSS and inline SVG charts; no script, no
external asset, so it opens offline and from S3 as it is).

Built from report.json only (never from records): the report holds counts, ids and file positions, so the page
holds no personal data either. Every value from the data (file names, reasons, tokenizer names) is escaped.
Timings and cache counters are left out on purpose: the same data and config give the same bytes, so an
unchanged re-run uploads nothing (the S3 upload skips objects whose sha256 matches).

Sections carry stable element ids (SECTION_IDS) that tests and links use:
    summary, accounting, splits, stages, languages, lengths, packing, dedup, pii, memory, gpus
"""
from __future__ import annotations

import functools
import html
import json
import math
import re
from pathlib import Path

from pipeline.core.files import atomic_write_text
from pipeline.core.numfmt import cost, gib, hours, is_number, number, percent
from pipeline.report.quality import canned_line, canned_rows, check_rows

REPORT_HTML = "report.html"

SECTION_IDS = ("summary", "accounting", "splits", "stages", "languages", "quality", "lengths", "packing", "dedup", "pii",
               "memory", "gpus")
_TITLES = {"summary": "Summary", "accounting": "Record accounting", "splits": "Splits", "stages": "Stages",
           "languages": "Languages", "quality": "Quality checks", "lengths": "Token lengths", "packing": "Packing", "dedup": "Duplicates",
           "pii": "Personal data (KVKK)", "memory": "Memory of one training step", "gpus": "GPU choice"}
# top-level report keys that the sections above render; any other key gets a generic section of its own
_KNOWN_KEYS = {"counts", "files", "unreadable_inputs", "stages", "shards", "dedup", "quality", "pii", "lengths", "plan",
               "precheck", "run_id", "split"}

# Long names wrap anywhere so a table fits the page where it can; a table still wider (many number columns)
# scrolls sideways in its own box, whose clipped edge shows a shadow (the local/scroll background pair) because
# overlay scrollbars are hidden until a scroll starts.
_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif;margin:0;color:#1d2733;
background:#f6f7f9;line-height:1.45}
main{max-width:1040px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:1.5rem;margin:16px 0 4px}h2{font-size:1.2rem;margin:0 0 10px;border-bottom:1px solid #d8dde3;
padding-bottom:4px}h3{font-size:1rem;margin:14px 0 6px}
section{background:#fff;border:1px solid #d8dde3;border-radius:6px;padding:14px 18px;margin:14px 0}
nav{font-size:.9rem;margin:6px 0 0}nav a{margin-right:10px;color:#1f5fa8;text-decoration:none}
table{border-collapse:collapse;font-size:.88rem;margin:6px 0}th,td{border-bottom:1px solid #e4e7eb;
padding:3px 9px;text-align:left;vertical-align:top}th{background:#f0f2f5;font-weight:600}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}td.n{white-space:nowrap}td{overflow-wrap:anywhere}
tr.chosen td{background:#e8f3e8;font-weight:600}
.note{color:#5b6675;font-size:.85rem}.warn{background:#fff4e0;border:1px solid #f0c36d;border-radius:4px;
padding:6px 10px;margin:8px 0}.big{font-size:1.05rem}.tag{display:inline-block;background:#e8f3e8;
border:1px solid #9cc89c;border-radius:3px;padding:0 5px;font-size:.8rem;margin-left:4px}
svg{max-width:100%;height:auto;display:block;margin:6px 0}svg text{font-size:11px;fill:#1d2733}
svg .axis{stroke:#8a94a0;stroke-width:1}svg .grid{stroke:#e4e7eb;stroke-width:1}
svg .cut{stroke:#c0392b;stroke-width:2;stroke-dasharray:5 3}svg text.cut-label{fill:#c0392b;font-weight:600}
svg .usable{stroke:#34495e;stroke-width:1.5;stroke-dasharray:3 3}
.c0{fill:#2e86c1}.c1{fill:#e67e22}.c2{fill:#27ae60}.c3{fill:#8e44ad}.c4{fill:#c0392b}.c5{fill:#16a085}
.c6{fill:#d4ac0d}.c7{fill:#7f8c8d}.c8{fill:#2c3e50}.c9{fill:#e84393}.c10{fill:#6c5ce7}
.kept{fill:#27ae60}.quarantined{fill:#e67e22}.dropped{fill:#c0392b}.rec{fill:#27ae60}.other{fill:#95a5a6}
.swatch{display:inline-block;width:10px;height:10px;margin:0 4px 0 10px;vertical-align:baseline}
.scroll{overflow-x:auto;max-width:100%;background:
linear-gradient(to right,#fff 30%,#fff0) left/40px 100% no-repeat local,
linear-gradient(to left,#fff 30%,#fff0) right/40px 100% no-repeat local,
radial-gradient(farthest-side at 0 50%,#0003,#0000) left/12px 100% no-repeat scroll,
radial-gradient(farthest-side at 100% 50%,#0003,#0000) right/12px 100% no-repeat scroll}
pre{background:#f0f2f5;padding:8px;overflow:auto;font-size:.8rem;max-height:360px}
"""


# ----------------------------------------------------------------------------------------------- helpers

def e(value) -> str:
    """Escaped text: file names, reasons and any other value from the data may hold markup."""
    return html.escape(str(value), quote=True)


def _table(header: list[str], rows: list[list], numeric: tuple[int, ...] = (), chosen: set[int] = frozenset(),
           tid: str | None = None) -> str:
    """An HTML table in a box of its own that scrolls sideways when the table is wider than the page; cells are
    escaped here, counts formatted by number(), `numeric` columns right-aligned, rows in `chosen` highlighted."""
    head = "".join(f'<th class="n">{e(h)}</th>' if i in numeric else f"<th>{e(h)}</th>" for i, h in enumerate(header))
    body = []
    for r, row in enumerate(rows):
        row = [number(c) if is_number(c) else c for c in row]
        cells = "".join(f'<td class="n">{e(c)}</td>' if i in numeric else f"<td>{e(c)}</td>" for i, c in enumerate(row))
        body.append(f'<tr class="chosen">{cells}</tr>' if r in chosen else f"<tr>{cells}</tr>")
    ident = f' id="{tid}"' if tid else ""
    return f'<div class="scroll"><table{ident}><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def _section(sid: str, body: str, title: str | None = None) -> str:
    return f'<section id="{sid}"><h2>{e(title or _TITLES.get(sid, sid))}</h2>{body}</section>'


def _note_section(sid: str, text: str) -> str:
    """A section that holds only a note: the report has no figures for it."""
    return _section(sid, _p(text, "note"))


def _needs(key: str, note: str):
    """Section guard: the decorated renderer gets report[key] when the report holds it; otherwise the section is
    only `note`, saying why it has no figures. The section id is the renderer's name without the underscore."""
    def wrap(render):
        sid = render.__name__.lstrip("_")

        @functools.wraps(render)
        def guarded(report: dict) -> str:
            value = report.get(key)
            return render(report, value) if value else _note_section(sid, note)
        return guarded
    return wrap


def _titled_table(title_html: str, header: list[str], rows: list[list], **table_args) -> str:
    """An <h3> (already escaped by the caller) and the table under it; nothing when there are no rows, since a
    heading over an empty table says nothing."""
    return f"<h3>{title_html}</h3>" + _table(header, rows, **table_args) if rows else ""


def _p(text: str, cls: str | None = None) -> str:
    return f'<p class="{cls}">{e(text)}</p>' if cls else f"<p>{e(text)}</p>"


def _slug(key: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(key).lower()).strip("-") or "section"


# ------------------------------------------------------------------------------------------------ charts

LABEL_GAP = 3  # px between a GPU's dashed line and the start of its label


def text_width(text: str, font_px: float = 11) -> float:
    """A width no narrower than `text` in the page's sans fonts at font_px (svg text is 11 px): per character the
    advance of DejaVu Sans, the widest of them (system-ui falls back to it on Linux), rounded up."""
    em = sum(1.0 if c in "MWmw%@…" else 0.8 if c.isupper() else 0.64 if c.isdigit() else 0.62 if c.isalpha()
             else 0.34 if c in " .,:;'|!" else 0.84 for c in text)
    return em * font_px


def _row_label(label, right: float, y: float) -> str:
    """A bar's label, ending at `right`: a longer one keeps its end (a file name's most telling part) after an
    ellipsis, so it is never cut at the picture's left edge; the whole label is its tooltip."""
    text = str(label)
    if text_width(text) > right:
        text = "…" + next((text[k:] for k in range(1, len(text)) if text_width("…" + text[k:]) <= right), "")
    return f'<text x="{right}" y="{y}" text-anchor="end"><title>{e(label)}</title>{e(text)}</text>'


def svg_hbars(items: list[tuple[str, float, str]], chart_id: str, unit: str = "", width: int = 720) -> str:
    """Horizontal bars: (label, value, css class) per row, scaled to the largest value."""
    if not items:
        return ""
    row, label_w, right = 20, min(260, 12 + 7 * max(len(str(lbl)) for lbl, _, _ in items)), 90
    top = max((v for _, v, _ in items), default=0) or 1
    span = width - label_w - right
    out = [f'<svg id="{chart_id}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {row * len(items) + 8}" '
           f'width="{width}" role="img">']
    for i, (label, value, cls) in enumerate(items):
        y = 4 + i * row
        w = max(value / top * span, 1 if value else 0)
        out.append(_row_label(label, label_w - 6, y + 13))
        out.append(f'<rect class="bar {e(cls)}" x="{label_w}" y="{y + 2}" width="{w:.1f}" height="{row - 6}">'
                   f"<title>{e(label)}: {e(number(value))}{e(unit)}</title></rect>")
        out.append(f'<text x="{label_w + w + 5:.1f}" y="{y + 13}">{e(number(value))}{e(unit)}</text>')
    out.append("</svg>")
    return "".join(out)


def svg_stacked_rows(rows: list[tuple[str, list[tuple[str, float, str]]]], chart_id: str,
                     width: int = 720) -> str:
    """One horizontal stacked bar per row: (label, [(part, value, css class), ...]); all rows on one scale."""
    if not rows:
        return ""
    row, label_w, right = 22, min(300, 12 + 7 * max(len(str(lbl)) for lbl, _ in rows)), 60
    top = max((sum(v for _, v, _ in parts) for _, parts in rows), default=0) or 1
    span = width - label_w - right
    out = [f'<svg id="{chart_id}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {row * len(rows) + 8}" '
           f'width="{width}" role="img">']
    for i, (label, parts) in enumerate(rows):
        y = 4 + i * row
        x = float(label_w)
        out.append(_row_label(label, label_w - 6, y + 14))
        for part, value, cls in parts:
            if value <= 0:
                continue
            w = value / top * span
            out.append(f'<rect class="bar {e(cls)}" x="{x:.1f}" y="{y + 3}" width="{max(w, 1):.1f}" '
                       f'height="{row - 7}"><title>{e(label)}: {e(part)} {e(number(value))}</title></rect>')
            x += w
        out.append(f'<text x="{x + 5:.1f}" y="{y + 14}">{e(number(sum(v for _, v, _ in parts)))}</text>')
    out.append("</svg>")
    return "".join(out)


def _legend(parts: list[tuple[str, str]]) -> str:
    return '<p class="note">' + "".join(
        f'<svg class="swatch" viewBox="0 0 10 10" width="10" height="10"><rect class="{e(c)}" width="10" '
        f'height="10"/></svg>{e(name)}' for name, c in parts) + "</p>"


def svg_histogram(edges: list[int], counts: list[int], max_seq_len: int | None, chart_id: str,
                  width: int = 720, height: int = 240) -> str:
    """Record counts per token-length bin (log-spaced edges, drawn at equal widths), with the chosen max length
    as a dashed line placed inside its bin on the log scale."""
    if not counts:
        return ""
    left, bottom, top_pad = 48, 42, 22
    n = len(counts)
    bw = (width - left - 10) / n
    hmax = max(counts) or 1
    plot_h = height - bottom - top_pad
    out = [f'<svg id="{chart_id}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
           f'width="{width}" role="img">']
    for frac in (0.5, 1.0):
        y = top_pad + plot_h * (1 - frac)
        out.append(f'<line class="grid" x1="{left}" y1="{y:.1f}" x2="{width - 10}" y2="{y:.1f}"/>'
                   f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{e(number(round(hmax * frac)))}</text>')
    for i, c in enumerate(counts):
        h = c / hmax * plot_h
        x = left + i * bw
        label = f"{edges[i]:,}-{edges[i + 1] - 1:,} tokens" if edges[i + 1] - 1 > edges[i] else f"{edges[i]:,} tokens"
        out.append(f'<rect class="bar c0" x="{x + 1:.1f}" y="{top_pad + plot_h - h:.1f}" width="{max(bw - 2, 1):.1f}" '
                   f'height="{h:.1f}"><title>{e(label)}: {e(number(c))} records</title></rect>')
    step = max(1, math.ceil(n / 12))
    for i in range(0, n + 1, step):
        x = left + i * bw
        out.append(f'<text x="{x:.1f}" y="{height - bottom + 14}" text-anchor="middle">{e(number(edges[i]))}</text>')
    out.append(f'<line class="axis" x1="{left}" y1="{top_pad + plot_h}" x2="{width - 10}" y2="{top_pad + plot_h}"/>')
    out.append(f'<text x="{(width + left) / 2:.0f}" y="{height - 8}" text-anchor="middle">tokens per record '
               f"(log-spaced bins)</text>")
    if max_seq_len:
        pos = _log_position(edges, max_seq_len)
        x = left + pos * bw
        out.append(f'<line id="{chart_id}-cut" class="cut" x1="{x:.1f}" y1="{top_pad - 4}" x2="{x:.1f}" '
                   f'y2="{top_pad + plot_h}"/><text class="cut-label" x="{min(x + 4, width - 130):.1f}" '
                   f'y="{top_pad - 8}">max_seq_len {e(number(max_seq_len))}</text>')
    out.append("</svg>")
    return "".join(out)


def _log_position(edges: list[int], value: int) -> float:
    """Bin index (fractional) of value on the histogram's x axis."""
    if value <= edges[0]:
        return 0.0
    for i in range(len(edges) - 1):
        a, b = edges[i], edges[i + 1]
        if a <= value < b:
            return i + (math.log(value / a) / math.log(b / a) if a > 0 and b > a else 0.0)
    return float(len(edges) - 1)


_COMPONENT_ORDER = ("weights", "lora_adapters", "gradients", "optimizer_states", "master_weights", "activations",
                    "logits_cross_entropy", "optimizer_step_workspace", "framework_overhead", "allocator_overhead",
                    "cuda_context")


def _label_rows(labels: list[tuple[float, float]]) -> list[int]:
    """A row (0 = just under the axis) for each (x, width) label, whose text starts LABEL_GAP right of its
    dashed line at x, and whose line runs down through the rows above to its own. Placed from the right: each
    takes the first row where its text clears the texts of that row and no line that runs deeper crosses it.
    The labels placed before it are right of it, so its own line, left of their texts, crosses none of them:
    no label touches another label or another GPU's line."""
    rows = [0] * len(labels)
    placed: list[tuple[float, float, int]] = []   # (x, right edge of the text, row)
    for k in sorted(range(len(labels)), key=lambda k: -labels[k][0]):
        x, w = labels[k]
        right = x + LABEL_GAP + w + 2

        def free(row: int) -> bool:
            return all(right < px or x > pright for px, pright, prow in placed if prow == row) and \
                all(not (x <= px <= right) for px, _, prow in placed if prow > row)
        rows[k] = next(row for row in range(len(labels) + 1) if free(row))
        placed.append((x, right, rows[k]))
    return rows


def svg_memory(components: dict[str, float], micro_batch: int, gpus: list[tuple[str, float]],
               recommended: tuple[str, int, float] | None, chart_id: str, width: int = 720) -> str:
    """The estimate's components as one stacked bar, the recommended setup's total need as a second bar, and
    each GPU's usable memory as a dashed line on the same GiB scale."""
    parts = [(k, v) for k, v in sorted(components.items(), key=lambda kv: (
        _COMPONENT_ORDER.index(kv[0]) if kv[0] in _COMPONENT_ORDER else 99, kv[0])) if v and v > 0]
    total = sum(v for _, v in parts)
    need = max(total, recommended[2] if recommended else 0)
    # the axis ends a little past the smallest GPU that holds the larger bar: the bars stay readable, and the
    # GPUs beyond it are named at the right edge
    holding = [u for _, u in gpus if u >= need]
    scale_max = (min(holding) if holding else max([need, *(u for _, u in gpus)])) * 1.25 or 1
    beyond = sorted((u, name) for name, u in gpus if u > scale_max)
    gpus = [(name, u) for name, u in gpus if u <= scale_max]
    label_w, right = 150, 20
    span = width - label_w - right
    bar_h, lines_top = 26, 8
    # GPUs with the same usable memory share one line and one label
    merged: dict[float, list[str]] = {}
    for name, usable in gpus:
        merged.setdefault(round(usable, 2), []).append(name)
    levels = sorted(merged.items())
    rows = 2 if recommended else 1
    texts = [f"{', '.join(names)} {usable:.0f}" for usable, names in levels]
    xs = [label_w + u / scale_max * span for u, _ in levels]
    widths = [text_width(t) for t in texts]
    label_row = _label_rows(list(zip(xs, widths)))
    label_rows = max(label_row, default=0) + 1
    height = lines_top + rows * (bar_h + 10) + 30 + (label_rows + 1) * 14
    # the labels start at their lines: the picture widens to the right edge of the last one
    width = math.ceil(max([width, *(x + LABEL_GAP + w + 4 for x, w in zip(xs, widths))]))
    out = [f'<svg id="{chart_id}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
           f'width="{width}" role="img">']

    def x_of(size: float) -> float:
        return label_w + size / scale_max * span

    y = lines_top
    out.append(f'<text x="{label_w - 6}" y="{y + 17}" text-anchor="end">micro-batch {e(micro_batch)}</text>')
    x = float(label_w)
    for i, (name, size) in enumerate(parts):
        w = size / scale_max * span
        out.append(f'<rect class="bar c{i % 11}" x="{x:.1f}" y="{y}" width="{max(w, 0.5):.2f}" height="{bar_h}">'
                   f"<title>{e(name.replace('_', ' '))}: {size:.2f} GiB</title></rect>")
        x += w
    out.append(f'<text x="{x + 4:.1f}" y="{y + 17}">{total:.1f} GiB</text>')
    if recommended:
        y += bar_h + 10
        name, mb, need = recommended
        out.append(f'<text x="{label_w - 6}" y="{y + 17}" text-anchor="end">{e(name)}, micro-batch {e(mb)}</text>')
        out.append(f'<rect class="bar rec" x="{label_w}" y="{y}" width="{max(need / scale_max * span, 0.5):.1f}" '
                   f'height="{bar_h}"><title>recommended setup: {need:.2f} GiB needed</title></rect>')
        out.append(f'<text x="{x_of(need) + 4:.1f}" y="{y + 17}">{need:.1f} GiB</text>')
    axis_y = y + bar_h + 6
    out.append(f'<line class="axis" x1="{label_w}" y1="{axis_y}" x2="{label_w + span}" y2="{axis_y}"/>')
    for k, (usable, names) in enumerate(levels):
        xu = x_of(usable)
        ly = axis_y + 14 + label_row[k] * 14
        out.append(f'<line class="usable" x1="{xu:.1f}" y1="{lines_top - 4}" x2="{xu:.1f}" y2="{ly - 10}">'
                   f"<title>{e(', '.join(names))}: {usable:.1f} GiB usable</title></line>")
        out.append(f'<text class="gpu-label" x="{xu + LABEL_GAP:.1f}" y="{ly}">{e(texts[k])}</text>')
    if beyond:
        out.append(f'<text x="{label_w}" y="{axis_y + 14 + label_rows * 14}">beyond the '
                   f"axis: {e(', '.join(f'{name} {u:.0f}' for u, name in beyond))}</text>")
    out.append("</svg>")
    legend = _legend([(f"{name.replace('_', ' ')} {size:.2f}", f"c{i % 11}") for i, (name, size) in enumerate(parts)])
    return "".join(out) + legend


def svg_gpu_costs(candidates: list[dict], recommended: dict | None, fastest: dict | None, chart_id: str,
                  width: int = 720) -> str:
    """Per GPU setup that fits: the cost bar and the time bar side by side; the recommendation marked."""
    fit = [c for c in candidates if c.get("fits") and c.get("cost_usd") is not None]
    if not fit:
        return ""
    row, label_w, col = 22, 170, (width - 170 - 20) / 2
    max_cost = max(c["cost_usd"] for c in fit) or 1
    max_hours = max(c["hours"] for c in fit) or 1
    height = 22 + row * len(fit)
    out = [f'<svg id="{chart_id}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
           f'width="{width}" role="img">',
           f'<text x="{label_w}" y="12">cost (USD)</text><text x="{label_w + col + 10:.0f}" y="12">time</text>']

    def same(a: dict, b: dict | None) -> bool:
        return bool(b) and a["gpu"] == b["gpu"] and a["count"] == b["count"] and a.get("sharding") == b.get("sharding")

    for i, c in enumerate(fit):
        y = 18 + i * row
        name = f"{c['gpu']} x{c['count']}" + (f" ({c['sharding']})" if c.get("sharding") else "")
        mark = " ★" if same(c, recommended) else ""
        cls = "c2" if same(c, recommended) else "c0"
        out.append(f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end"'
                   + (' font-weight="bold"' if mark else "") + f">{e(name + mark)}</text>")
        wc = max(c["cost_usd"] / max_cost * (col - 60), 1)
        wh = max(c["hours"] / max_hours * (col - 60), 1)
        rec_attr = ' data-recommended="true"' if mark else ""
        out.append(f'<rect class="bar {cls}"{rec_attr} x="{label_w}" y="{y + 2}" width="{wc:.1f}" height="{row - 6}">'
                   f"<title>{e(name)}: {e(cost(c['cost_usd']))}</title></rect>"
                   f'<text x="{label_w + wc + 4:.1f}" y="{y + 13}">{e(cost(c["cost_usd"]))}</text>')
        hx = label_w + col + 10
        out.append(f'<rect class="bar c1" x="{hx:.1f}" y="{y + 2}" width="{wh:.1f}" height="{row - 6}">'
                   f"<title>{e(name)}: {e(hours(c['hours']))}</title></rect>"
                   f'<text x="{hx + wh + 4:.1f}" y="{y + 13}">{e(hours(c["hours"]))}'
                   + (" (fastest)" if same(c, fastest) else "") + "</text>")
    out.append("</svg>")
    return "".join(out)


# ---------------------------------------------------------------------------------------------- sections

def _summary(report: dict, title_note: str | None) -> str:
    parts = []
    c = report.get("counts")
    pre = report.get("precheck")
    if c:
        parts.append(_p(f"{number(c['input'])} input records: {number(c['kept'])} kept "
                        f"({number(c['splits']['train'])} train, {number(c['splits']['validation'])} validation), "
                        f"{number(c['quarantined'])} quarantined, {number(sum(c['dropped'].values()))} dropped.",
                        "big"))
    elif pre:
        parts.append(_p(f"{number(pre['records'])} records after {', '.join(pre['counts'].get('steps', []))} "
                        f"({'all measured' if pre.get('exact') else number(pre.get('sampled')) + ' sampled'}).", "big"))
    lengths = report.get("lengths") or {}
    tok = lengths.get("tokenizer")
    if tok:
        from pipeline.data.lengths.draw import tokenizer_label
        from pipeline.data.lengths.tokenizer import fallback_warning

        parts.append(f"<p>Tokenizer: <code>{e(tokenizer_label(tok))}</code></p>")
        warning = fallback_warning(tok)
        if warning:  # lengths.tokenizer.exact is false: not the model's own tokenizer
            parts.append('<p class="warn" id="tokenizer-warning">' + e(warning) + "</p>")
    if lengths.get("max_seq_len"):
        parts.append(_p(f"max_seq_len {lengths['max_seq_len']:,}"
                        + (f": {lengths['max_seq_len_choice']['reason']}" if lengths.get("max_seq_len_choice") else "")))
    plan = report.get("plan") or {}
    rec = plan.get("recommendation")
    if plan:
        if rec:
            parts.append(_p(f"Recommended GPU: {rec['gpu']} x{rec['count']}, micro-batch {rec['micro_batch']}, "
                            f"{hours(rec['hours'])}, {cost(rec['cost_usd'])} "
                            f"({plan['model']}, {plan['method']}, {plan['epochs']:g} epochs).", "big"))
        else:
            parts.append(_p("No GPU in the catalog fits this training step.", "warn"))
    if title_note:
        parts.append(_p(title_note, "note"))
    toc = [sid for sid in SECTION_IDS if sid != "summary"]
    nav = "<nav>" + "".join(f'<a href="#{sid}">{e(_TITLES[sid])}</a>' for sid in toc) + "</nav>"
    return _section("summary", "".join(parts) + nav)


def _accounting(report: dict) -> str:
    c = report.get("counts")
    if not c:
        pre = report.get("precheck") or {}
        pc = pre.get("counts") or {}
        if not pc:
            return _note_section("accounting", "No accounting in this report.")
        rows = [["input rows", pc.get("input", 0)], ["records measured from", pre.get("records", 0)],
                ["quarantined", pc.get("quarantined", 0)], ["dropped", pc.get("dropped", 0)],
                ["exact duplicates (not counted)", pc.get("exact_duplicates", 0)]]
        body = _table(["", "records"], rows, numeric=(1,))
        body += svg_hbars([(r[0], r[1], "c0") for r in rows], "chart-accounting")
        body += _p("A precheck reads and normalizes the data only; `prepare run` also removes near duplicates and "
                   "personal data.", "note")
        return _section("accounting", body)
    dropped = sum(c["dropped"].values())
    body = [_p(f"input {number(c['input'])} = kept {number(c['kept'])} + quarantined {number(c['quarantined'])} "
               f"+ dropped {number(dropped)}", "big")]
    reasons = [(f"dropped: {k}", v, "dropped") for k, v in c["dropped"].items()]
    reasons += [(f"quarantined: {k}", v, "quarantined") for k, v in c["quarantined_by_reason"].items()]
    if reasons:
        body.append("<h3>Why records were removed</h3>")
        body.append(svg_hbars(reasons, "chart-reasons", " records"))
        body.append(_table(["reason", "records"], [[r, v] for r, v, _ in reasons], numeric=(1,), tid="table-reasons"))
    files = report.get("files") or {}
    if files:
        body.append("<h3>Per source file</h3>")
        body.append(svg_stacked_rows(
            [(name, [("kept", f["kept"], "kept"), ("quarantined", f["quarantined"], "quarantined"),
                     ("dropped", sum(f["dropped"].values()), "dropped")]) for name, f in files.items()],
            "chart-files"))
        body.append(_legend([("kept", "kept"), ("quarantined", "quarantined"), ("dropped", "dropped")]))
        rows = []
        for name, f in files.items():
            why = ", ".join(f"{k} {number(v)}" for k, v in {**f["dropped"], **f["quarantined_by_reason"]}.items())
            rows.append([name, f.get("format", ""), f.get("encoding", ""), f["input"], f["kept"], f["quarantined"],
                         sum(f["dropped"].values()), why])
        body.append(_table(["file", "format", "encoding", "input", "kept", "quarantined", "dropped", "reasons"],
                           rows, numeric=(3, 4, 5, 6), tid="table-files"))
    from pipeline.report.build import NOTES_LISTED, shown_notes

    notes, more = shown_notes(report, NOTES_LISTED)
    body.append(_titled_table("What the run did to input files", ["file", "what was done"], notes,
                              tid="table-file-notes"))
    if more:
        body.append(_p(f"And {number(more)} more, see report.json (files, unreadable_inputs).", "note"))
    return _section("accounting", "".join(body))


@_needs("counts", "A precheck makes no splits.")
def _splits(report: dict, c: dict) -> str:
    s = c["splits"]
    body = svg_hbars([("train", s["train"], "c0"), ("validation", s["validation"], "c1")], "chart-splits", " rows")
    shards = report.get("shards") or {}
    rows = [[name, f["split_source"], f["rows"]] for name, f in (report.get("files") or {}).items()]
    body += _table(["file", "role", "rows kept"], rows, numeric=(2,))
    split = report.get("split") or {}
    if split.get("languages"):
        body += _titled_table("Validation stratified by language", ["language", "records", "validation"],
                              [[lang, v["records"], v["validation"]] for lang, v in split["languages"].items()],
                              numeric=(1, 2), tid="table-split-languages")
    if shards:
        body += _p(f"{number(shards.get('count'))} Parquet shard(s), {number(shards.get('bytes'))} bytes.", "note")
    return _section("splits", body)


@_needs("stages", "No stage figures in this report.")
def _stages(report: dict, stages: dict) -> str:
    rows = []
    for name, s in stages.items():
        why = ", ".join(f"{k} {number(v)}" for k, v in {**s.get("dropped", {}), **s.get("quarantined", {})}.items())
        rows.append([name, s["records_in"], s["records_out"], why])
    body = _table(["stage", "records in", "records out", "removed"], rows, numeric=(1, 2))
    body += _p("Timings are in report.json (left out here, so the same data gives the same page).", "note")
    return _section("stages", body)


def _languages(report: dict) -> str:
    detected = ((report.get("stages") or {}).get("language") or {}).get("counters") or {}
    by_lang = detected.get("langs") or \
        ((report.get("stages") or {}).get("pii", {}).get("counters") or {}).get("records_by_language") \
        or (report.get("pii") or {}).get("records_by_language") or {}
    body = ""
    if by_lang:
        body += svg_hbars([(k, v, f"c{i % 11}") for i, (k, v) in enumerate(sorted(by_lang.items(), key=lambda kv: -kv[1]))],
                          "chart-languages", " records")
        body += _p("Language per record (meta.lang, fastText lid.176), of the records the language step judged "
                   "(before duplicates were removed)." if detected.get("langs") else
                   "Language per record as the personal-data step routed it.", "note")
    if detected.get("by_source"):
        codes = sorted(by_lang, key=lambda k: -by_lang[k])
        body += _table(["file", *codes], [[name, *(mix.get(k, 0) for k in codes)]
                                          for name, mix in detected["by_source"].items()],
                       numeric=tuple(range(1, len(codes) + 1)))
        body += _p(f"Answer in another language than the prompt: {number(detected.get('lang_mismatch', 0))} records.",
                   "note")
    groups = (report.get("lengths") or {}).get("groups") or {}
    lang_groups = {k: g for k, g in groups.items() if k.startswith("lang:")}
    if lang_groups:
        body += "<h3>Kept records per language: tokens</h3>"
        body += _table(["language", "records", "tokens p50", "tokens p99", "trainable total"],
                       [[k[5:], g["records"], g["tokens"]["p50"], g["tokens"]["p99"], g["trainable"]["total"]]
                        for k, g in lang_groups.items()], numeric=(1, 2, 3, 4))
    if not body:
        body = _p("No language figures in this report.", "note")
    return _section("languages", body)


_PCT_KEYS = ("p50", "p90", "p95", "p99")


@_needs("lengths", "The lengths step was off.")
def _lengths(report: dict, s: dict) -> str:
    body = []
    basis = s.get("basis")
    groups = s.get("groups") or {}
    g = groups.get(basis or "") or next(iter(groups.values()), None)
    if g:
        body.append(f"<h3>Histogram ({e(basis or 'all')})</h3>")
        body.append(svg_histogram(g["histogram"]["edges"], g["histogram"]["counts"], s.get("max_seq_len"),
                                  "chart-lengths"))
    choice = s.get("max_seq_len_choice") or {}
    if choice:
        line = (f"max_seq_len {choice['value']:,}: {choice['reason']}; covers {percent(choice['records_covered'])} of "
                f"records and {percent(choice['tokens_covered'])} of tokens")
        body.append(_p(line, "big"))
        for w in choice.get("warnings") or []:
            body.append(_p(w, "warn"))
    header = ["group", "records", "mean", *_PCT_KEYS, "max", "tokens", "trainable p50", "trainable p99",
              "trainable tokens"]
    rows = [[name, gr["records"], f"{gr['tokens']['mean']:,.1f}", *(gr["tokens"][k] for k in _PCT_KEYS),
             gr["tokens"]["max"], gr["tokens"]["total"], gr["trainable"]["p50"], gr["trainable"]["p99"],
             gr["trainable"]["total"]] for name, gr in groups.items()]
    body.append("<h3>Per split, file and language (total and trainable tokens)</h3>")
    body.append(_table(header, rows, numeric=tuple(range(1, len(header))), tid="table-length-groups"))
    if s.get("tradeoff"):
        body.append("<h3>Trade-off of the max length</h3>")
        trows, chosen = [], set()
        for i, r in enumerate(s["tradeoff"]):
            if r.get("chosen"):
                chosen.add(i)
            trows.append([f"{r['max_seq_len']:,}" + (" (chosen)" if r.get("chosen") else ""),
                          f"{number(r['records_over'])} ({percent(r['records_over_share'])})",
                          f"{number(r['tokens_lost'])} ({percent(r['tokens_lost_share'])})", r["trainable_lost"],
                          percent(r["padding_waste"]), percent(r["packing_efficiency"]), r["steps_per_epoch"],
                          r["packed_steps_per_epoch"]])
        body.append(_table(["max_seq_len", "records over", "tokens lost", "trainable lost", "padding waste",
                            "packing efficiency", "steps / epoch", "packed steps / epoch"], trows,
                           numeric=tuple(range(1, 8)), chosen=chosen, tid="table-tradeoff"))
    o = s.get("overflow") or {}
    if o:
        body.append(_p(f"Over {o['max_seq_len']:,} tokens: {number(o['records_over'])} records (policy {o['policy']}), "
                       f"{number(o['tokens_over'])} tokens, {number(o['trainable_over'])} of them trainable."))
    untrained = s.get("untrained")
    if untrained is not None:  # records that train on nothing at the chosen length: a warning when there are any
        from pipeline.report.build import untrained_text

        body.append(f'<p id="untrained" class="{"warn" if untrained["records"] else "note"}">'
                    f"{e(untrained_text(untrained))}</p>")
    return _section("lengths", "".join(body))


def _packing(report: dict) -> str:
    p = (report.get("lengths") or {}).get("packing") or {}
    if not p:
        return _note_section("packing", "No packing figures (the lengths step was off).")
    rows = [["records", p["records"]], ["packed sequences", p["packed_sequences"]],
            ["packing efficiency", percent(p["packing_efficiency"])], ["padding", percent(p["padding_ratio"])],
            ["tokens per step", p["tokens_per_step"]], ["real tokens per step", p["real_tokens_per_step"]],
            ["steps per epoch", p["steps_per_epoch"]], ["tokens per epoch", p["tokens_per_epoch"]],
            ["batch size", p["batch_size"]], ["overflow policy", p.get("policy", "")]]
    body = _p(f"Best-fit decreasing packing at {p['max_seq_len']:,} tokens.") + _table(["", "value"], rows,
                                                                                        numeric=(1,))
    body += svg_hbars([("records", p["records"], "c0"), ("packed sequences", p["packed_sequences"], "c2")],
                      "chart-packing")
    return _section("packing", body)


def _quality(report: dict) -> str:
    """report.html's `quality` section: counts, hashes, lengths and ids (the report holds no text)."""
    q = report.get("quality")
    if not q:
        return _section("quality", _p("The quality checks were off." if "counts" in report else
                                      "A precheck runs no quality checks; `prepare run` does.", "note"))
    body = [_table(["check", "setting", "records", "example ids"], check_rows(q), numeric=(2,), tid="table-quality")]
    if q.get("stripped"):
        body.append(_p(f"{q['stripped']} records had a quoted thread or signature stripped."))
    if q.get("canned"):
        body.append("<h3>Canned answers</h3>")
        body.append(_p(canned_line(q["canned"]) + "."))
        if q["canned"].get("top"):
            body.append(_p("Each answer by the hash of its case- and space-folded text, its length and the first "
                           "records that give it (the text is in the shards, after personal data was removed).",
                           "note"))
            body.append(_table(["answer hash", "records", "chars", "example ids"], canned_rows(q),
                               numeric=(1, 2), tid="table-canned"))
    return _section("quality", "".join(body))


def _dedup(report: dict) -> str:
    d = report.get("dedup")
    pre = report.get("precheck")
    if not d and pre:
        return _note_section("dedup", f"{number(pre['counts'].get('exact_duplicates', 0))} exact duplicates not "
                             "counted; a precheck finds exact duplicates only (`prepare run` also removes near "
                             "duplicates and validation leaks).")
    if not d:
        return _note_section("dedup", "Duplicate removal was off.")
    counts = d.get("counts") or {}
    body = [svg_hbars([(k.replace("_", " "), v, "dropped") for k, v in counts.items() if k != "total"],
                      "chart-dedup", " records")]
    body.append(_table(["", "records"], [[k.replace("_", " "), v] for k, v in counts.items()], numeric=(1,),
                       tid="table-dedup"))
    cl = d.get("clusters") or {}
    if cl:
        body.append(_p(f"{number(cl.get('count'))} clusters holding {number(cl.get('records_in_clusters'))} records; "
                       f"largest {number(cl.get('largest'))}."))
    examples = d.get("examples") or []
    if examples:
        body.append("<h3>Example clusters</h3>")
        body.append(_p("Members by id and source position (the text is in the shards, after personal data was "
                       "removed).", "note"))
        rows = []
        for k, ex in enumerate(examples[:10], 1):
            for m in ex.get("members", []):
                src = m.get("source") or {}
                what = "kept" if m.get("kept") else m.get("removed", "")
                sim = m.get("similarity")
                rows.append([k, m.get("id", ""), f"{src.get('file', '')}:{src.get('line', '')}", what,
                             "" if sim is None else f"{sim:.3f}"])
        body.append(_table(["cluster", "id", "source", "decision", "similarity"], rows, tid="table-dedup-examples"))
    return _section("dedup", "".join(body))


def _pii(report: dict) -> str:
    p = report.get("pii")
    if not p:
        return _note_section("pii", "A precheck does not look for personal data; `prepare run` does." if
                             report.get("precheck") else "The personal-data step was off.")
    found = p.get("personal_data_found") or {}
    body = [_p(f"{number(found.get('total', 0))} personal data items found in "
               f"{number(found.get('records_with_personal_data', 0))} "
               f"records; policy {p.get('policy')}; default action {(p.get('actions') or {}).get('default_operator')}.",
               "big")]
    by_type = found.get("by_type") or {}
    if by_type:
        body.append(svg_hbars([(k, v, "c4") for k, v in by_type.items()], "chart-pii", " found"))
    by_lang = found.get("by_language") or {}
    if by_lang:
        types = sorted({t for d in by_lang.values() for t in d})
        body.append(_titled_table("Per type and language", ["type", *by_lang],
                                  [[t, *(by_lang[lang].get(t, 0) for lang in by_lang)] for t in types],
                                  numeric=tuple(range(1, len(by_lang) + 1)), tid="table-pii"))
    special = p.get("special_categories") or {}
    if special.get("total"):
        s_langs = sorted(special.get("by_language") or {})
        body.append(_titled_table(f"KVKK article 6 special categories ({e(str(special.get('policy', '')))})",
                                  ["category", "found", *s_langs],
                                  [[c, n, *(special["by_language"][lang].get(c, 0) for lang in s_langs)]
                                   for c, n in (special.get("by_category") or {}).items()],
                                  numeric=tuple(range(1, len(s_langs) + 2)), tid="table-pii-special"))
    stripped = p.get("fields_stripped") or {}
    if stripped:
        body.append(_p("Fields stripped: " + ", ".join(f"{k} ({v})" for k, v in stripped.items())))
    risk = p.get("residual_risk") or {}
    if risk:
        body.append(_residual_measured(risk.get("measured")))
        body.append(_titled_table(f"Residual risk: {e(risk.get('overall', ''))}", ["topic", "level", "what stays"],
                                  [[i.get("topic", ""), i.get("level", ""), i.get("what", "")]
                                   for i in risk.get("items", [])], tid="table-kvkk"))
    return _section("pii", "".join(body))


def _residual_measured(measured: dict | None) -> str:
    """The residual risk measured on the run's records (pipeline/data/pii/residual.py): a sentence and its table."""
    from pipeline.data.pii.residual import measured_text

    if measured is None:  # a report from before the probe
        return ""
    sentence, header, rows = measured_text(measured)
    return _p(sentence) + _titled_table("Names planted into copies of this run's records", header, rows,
                                        numeric=tuple(range(1, 5)), tid="table-pii-residual")


@_needs("plan", "No GPU plan in this report (estimate off, or no lengths).")
def _memory(report: dict, plan: dict) -> str:
    m = plan["memory"]
    rec = plan.get("recommendation")
    gpus = [(f"{c['gpu']}" + (f" x{c['count']}" if c["count"] > 1 else ""), c["usable_gib"])
            for c in plan.get("candidates", [])]
    body = [_p(f"At max length {plan['max_seq_len']:,}, micro-batch {m['micro_batch']}: peak allocated "
               f"{m['peak_allocated_gib']:.2f} GiB, reserved {m['peak_reserved_gib']:.2f} GiB, about "
               f"{m['nvidia_smi_gib']:.2f} GiB in nvidia-smi; peak phase: {m.get('peak_phase', '')}.")]
    body.append(svg_memory(m.get("components") or {}, m["micro_batch"], gpus,
                           (f"{rec['gpu']} x{rec['count']}", rec["micro_batch"], rec["vram_need_gib"]) if rec else None,
                           "chart-memory"))
    body.append(_p("Dashed lines: each GPU's usable memory (after the safety margin). Components are sizes at "
                   "their own peaks, so their sum can exceed the peak.", "note"))
    for note in m.get("notes") or []:
        body.append(_p(note, "note"))
    body.append(_table(["component", "GiB"], [[k.replace("_", " "), gib(v)] for k, v in
                                              (m.get("components") or {}).items()], numeric=(1,),
                       tid="table-memory"))
    return _section("memory", "".join(body))


@_needs("plan", "No GPU plan in this report.")
def _gpus(report: dict, plan: dict) -> str:
    rec, fastest = plan.get("recommendation"), plan.get("fastest")

    def same(a, b):
        return bool(b) and a["gpu"] == b["gpu"] and a["count"] == b["count"] and a.get("sharding") == b.get("sharding")

    rows, chosen = [], set()
    for i, c in enumerate(plan.get("candidates", [])):
        mark = "recommended" if same(c, rec) else "fastest" if same(c, fastest) else ""
        if mark == "recommended":
            chosen.add(i)
        rows.append([c["gpu"], f"{c['count']}" + (f" ({c['sharding']})" if c.get("sharding") else ""),
                     "yes" if c["fits"] else "no", f"{c['vram_need_gib']:.1f} / {c['usable_gib']:.1f}",
                     c.get("micro_batch") or "-", f"{c['price_per_hour']:.2f}",
                     hours(c.get("hours")), cost(c.get("cost_usd")) if c["fits"] else "-", mark])
    body = []
    if rec:
        body.append(_p(f"Recommended (cheapest that fits): {rec['gpu']} x{rec['count']}, micro-batch "
                       f"{rec['micro_batch']}, {hours(rec['hours'])}, {cost(rec['cost_usd'])}.", "big"))
    if fastest:
        body.append(_p(f"Fastest: {fastest['gpu']} x{fastest['count']}, {hours(fastest['hours'])}, "
                       f"{cost(fastest['cost_usd'])}."))
    body.append(svg_gpu_costs(plan.get("candidates", []), rec, fastest, "chart-gpus"))
    body.append(_table(["GPU", "cards", "fits", "need / usable GiB", "micro-batch",
                        f"{plan.get('currency', 'USD')}/h per card", "time", "cost",
                        ""], rows, numeric=(4, 5, 6, 7), chosen=chosen, tid="table-gpus"))
    t = plan.get("tokens") or {}
    body.append(_p(f"{plan['model']}, {plan['method']}, {plan['epochs']:g} epochs, {number(t.get('total'))} trained "
                   f"tokens; prices {plan.get('price_basis', '')}; fits keep a {plan.get('safety_margin', 0):.0%} "
                   f"safety margin.", "note"))
    for h in plan.get("hints") or []:
        body.append(_p(h, "note"))
    return _section("gpus", "".join(body))


def _extra(report: dict) -> str:
    """Sections other steps add to report.json that this page has no view of yet: shown as JSON."""
    out = []
    for key, value in report.items():
        if key in _KNOWN_KEYS:
            continue
        text = json.dumps(value, indent=1, ensure_ascii=False, sort_keys=False, default=str)
        out.append(_section(f"extra-{_slug(key)}", f"<pre>{e(text[:20000])}</pre>", title=str(key)))
    return "".join(out)


# ------------------------------------------------------------------------------------------------- page

def render_html(report: dict, title: str = "Prepare run report", note: str | None = None) -> str:
    """The page for a report.json (run) or a precheck report (`precheck` key instead of `counts`)."""
    sections = [_summary(report, note), _accounting(report), _splits(report), _stages(report),
                _languages(report), _quality(report), _lengths(report), _packing(report), _dedup(report), _pii(report),
                _memory(report), _gpus(report), _extra(report)]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{e(title)}</title><style>{_CSS}</style></head><body><main>"
            f"<h1>{e(title)}</h1>" + "".join(s for s in sections if s) + "</main></body></html>\n")


def write_html(path: str | Path, report: dict, title: str = "Prepare run report", note: str | None = None) -> Path:
    path = Path(path)
    atomic_write_text(path, render_html(report, title, note))
    return path


def precheck_report(result: dict) -> dict:
    """The report shape render_html takes, from run_precheck's result."""
    return {"precheck": {k: result[k] for k in ("records", "sampled", "exact", "counts") if k in result},
            "lengths": result.get("tokens"), "plan": result.get("plan")}


def write_run_html(run_dir: str | Path, report: dict) -> dict:
    """report.html beside report.json; returns its manifest entry (path, bytes, sha256), which the upload
    sends before the manifest."""
    from pipeline.core.files import sha256_file

    path = write_html(Path(run_dir) / REPORT_HTML, report)
    return {"path": REPORT_HTML, "bytes": path.stat().st_size, "sha256": sha256_file(path)}


def html_locations(run_dir: str | Path, manifest_uri: str | None) -> dict | None:
    """Where a run's report.html is: {"local": file URI, "s3": URI beside the uploaded manifest, or None};
    None when the run wrote none. For the Prefect artifacts (flows/ links to it)."""
    path = Path(run_dir) / REPORT_HTML
    if not path.is_file():
        return None
    remote = manifest_uri.rsplit("/", 1)[0] + "/" + REPORT_HTML if manifest_uri else None
    return {"local": path.resolve().as_uri(), "s3": remote}
