"""report.html's sections on what the steps found: quality checks, token lengths and packing, duplicates,
personal data; and, as JSON, any section a step adds to report.json that the page has no view of yet."""
from __future__ import annotations

import json
import re

from pipeline.core.numfmt import number, percent
from pipeline.report.build import untrained_text
from pipeline.report.html.page import (
    e,
    needs,
    note_section,
    paragraph,
    section,
    svg_hbars,
    svg_histogram,
    table,
    titled_table,
)
from pipeline.report.quality import canned_line, canned_rows, check_rows

# top-level report keys that the page's sections render; any other key gets a section of its own (extra_sections)
_KNOWN_KEYS = {"counts", "files", "unreadable_inputs", "stages", "shards", "dedup", "quality", "pii", "lengths", "plan",
               "precheck", "run_id", "split", "version"}


_PCT_KEYS = ("p50", "p90", "p95", "p99")


@needs("lengths", "The lengths step was off.")
def lengths_section(report: dict, s: dict) -> str:
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
        body.append(paragraph(line, "big"))
        for w in choice.get("warnings") or []:
            body.append(paragraph(w, "warn"))
    header = ["group", "records", "mean", *_PCT_KEYS, "max", "tokens", "trainable p50", "trainable p99",
              "trainable tokens"]
    rows = [[name, gr["records"], f"{gr['tokens']['mean']:,.1f}", *(gr["tokens"][k] for k in _PCT_KEYS),
             gr["tokens"]["max"], gr["tokens"]["total"], gr["trainable"]["p50"], gr["trainable"]["p99"],
             gr["trainable"]["total"]] for name, gr in groups.items()]
    body.append("<h3>Per split, file and language (total and trainable tokens)</h3>")
    body.append(table(header, rows, numeric=tuple(range(1, len(header))), tid="table-length-groups"))
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
        body.append(table(["max_seq_len", "records over", "tokens lost", "trainable lost", "padding waste",
                           "packing efficiency", "steps / epoch", "packed steps / epoch"], trows,
                          numeric=tuple(range(1, 8)), chosen=chosen, tid="table-tradeoff"))
    o = s.get("overflow") or {}
    if o:
        body.append(paragraph(f"Over {o['max_seq_len']:,} tokens: {number(o['records_over'])} records "
                              f"(policy {o['policy']}), {number(o['tokens_over'])} tokens, "
                              f"{number(o['trainable_over'])} of them trainable."))
    untrained = s.get("untrained")
    if untrained is not None:  # records that train on nothing at the chosen length: a warning when there are any

        body.append(f'<p id="untrained" class="{"warn" if untrained["records"] else "note"}">'
                    f"{e(untrained_text(untrained))}</p>")
    return section("lengths", "".join(body))


def packing_section(report: dict) -> str:
    p = (report.get("lengths") or {}).get("packing") or {}
    if not p:
        return note_section("packing", "No packing figures (the lengths step was off).")
    rows = [["records", p["records"]], ["packed sequences", p["packed_sequences"]],
            ["packing efficiency", percent(p["packing_efficiency"])], ["padding", percent(p["padding_ratio"])],
            ["tokens per step", p["tokens_per_step"]], ["real tokens per step", p["real_tokens_per_step"]],
            ["steps per epoch", p["steps_per_epoch"]], ["tokens per epoch", p["tokens_per_epoch"]],
            ["batch size", p["batch_size"]], ["overflow policy", p.get("policy", "")]]
    body = paragraph(f"Best-fit decreasing packing at {p['max_seq_len']:,} tokens.") + table(["", "value"], rows,
                                                                                        numeric=(1,))
    body += svg_hbars([("records", p["records"], "c0"), ("packed sequences", p["packed_sequences"], "c2")],
                      "chart-packing")
    return section("packing", body)


def quality_section(report: dict) -> str:
    """report.html's `quality` section: counts, hashes, lengths and ids (the report holds no text)."""
    q = report.get("quality")
    if not q:
        return section("quality", paragraph("The quality checks were off." if "counts" in report else
                                            "A precheck runs no quality checks; `prepare run` does.", "note"))
    body = [table(["check", "setting", "records", "example ids"], check_rows(q), numeric=(2,), tid="table-quality")]
    if q.get("stripped"):
        body.append(paragraph(f"{q['stripped']} records had a quoted thread or signature stripped."))
    if q.get("canned"):
        body.append("<h3>Canned answers</h3>")
        body.append(paragraph(canned_line(q["canned"]) + "."))
        if q["canned"].get("top"):
            body.append(paragraph("Each answer by the hash of its case- and space-folded text, its length and the "
                                  "first records that give it (the text is in the shards, after personal data was "
                                  "removed).", "note"))
            body.append(table(["answer hash", "records", "chars", "example ids"], canned_rows(q),
                              numeric=(1, 2), tid="table-canned"))
    return section("quality", "".join(body))


def dedup_section(report: dict) -> str:
    d = report.get("dedup")
    pre = report.get("precheck")
    if not d and pre:
        return note_section("dedup", f"{number(pre['counts'].get('exact_duplicates', 0))} exact duplicates not "
                            "counted; a precheck finds exact duplicates only (`prepare run` also removes near "
                            "duplicates and validation leaks).")
    if not d:
        return note_section("dedup", "Duplicate removal was off.")
    counts = d.get("counts") or {}
    body = [svg_hbars([(k.replace("_", " "), v, "dropped") for k, v in counts.items() if k != "total"],
                      "chart-dedup", " records")]
    body.append(table(["", "records"], [[k.replace("_", " "), v] for k, v in counts.items()], numeric=(1,),
                      tid="table-dedup"))
    cl = d.get("clusters") or {}
    if cl:
        body.append(paragraph(f"{number(cl.get('count'))} clusters holding {number(cl.get('records_in_clusters'))} "
                              f"records; largest {number(cl.get('largest'))}."))
    examples = d.get("examples") or []
    if examples:
        body.append("<h3>Example clusters</h3>")
        body.append(paragraph("Members by id and source position (the text is in the shards, after personal data was "
                              "removed).", "note"))
        rows = []
        for k, ex in enumerate(examples[:10], 1):
            for m in ex.get("members", []):
                src = m.get("source") or {}
                what = "kept" if m.get("kept") else m.get("removed", "")
                sim = m.get("similarity")
                rows.append([k, m.get("id", ""), f"{src.get('file', '')}:{src.get('line', '')}", what,
                             "" if sim is None else f"{sim:.3f}"])
        body.append(table(["cluster", "id", "source", "decision", "similarity"], rows, tid="table-dedup-examples"))
    return section("dedup", "".join(body))


def pii_section(report: dict) -> str:
    p = report.get("pii")
    if not p:
        return note_section("pii", "A precheck does not look for personal data; `prepare run` does." if
                            report.get("precheck") else "The personal-data step was off.")
    found = p.get("personal_data_found") or {}
    body = [paragraph(f"{number(found.get('total', 0))} personal data items found in "
                      f"{number(found.get('records_with_personal_data', 0))} records; policy {p.get('policy')}; "
                      f"default action {(p.get('actions') or {}).get('default_operator')}.", "big")]
    by_type = found.get("by_type") or {}
    if by_type:
        body.append(svg_hbars([(k, v, "c4") for k, v in by_type.items()], "chart-pii", " found"))
    by_lang = found.get("by_language") or {}
    if by_lang:
        types = sorted({t for d in by_lang.values() for t in d})
        body.append(titled_table("Per type and language", ["type", *by_lang],
                                 [[t, *(by_lang[lang].get(t, 0) for lang in by_lang)] for t in types],
                                 numeric=tuple(range(1, len(by_lang) + 1)), tid="table-pii"))
    special = p.get("special_categories") or {}
    if special.get("total"):
        s_langs = sorted(special.get("by_language") or {})
        body.append(titled_table(f"KVKK article 6 special categories ({e(str(special.get('policy', '')))})",
                                 ["category", "found", *s_langs],
                                 [[c, n, *(special["by_language"][lang].get(c, 0) for lang in s_langs)]
                                  for c, n in (special.get("by_category") or {}).items()],
                                 numeric=tuple(range(1, len(s_langs) + 2)), tid="table-pii-special"))
    stripped = p.get("fields_stripped") or {}
    if stripped:
        body.append(paragraph("Fields stripped: " + ", ".join(f"{k} ({v})" for k, v in stripped.items())))
    risk = p.get("residual_risk") or {}
    if risk:
        body.append(_residual_measured(risk.get("measured")))
        body.append(titled_table(f"Residual risk: {e(risk.get('overall', ''))}", ["topic", "level", "what stays"],
                                 [[i.get("topic", ""), i.get("level", ""), i.get("what", "")]
                                  for i in risk.get("items", [])], tid="table-kvkk"))
    return section("pii", "".join(body))


def _residual_measured(measured: dict | None) -> str:
    """The residual risk measured on the run's records (pipeline/data/pii/residual.py): a sentence and its table."""
    if measured is None:  # a report from before the probe
        return ""
    from pipeline.data.pii.residual import measured_text  # the PII package loads Presidio

    sentence, header, rows = measured_text(measured)
    return paragraph(sentence) + titled_table("Names planted into copies of this run's records", header, rows,
                                              numeric=tuple(range(1, 5)), tid="table-pii-residual")


def extra_sections(report: dict) -> str:
    """Sections other steps add to report.json that this page has no view of yet: shown as JSON."""
    out = []
    for key, value in report.items():
        if key in _KNOWN_KEYS:
            continue
        text = json.dumps(value, indent=1, ensure_ascii=False, sort_keys=False, default=str)
        out.append(section(f"extra-{_slug(key)}", f"<pre>{e(text[:20000])}</pre>", title=str(key)))
    return "".join(out)


def _slug(key: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(key).lower()).strip("-") or "section"
