"""report.html's sections on the records: the summary, the accounting, the splits, the stages and the languages."""
from __future__ import annotations

from pipeline.core.numfmt import cost, hours, number
from pipeline.data.lengths.draw import tokenizer_label
from pipeline.data.lengths.tokenizer.resolve import fallback_warning
from pipeline.report.build import NOTES_LISTED, shown_notes
from pipeline.report.html.page import (
    SECTION_IDS,
    TITLES,
    e,
    legend,
    needs,
    note_section,
    paragraph,
    section,
    svg_hbars,
    svg_stacked_rows,
    table,
    titled_table,
)


def summary_section(report: dict, title_note: str | None) -> str:
    parts = []
    c = report.get("counts")
    pre = report.get("precheck")
    if c:
        parts.append(paragraph(f"{number(c['input'])} input records: {number(c['kept'])} kept "
                               f"({number(c['splits']['train'])} train, "
                               f"{number(c['splits']['validation'])} validation), {number(c['quarantined'])} "
                               f"quarantined, {number(sum(c['dropped'].values()))} dropped.", "big"))
    elif pre:
        parts.append(paragraph(f"{number(pre['records'])} records after {', '.join(pre['counts'].get('steps', []))} "
                               f"({'all measured' if pre.get('exact') else number(pre.get('sampled')) + ' sampled'}).",
                               "big"))
    lengths = report.get("lengths") or {}
    tok = lengths.get("tokenizer")
    if tok:
        parts.append(f"<p>Tokenizer: <code>{e(tokenizer_label(tok))}</code></p>")
        warning = fallback_warning(tok)
        if warning:  # lengths.tokenizer.exact is false: not the model's own tokenizer
            parts.append('<p class="warn" id="tokenizer-warning">' + e(warning) + "</p>")
    if lengths.get("max_seq_len"):
        choice = lengths.get("max_seq_len_choice")
        parts.append(paragraph(f"max_seq_len {lengths['max_seq_len']:,}" + (f": {choice['reason']}" if choice else "")))
    plan = report.get("plan") or {}
    rec = plan.get("recommendation")
    if plan:
        if rec:
            parts.append(paragraph(f"Recommended GPU: {rec['gpu']} x{rec['count']}, micro-batch {rec['micro_batch']}, "
                                   f"{hours(rec['hours'])}, {cost(rec['cost_usd'])} "
                                   f"({plan['model']}, {plan['method']}, {plan['epochs']:g} epochs).", "big"))
        else:
            parts.append(paragraph("No GPU in the catalog fits this training step.", "warn"))
    if title_note:
        parts.append(paragraph(title_note, "note"))
    toc = [sid for sid in SECTION_IDS if sid != "summary"]
    nav = "<nav>" + "".join(f'<a href="#{sid}">{e(TITLES[sid])}</a>' for sid in toc) + "</nav>"
    return section("summary", "".join(parts) + nav)


def accounting_section(report: dict) -> str:
    c = report.get("counts")
    if not c:
        pre = report.get("precheck") or {}
        pc = pre.get("counts") or {}
        if not pc:
            return note_section("accounting", "No accounting in this report.")
        rows = [["input rows", pc.get("input", 0)], ["records measured from", pre.get("records", 0)],
                ["quarantined", pc.get("quarantined", 0)], ["dropped", pc.get("dropped", 0)],
                ["exact duplicates (not counted)", pc.get("exact_duplicates", 0)]]
        body = table(["", "records"], rows, numeric=(1,))
        body += svg_hbars([(r[0], r[1], "c0") for r in rows], "chart-accounting")
        body += paragraph("A precheck reads and normalizes the data only; `prepare run` also removes near duplicates "
                          "and personal data.", "note")
        return section("accounting", body)
    dropped = sum(c["dropped"].values())
    body = [paragraph(f"input {number(c['input'])} = kept {number(c['kept'])} + quarantined {number(c['quarantined'])} "
                      f"+ dropped {number(dropped)}", "big")]
    reasons = [(f"dropped: {k}", v, "dropped") for k, v in c["dropped"].items()]
    reasons += [(f"quarantined: {k}", v, "quarantined") for k, v in c["quarantined_by_reason"].items()]
    if reasons:
        body.append("<h3>Why records were removed</h3>")
        body.append(svg_hbars(reasons, "chart-reasons", " records"))
        body.append(table(["reason", "records"], [[r, v] for r, v, _ in reasons], numeric=(1,), tid="table-reasons"))
    files = report.get("files") or {}
    if files:
        body.append("<h3>Per source file</h3>")
        body.append(svg_stacked_rows(
            [(name, [("kept", f["kept"], "kept"), ("quarantined", f["quarantined"], "quarantined"),
                     ("dropped", sum(f["dropped"].values()), "dropped")]) for name, f in files.items()],
            "chart-files"))
        body.append(legend([("kept", "kept"), ("quarantined", "quarantined"), ("dropped", "dropped")]))
        rows = []
        for name, f in files.items():
            why = ", ".join(f"{k} {number(v)}" for k, v in {**f["dropped"], **f["quarantined_by_reason"]}.items())
            rows.append([name, f.get("format", ""), f.get("encoding", ""), f["input"], f["kept"], f["quarantined"],
                         sum(f["dropped"].values()), why])
        body.append(table(["file", "format", "encoding", "input", "kept", "quarantined", "dropped", "reasons"],
                          rows, numeric=(3, 4, 5, 6), tid="table-files"))

    notes, more = shown_notes(report, NOTES_LISTED)
    body.append(titled_table("What the run did to input files", ["file", "what was done"], notes,
                             tid="table-file-notes"))
    if more:
        body.append(paragraph(f"And {number(more)} more, see report.json (files, unreadable_inputs).", "note"))
    return section("accounting", "".join(body))


@needs("counts", "A precheck makes no splits.")
def splits_section(report: dict, c: dict) -> str:
    s = c["splits"]
    body = svg_hbars([("train", s["train"], "c0"), ("validation", s["validation"], "c1")], "chart-splits", " rows")
    shards = report.get("shards") or {}
    rows = [[name, f["split_source"], f["rows"]] for name, f in (report.get("files") or {}).items()]
    body += table(["file", "role", "rows kept"], rows, numeric=(2,))
    split = report.get("split") or {}
    if split.get("languages"):
        body += titled_table("Validation stratified by language", ["language", "records", "validation"],
                             [[lang, v["records"], v["validation"]] for lang, v in split["languages"].items()],
                             numeric=(1, 2), tid="table-split-languages")
    if shards:
        body += paragraph(f"{number(shards.get('count'))} Parquet shard(s), {number(shards.get('bytes'))} bytes.",
                          "note")
    return section("splits", body)


@needs("stages", "No stage figures in this report.")
def stages_section(report: dict, stages: dict) -> str:
    rows = []
    for name, s in stages.items():
        why = ", ".join(f"{k} {number(v)}" for k, v in {**s.get("dropped", {}), **s.get("quarantined", {})}.items())
        rows.append([name, s["records_in"], s["records_out"], why])
    body = table(["stage", "records in", "records out", "removed"], rows, numeric=(1, 2))
    body += paragraph("Timings are in report.json (left out here, so the same data gives the same page).", "note")
    return section("stages", body)


def languages_section(report: dict) -> str:
    detected = ((report.get("stages") or {}).get("language") or {}).get("counters") or {}
    by_lang = detected.get("langs") or \
        ((report.get("stages") or {}).get("pii", {}).get("counters") or {}).get("records_by_language") \
        or (report.get("pii") or {}).get("records_by_language") or {}
    body = ""
    if by_lang:
        largest_first = sorted(by_lang.items(), key=lambda kv: -kv[1])
        body += svg_hbars([(k, v, f"c{i % 11}") for i, (k, v) in enumerate(largest_first)], "chart-languages",
                          " records")
        body += paragraph("Language per record (meta.lang, fastText lid.176), of the records the language step "
                          "judged (before duplicates were removed)." if detected.get("langs") else
                          "Language per record as the personal-data step routed it.", "note")
    if detected.get("by_source"):
        codes = sorted(by_lang, key=lambda k: -by_lang[k])
        body += table(["file", *codes], [[name, *(mix.get(k, 0) for k in codes)]
                                         for name, mix in detected["by_source"].items()],
                      numeric=tuple(range(1, len(codes) + 1)))
        body += paragraph(f"Answer in another language than the prompt: {number(detected.get('lang_mismatch', 0))} "
                          "records.", "note")
    groups = (report.get("lengths") or {}).get("groups") or {}
    lang_groups = {k: g for k, g in groups.items() if k.startswith("lang:")}
    if lang_groups:
        body += "<h3>Kept records per language: tokens</h3>"
        body += table(["language", "records", "tokens p50", "tokens p99", "trainable total"],
                      [[k[5:], g["records"], g["tokens"]["p50"], g["tokens"]["p99"], g["trainable"]["total"]]
                       for k, g in lang_groups.items()], numeric=(1, 2, 3, 4))
    if not body:
        body = paragraph("No language figures in this report.", "note")
    return section("languages", body)
