"""report.html's sections on the GPU plan: the memory of one training step and the GPU choice."""
from __future__ import annotations

from pipeline.core.numfmt import cost, gib, hours, number
from pipeline.plan.gpus import likely_range, time_model_line
from pipeline.report.html.page import needs, paragraph, section, svg_gpu_costs, svg_memory, table


@needs("plan", "No GPU plan in this report (estimate off, or no lengths).")
def memory_section(report: dict, plan: dict) -> str:
    m = plan["memory"]
    rec = plan.get("recommendation")
    gpus = [(f"{c['gpu']}" + (f" x{c['count']}" if c["count"] > 1 else ""), c["usable_gib"])
            for c in plan.get("candidates", [])]
    body = [paragraph(f"At max length {plan['max_seq_len']:,}, micro-batch {m['micro_batch']}: peak allocated "
                      f"{m['peak_allocated_gib']:.2f} GiB, reserved {m['peak_reserved_gib']:.2f} GiB, about "
                      f"{m['nvidia_smi_gib']:.2f} GiB in nvidia-smi; peak phase: {m.get('peak_phase', '')}.")]
    body.append(svg_memory(m.get("components") or {}, m["micro_batch"], gpus,
                           (f"{rec['gpu']} x{rec['count']}", rec["micro_batch"], rec["vram_need_gib"]) if rec else None,
                           "chart-memory"))
    body.append(paragraph("Dashed lines: each GPU's usable memory (after the safety margin). Components are sizes at "
                          "their own peaks, so their sum can exceed the peak.", "note"))
    for note in m.get("notes") or []:
        body.append(paragraph(note, "note"))
    body.append(table(["component", "GiB"], [[k.replace("_", " "), gib(v)] for k, v in
                                             (m.get("components") or {}).items()], numeric=(1,),
                      tid="table-memory"))
    return section("memory", "".join(body))


@needs("plan", "No GPU plan in this report.")
def gpus_section(report: dict, plan: dict) -> str:
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
        body.append(paragraph(f"Recommended (cheapest that fits): {rec['gpu']} x{rec['count']}, micro-batch "
                              f"{rec['micro_batch']}, {hours(rec['hours'])}, {cost(rec['cost_usd'])}"
                              f"{_spread(rec)}.", "big"))
    if fastest:
        body.append(paragraph(f"Fastest: {fastest['gpu']} x{fastest['count']}, {hours(fastest['hours'])}, "
                              f"{cost(fastest['cost_usd'])}{_spread(fastest)}."))
    if time_model_line(plan):
        body.append(paragraph(time_model_line(plan), "note"))
    body.append(svg_gpu_costs(plan.get("candidates", []), rec, fastest, "chart-gpus"))
    body.append(table(["GPU", "cards", "fits", "need / usable GiB", "micro-batch",
                       f"{plan.get('currency', 'USD')}/h per card", "time", "cost",
                       ""], rows, numeric=(4, 5, 6, 7), chosen=chosen, tid="table-gpus"))
    t = plan.get("tokens") or {}
    body.append(paragraph(f"{plan['model']}, {plan['method']}, {plan['epochs']:g} epochs, "
                          f"{number(t.get('total'))} trained tokens; prices {plan.get('price_basis', '')}; fits keep "
                          f"a {plan.get('safety_margin', 0):.0%} safety margin.", "note"))
    for h in plan.get("hints") or []:
        body.append(paragraph(h, "note"))
    return section("gpus", "".join(body))


def _spread(choice: dict) -> str:
    return f" ({likely_range(choice)})" if choice.get("hours_range") else ""
