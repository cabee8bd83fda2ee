"""report.json and report.md: the accounting of every record, per run and per source file, the stages'
stats, and the sections the stages add (dedup, pii, lengths, plan). Validated against
schemas/report.schema.json. Holds counts, ids and file positions only, never record content."""
from __future__ import annotations

import codecs
import json
from collections import Counter
from pathlib import Path

from pipeline.core.config import PrepareConfig
from pipeline.core.files import atomic_write_text
from pipeline.core.markdown import table
from pipeline.core.numfmt import number
from pipeline.core.schemas import validate
from pipeline.core.stats import StageStats, merge_all
from pipeline.data.formats import COLUMNS_SHOWN, file_format_notes
from pipeline.data.lengths.draw import render_lengths_markdown
from pipeline.data.lengths.tokenizer.resolve import fallback_warning, resolve_tokenizer
from pipeline.data.lengths.untrained import ACTION
from pipeline.data.quality import quality_summary
from pipeline.plan.gpus import render_plan_markdown
from pipeline.report.quality import render_quality_markdown
from pipeline.report.version import version_markdown

STAGE_ORDER = ("read", "normalize", "clean", "quality", "language", "decontam", "dedup", "canned", "pii_residual",
               "pii", "lengths", "split", "against", "write")


def _accounting(stages: dict[str, StageStats | dict]) -> dict:
    stats = {n: (s if isinstance(s, StageStats) else StageStats.from_dict(n, s)) for n, s in stages.items()}
    dropped, quarantined = Counter(), Counter()
    for st in stats.values():
        dropped.update(st.dropped)
        quarantined.update(st.quarantined)
    write = stats.get("write")
    kept = (write.records_in - sum(write.dropped.values())) if write else 0
    return {
        "input": stats["read"].records_in if "read" in stats else 0,
        "kept": kept,
        "rows": write.records_out if write else 0,
        "quarantined": sum(quarantined.values()),
        "quarantined_by_reason": dict(sorted(quarantined.items())),
        "dropped": dict(sorted(dropped.items())),
    }


def _formats_found(normalize: StageStats | None) -> dict:
    """A file's rows per format, where it mixes formats, and the commonest column names of its rows of no
    known format (names only)."""
    counters = normalize.counters if normalize else {}
    found = {}
    if len(counters.get("formats", {})) > 1:
        found["formats"] = dict(sorted(counters["formats"].items()))
    columns = counters.get("unknown_columns") or {}
    if columns:
        found["unknown_columns"] = sorted(columns, key=lambda c: -columns[c])[:COLUMNS_SHOWN]  # ties: as found
    return found


def build_report(cfg: PrepareConfig, shard_results: list[dict], stages: dict[str, StageStats],
                 shards: list[dict], dedup_report: dict | None, lengths: dict | None, plan: dict | None,
                 unreadable: list[dict], canned: dict | None = None, split: dict | None = None) -> dict:
    by_file: dict[str, list[dict]] = {}
    for r in shard_results:  # a large file may have been read as several shards, small files as one
        for part in r["files"]:
            by_file.setdefault(part["file"], []).append({**part, "eval": r["eval"]})
    files = {}
    for name, parts in by_file.items():
        merged = merge_all([StageStats.from_dict(n, d) for n, d in p["stages"].items()] for p in parts)
        files[name] = {
            **_accounting(merged), "format": parts[0]["format"], **_formats_found(merged.get("normalize")),
            "encoding": parts[0]["encoding"],
            "split_source": "validation_input" if parts[0]["eval"] else "input", "shards": len(parts),
            "warnings": sorted({w for p in parts for w in p["warnings"]}),
            "unread_after_cap": any(p["unread"] for p in parts),
            "truncated": any(p.get("truncated", False) for p in parts),
        }
    counts = _accounting(stages)
    splits = Counter()
    for s in shards:
        splits[s["split"]] += s["rows"]
    counts["splits"] = {"train": splits["train"], "validation": splits["validation"]}
    if split is None:  # how the validation share was chosen (split.py)
        has_eval = any(r["eval"] for r in shard_results)
        split = {"method": "validation_inputs" if has_eval else "hash"}
    report = {
        "counts": counts,
        "files": files,
        "unreadable_inputs": unreadable,
        "stages": {name: stages[name].to_dict() for name in STAGE_ORDER if name in stages},
        "shards": {"count": len(shards), "bytes": sum(s["bytes"] for s in shards)},
        "split": split,
    }
    if dedup_report is not None:
        report["dedup"] = dedup_report
    if "read" in stages:  # with the quality step off too: its checks are shown off
        quality = stages.get("quality")
        report["quality"] = quality_summary(quality.counters if quality else None, canned, cfg.quality)
    if "pii" in stages:
        from pipeline.data.pii import kvkk_summary  # loads Presidio: only for a run with the step

        probe = stages.get("pii_residual")
        report["pii"] = kvkk_summary(stages["pii"].counters, cfg.pii, probe.counters if probe else None)
    tokenizer = None
    if lengths is not None:
        # the counts' tokenizer as a record: whether it is the model's own (exact) and, if not, why
        tokenizer = resolve_tokenizer(cfg.lengths.tokenizer, cfg.estimate.model).summary()
        report["lengths"] = {**lengths, "tokenizer": tokenizer} if lengths.get("tokenizer") else lengths
    if plan is not None:
        report["plan"] = mark_approximate(plan, tokenizer)
    return report


def mark_approximate(plan: dict, tokenizer: dict | None) -> dict:
    """The plan, with `approximate` (the reason) when its token counts come from a fallback tokenizer."""
    if tokenizer and not tokenizer.get("exact", True):
        return {**plan, "approximate": tokenizer.get("fallback_reason") or "fallback tokenizer"}
    return plan


NOTES_SHOWN = 10    # file notes the terminal lists; report.md and report.html list NOTES_LISTED; report.json has all
NOTES_LISTED = 200


def _truncated(entry: dict) -> str | None:
    return "truncated: the compressed stream ends early, the records before the cut were read" \
        if entry.get("truncated") else None


def _reencoded(entry: dict) -> str | None:
    encoding = entry.get("encoding") or "utf-8"
    try:
        canonical = codecs.lookup(encoding).name
    except LookupError:
        canonical = encoding
    return None if canonical in ("utf-8", "utf-8-sig", "ascii") else f"re-encoded from {encoding}"


def _capped(entry: dict) -> str | None:
    return "cut at read.max_decompressed_bytes, the rest unread" if entry.get("unread_after_cap") else None


# What a file's report entry says was done to it, as a short note; each with the words of the reader's warning
# that says the same thing (that warning is then not repeated; any other warning is shown as it is).
_FILE_FACTS = ((_truncated, "stream ends early"), (_reencoded, "not UTF-8"), (_capped, None))


def file_notes(report: dict) -> list[tuple[str, str]]:
    """(file, note) for each input the run did something to besides reading it whole: skipped, truncated,
    re-encoded, cut at the size cap, and every warning its reader wrote, in one note per file. From report.json's
    content only, so the terminal, the Prefect flow, report.md and report.html say the same: names as the
    report holds them (labels where a name holds personal data), notes without record content. A new kind of
    note is a warning in the file's entry, or a field and its entry in _FILE_FACTS."""
    notes = [(u["file"], "skipped: " + u["reason"].removesuffix(" (skipped)"))
             for u in report.get("unreadable_inputs") or []]
    for name, entry in (report.get("files") or {}).items():
        said = [(fact(entry), words) for fact, words in _FILE_FACTS]
        parts = [note for note, _ in said if note]
        parts += [w for w in entry.get("warnings") or []
                  if not any(note and words and words in w for note, words in said)]
        parts += file_format_notes(entry)
        if parts:
            notes.append((name, "; ".join(parts)))
    return notes


def shown_notes(report: dict, limit: int) -> tuple[list[tuple[str, str]], int]:
    """The first `limit` file notes, and how many more report.json holds."""
    notes = file_notes(report)
    return notes[:limit], max(len(notes) - limit, 0)


def render_notes_text(report: dict) -> list[str]:
    """The file notes as terminal lines, NOTES_SHOWN of them: for `prepare run`'s summary and the Prefect flow's
    log. Names and notes are made printable: a file name is data, and an escape sequence in it must not reach
    the terminal."""
    notes, more = shown_notes(report, NOTES_SHOWN)
    if not notes:
        return []
    lines = ["input files the run did something to:"]
    lines += [f"  {_printable(name)}: {_printable(note)}" for name, note in notes]
    if more:
        lines.append(f"  and {number(more)} more, see report.json (files, unreadable_inputs)")
    return lines


def _printable(value: str) -> str:
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in value)


def check_accounting(counts: dict) -> None:
    total = counts["kept"] + counts["quarantined"] + sum(counts["dropped"].values())
    if total != counts["input"]:
        raise AssertionError(f"accounting broken: input {counts['input']} != accounted {total}")


def render_markdown(report: dict) -> str:
    c = report["counts"]
    out = ["# Prepare run report", "",
           f"**{number(c['input'])}** input records: **{number(c['kept'])}** kept ({number(c['rows'])} rows: "
           f"{number(c['splits']['train'])} train, {number(c['splits']['validation'])} validation), "
           f"**{number(c['quarantined'])}** quarantined, **{number(sum(c['dropped'].values()))}** dropped.", ""]

    warning = fallback_warning((report.get("lengths") or {}).get("tokenizer"))
    if warning:
        out += [f"> **{warning}**", ""]
    reasons = [[f"dropped: {k}", v] for k, v in c["dropped"].items()]
    reasons += [[f"quarantined: {k}", v] for k, v in c["quarantined_by_reason"].items()]
    if reasons:
        out += ["## Why records were removed", "", table(["reason", "records"], reasons), ""]
    out += ["## Per source file", "", table(
        ["file", "format", "input", "kept", "quarantined", "dropped"],
        [[name, f["format"], f["input"], f["kept"], f["quarantined"], sum(f["dropped"].values())]
         for name, f in report["files"].items()]), ""]
    notes, more = shown_notes(report, NOTES_LISTED)
    if notes:
        out += ["## What the run did to input files", "", table(["file", "what was done"], notes), ""]
        if more:
            out += [f"And {number(more)} more, see report.json (files, unreadable_inputs).", ""]
    out += ["## Stages", "", table(
        ["stage", "seconds", "in", "out"],
        [[n, f"{s['seconds']:.2f}", s["records_in"], s["records_out"]] for n, s in report["stages"].items()]), ""]
    split = report.get("split") or {}
    if split.get("languages"):
        out += ["## Validation split", "", "Stratified by language: each language's validation_fraction share of the "
                "records left after dedup and the canned-answer cap.", "",
                table(["language", "records", "validation"],
                      [[lang, v["records"], v["validation"]] for lang, v in split["languages"].items()]), ""]
    lang = (report["stages"].get("language") or {}).get("counters") or {}
    if lang.get("by_source"):  # the language step's mix per source file (pipeline/data/lang.py)
        codes = sorted(lang.get("langs") or {}, key=lambda k: -lang["langs"][k])
        out += ["## Languages", "", table(["file", *codes], [[name, *(mix.get(k, 0) for k in codes)]
                                                           for name, mix in lang["by_source"].items()]),
                "", f"Answer in another language than the prompt: {number(lang.get('lang_mismatch', 0))} records.", ""]
    if "quality" in report:
        out += ["## Quality checks", "", render_quality_markdown(report["quality"]), ""]
    if "dedup" in report:
        d = report["dedup"]
        out += ["## Duplicates", "", "```json", json.dumps(d.get("counts", d), indent=1)[:2000], "```", ""]
    if "pii" in report:
        from pipeline.data.pii import render_kvkk_markdown  # loads Presidio: only with a pii section

        out += ["## Personal data (KVKK)", "", render_kvkk_markdown(report["pii"]), ""]
    if "lengths" in report:
        out += ["## Token lengths", "", render_lengths_markdown(report["lengths"]), ""]
        untrained = report["lengths"].get("untrained")
        if untrained is not None:
            out += [untrained_text(untrained), ""]
    if "plan" in report:
        out += ["## GPU plan", "", render_plan_markdown(report["plan"]), ""]
    if "version" in report:  # --append-to: the difference from the earlier version
        out += version_markdown(report["version"])
    return "\n".join(out) + "\n"


def untrained_text(untrained: dict) -> str:
    """report.json's lengths.untrained as one sentence (report.md, report.html)."""
    return (f"Chat/instruction records with no trainable token after truncation at max_seq_len "
            f"{number(untrained['max_seq_len'])}: {number(untrained['records'])}"
            + (f" (e.g. ids {', '.join(untrained['example_ids'])}): {ACTION[untrained['policy']]}"
               if untrained["records"] else "") + ".")


def write_reports(run_dir: Path, report: dict) -> None:
    check_accounting(report["counts"])
    validate(report, "report")
    atomic_write_text(run_dir / "report.json", json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    atomic_write_text(run_dir / "report.md", render_markdown(report))
