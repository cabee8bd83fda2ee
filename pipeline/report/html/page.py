"""report.html's page: the scaffold (inline CSS, the sections' ids and titles, the document around them) and
the building blocks the sections are made of: escaped text, paragraphs, tables, sections and inline SVG charts."""
from __future__ import annotations

import functools
import html
import math

from pipeline.core.numfmt import cost, hours, is_number, number

SECTION_IDS = ("summary", "accounting", "splits", "stages", "languages", "quality", "lengths", "packing", "dedup",
               "pii", "memory", "gpus")
TITLES = {"summary": "Summary", "accounting": "Record accounting", "splits": "Splits", "stages": "Stages",
          "languages": "Languages", "quality": "Quality checks", "lengths": "Token lengths", "packing": "Packing",
          "dedup": "Duplicates", "pii": "Personal data (KVKK)", "memory": "Memory of one training step",
          "gpus": "GPU choice"}

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


# ------------------------------------------------------------------------------------------------ scaffold

def page(title: str, sections: list[str]) -> str:
    """The whole document: the head with the inline CSS, the title, then each section that is not empty."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{e(title)}</title><style>{_CSS}</style></head><body><main>"
            f"<h1>{e(title)}</h1>" + "".join(s for s in sections if s) + "</main></body></html>\n")


# ---------------------------------------------------------------------------------------------- building blocks

def e(value) -> str:
    """Escaped text: file names, reasons and any other value from the data may hold markup."""
    return html.escape(str(value), quote=True)


def table(header: list[str], rows: list[list], numeric: tuple[int, ...] = (), chosen: set[int] = frozenset(),
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
    return (f'<div class="scroll"><table{ident}><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def section(sid: str, body: str, title: str | None = None) -> str:
    return f'<section id="{sid}"><h2>{e(title or TITLES.get(sid, sid))}</h2>{body}</section>'


def note_section(sid: str, text: str) -> str:
    """A section that holds only a note: the report has no figures for it."""
    return section(sid, paragraph(text, "note"))


def needs(key: str, note: str):
    """Section guard: the decorated renderer gets report[key] when the report holds it; otherwise the section is
    only `note`, saying why it has no figures. The section id is the renderer's name without "_section"."""
    def wrap(render):
        sid = render.__name__.removesuffix("_section")

        @functools.wraps(render)
        def guarded(report: dict) -> str:
            value = report.get(key)
            return render(report, value) if value else note_section(sid, note)
        return guarded
    return wrap


def titled_table(title_html: str, header: list[str], rows: list[list], **table_args) -> str:
    """An <h3> (already escaped by the caller) and the table under it; nothing when there are no rows, since a
    heading over an empty table says nothing."""
    return f"<h3>{title_html}</h3>" + table(header, rows, **table_args) if rows else ""


def paragraph(text: str, cls: str | None = None) -> str:
    return f'<p class="{cls}">{e(text)}</p>' if cls else f"<p>{e(text)}</p>"


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


def legend(parts: list[tuple[str, str]]) -> str:
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
    swatches = legend([(f"{name.replace('_', ' ')} {size:.2f}", f"c{i % 11}") for i, (name, size) in enumerate(parts)])
    return "".join(out) + swatches


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

