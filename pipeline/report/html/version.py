"""report.html's version section: what an appended version (--append-to) changed, from report.json's
`version` (report/version.py)."""
from __future__ import annotations

from pipeline.report.html.page import paragraph, section, table


def version_section(report: dict) -> str:
    v = report.get("version")
    if not v:
        return ""
    r, m = v["records"], v["max_seq_len"]
    rows = [["all", r["before"], r["added"], r["removed"], r["after"]]]
    rows += [[f"{kind[3:]} {name}", c["before"], c["added"], c["removed"], c["after"]]
             for kind in ("by_file", "by_lang") for name, c in v[kind].items()]
    body = paragraph(f"Appended to {v['previous']['run_id']} at {v['previous']['location']}. Removed: new records "
                     "dropped as copies of earlier ones (earlier_duplicate); no earlier record is removed.")
    body += table(["records", "before", "added", "removed", "after"], rows, numeric=(1, 2, 3, 4),
                  tid="table-version")
    lengths, plan = v["lengths"], v["plan"]
    figures = [["max_seq_len", m["before"], m["after"]]]
    if lengths.get("after"):
        b, a = lengths["before"]["tokens"], lengths["after"]["tokens"]
        figures += [[f"tokens per record {k}", b[k], a[k]] for k in ("p50", "p90", "p99", "max")]
    for key in ("recommendation", "fastest"):
        pick = [(plan[w] or {}).get(key) for w in ("before", "after")]
        figures.append([f"GPU plan: {key}", *(f"{p['gpu']} x{p['count']}, {p['cost_text']}" if p else "none"
                                              for p in pick)])
    body += table(["", "before", "after"], figures, tid="table-version-figures")
    notes = [lengths.get("after", {}).get("approximate") if lengths.get("after") else lengths.get("missing"),
             plan.get("approximate"), v["previous"].get("missing")]
    body += "".join(paragraph(f"Approximate or missing: {n}.", "note") for n in notes if n)
    return section("version", body, title="Version")
