"""report.json's `version` section of an appended version (--append-to): the difference from the earlier version,
from the earlier manifest and version_basis.json and this run's report; no record is read again.

version_basis.json (version_basis) is written by every run beside its manifest, listed in it and uploaded with
the shards: the figures of its report this section needs, in the report's own key paths, without a timing, so a
rerun writes it byte for byte again and an unchanged S3 rerun uploads nothing. report.json is neither (its
timings change), so an earlier version is read through this file alone, in a run directory or on S3.

    records      before (the earlier version's kept records), added (this run's kept), removed (this run's new
                 records dropped as copies of earlier ones: earlier_duplicate; no earlier record is removed), after
    by_file      per input file; by_lang per language (the records the lengths step measured)
    lengths      token lengths before, added and after; after is the sum of the two log histograms (exact counts
                 per bin), its percentiles read off them: approximate, within a bin (4 per octave, ~19%)
    max_seq_len  before and after; plan: the GPU plan before and after (after: the two packings added, see
                 combined_packing)

An earlier version that is itself appended carries this section: its `after` figures are the whole earlier
version's, so they are what `before` takes.
"""
from __future__ import annotations

from pipeline.data.lengths.histogram import PCT_KEYS, PERCENTILES, log_bin_edges

HISTOGRAM_PERCENTILES = "percentiles of the version read off the sum of the two log histograms (4 bins per " \
                        "octave): each is the upper edge of the bin that holds it, within ~19% of the exact value"
PLAN_SUM = "the version's packing is the sum of the two runs' packings at the same max_seq_len (trl packs each " \
           "1,000 records apart, so a joint packing differs only at the seams); figures of the earlier run as " \
           "its version_basis.json states them"


BASIS_FILE = "version_basis.json"
BASIS_FORMAT = 1
PLAN_PICK = ("gpu", "count", "micro_batch", "hours", "cost_usd", "cost_text")


def _present(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not None}


def version_basis(report: dict) -> dict:
    """What a later version's section (version_section) reads of this run's report, at the same key paths:
    kept records per file, records and token lengths of all records and per language, the packing, the GPU
    plan's brief, and this run's own version section's `after` figures where it is a version itself."""
    lengths = report.get("lengths") or {}
    groups = {name: ({k: g[k] for k in ("records", "tokens", "histogram")} if name == "all"
                     else {"records": g["records"]})
              for name, g in (lengths.get("groups") or {}).items() if name == "all" or name.startswith("lang:")}
    plan = report.get("plan")
    brief = _present({"max_seq_len": plan.get("max_seq_len"),
                      "tokens": {k: plan.get("tokens", {}).get(k) for k in ("per_epoch", "sequences_per_epoch")},
                      **{k: {f: plan[k].get(f) for f in PLAN_PICK} if plan.get(k) else None
                         for k in ("recommendation", "fastest")}}) if plan else None
    version = report.get("version")
    return _present({
        "basis_format": BASIS_FORMAT,
        "files": {name: {"kept": f["kept"]} for name, f in report["files"].items()},
        "lengths": _present({"groups": groups, "packing": lengths.get("packing")}) if lengths else None,
        "plan": brief,
        "version": {"by_file": version["by_file"], "by_lang": version["by_lang"],
                    "lengths": {"after": version["lengths"].get("after")},
                    "packing": {"after": version["packing"].get("after")}} if version else None,
    })


def _earlier(report: dict | None, key: str):
    """The earlier version's figure `key`: its own version section's `after` where it is a version itself."""
    return (((report or {}).get("version") or {}).get(key) or {}).get("after")


def combined_packing(before: dict, added: dict) -> dict:
    """Two packing summaries (packing.packing_summary, at the same max_seq_len) as the version's: the sequences
    and tokens of each added (each part packed on its own, as trl packs each 1,000 records apart)."""
    sums = {k: before[k] + added[k] for k in ("records", "packed_sequences", "tokens", "tokens_lost",
                                               "tokens_per_epoch", "sequences_per_epoch")}
    padding = 1 - sums["tokens"] / sums["tokens_per_epoch"] if sums["tokens_per_epoch"] else 0.0
    batch = added["batch_size"]
    return {**added, **sums, "padding_ratio": round(padding, 6), "packing_efficiency": round(1 - padding, 6),
            "steps_per_epoch": -(-sums["sequences_per_epoch"] // batch),
            "real_tokens_per_step": round(sums["tokens"] / max(-(-sums["sequences_per_epoch"] // batch), 1), 1)}


def merged_histogram(a: dict, b: dict) -> dict:
    """Two log histograms (histogram.log_histogram: edges, counts, trimmed to their non-empty bins) as one on
    the grid both come from (log_bin_edges), the empty bins between them filled in; a count stays at its bin's
    lower edge."""
    counts: dict[int, int] = {}
    for h in (a, b):
        for lo, n in zip(h["edges"], h["counts"]):
            counts[lo] = counts.get(lo, 0) + n
    ends = [e for h in (a, b) for e in h["edges"]]
    if not ends:
        return {"edges": [], "counts": []}
    low, high = min(ends), max(ends)
    edges = sorted({*ends, *(int(e) for e in log_bin_edges(high - 1) if low <= e <= high)})
    return {"edges": edges, "counts": [counts.get(lo, 0) for lo in edges[:-1]]}


def histogram_percentiles(h: dict) -> dict:
    total, out, seen = sum(h["counts"]), {}, 0
    cumulative = []
    for n in h["counts"]:
        seen += n
        cumulative.append(seen)
    for key, q in zip(PCT_KEYS, PERCENTILES):
        rank = q / 100 * total
        at = next((i for i, c in enumerate(cumulative) if c >= rank), len(cumulative) - 1)
        out[key] = h["edges"][at + 1] - 1 if total else 0
    return out


def _lengths_of(report: dict | None) -> dict | None:
    """records, token stats and histogram of all records of a report's lengths section."""
    group = ((report or {}).get("lengths") or {}).get("groups", {}).get("all")
    return {"records": group["records"], "tokens": group["tokens"], "histogram": group["histogram"]} if group else None


def lengths_diff(earlier: dict | None, report: dict) -> dict:
    before = _earlier(earlier, "lengths") or _lengths_of(earlier)
    added = _lengths_of(report)
    if not (before and added):
        why = f"the earlier {BASIS_FILE} holds no token lengths" if added else "this run measured no token lengths"
        return {"before": before, "added": added, "after": None, "missing": why}
    histogram = merged_histogram(before["histogram"], added["histogram"])
    records = before["records"] + added["records"]
    total = before["tokens"]["total"] + added["tokens"]["total"]
    after = {"records": records, "histogram": histogram,
             "tokens": {"total": total, "mean": round(total / records, 2) if records else 0.0,
                        "min": min(before["tokens"]["min"], added["tokens"]["min"]),
                        "max": max(before["tokens"]["max"], added["tokens"]["max"])},
             "approximate": HISTOGRAM_PERCENTILES}
    # a bin's upper edge can lie past the longest record: the exact max bounds every percentile
    after["tokens"].update({k: min(v, after["tokens"]["max"]) for k, v in histogram_percentiles(histogram).items()})
    return {"before": before, "added": added, "after": after}


def _counts_by(earlier_figures: dict | None, earlier_plain: dict, added: dict, removed: dict) -> dict:
    """{name: before, added, removed, after}; `before` from the earlier version section where there is one."""
    before = {k: v["after"] for k, v in (earlier_figures or {}).items()} if earlier_figures else earlier_plain
    names = sorted({*before, *added, *removed})
    return {n: {"before": before.get(n, 0), "added": added.get(n, 0), "removed": removed.get(n, 0),
                "after": before.get(n, 0) + added.get(n, 0)} for n in names}


def _langs(report: dict | None) -> dict:
    groups = ((report or {}).get("lengths") or {}).get("groups", {})
    return {k.split(":", 1)[1]: g["records"] for k, g in groups.items() if k.startswith("lang:")}


def plan_brief(plan: dict | None) -> dict | None:
    """The figures of a GPU plan the difference shows: the tokens it trains on and the recommended and fastest
    card."""
    if not plan:
        return None
    return {"max_seq_len": plan.get("max_seq_len"), "tokens_per_epoch": plan.get("tokens", {}).get("per_epoch"),
            "sequences_per_epoch": plan.get("tokens", {}).get("sequences_per_epoch"),
            **{k: {f: plan[k].get(f) for f in PLAN_PICK} if plan.get(k) else None
               for k in ("recommendation", "fastest")}}


def version_section(previous: dict, earlier: dict | None, report: dict, max_seq_len: int | None,
                    plan_after: dict | None, plan_note: str, packing_after: dict | None = None) -> dict:
    """The difference between the earlier version (`previous`: its manifest with "location"; `earlier`: its
    version_basis.json, None where it cannot be read) and this one (`report`: this run's, without this section)."""
    earlier_counts = {k: v for k, v in (previous.get("counts") or {}).items() if k != "added"}
    added = report["counts"]["kept"]
    removed = report["counts"]["dropped"].get("earlier_duplicate", 0)
    files_added = {n: f["kept"] for n, f in report["files"].items()}
    files_removed = {n: f.get("dropped", {}).get("earlier_duplicate", 0) for n, f in report["files"].items()}
    against = report["stages"].get("against", {})
    earlier_files = {n: f["kept"] for n, f in ((earlier or {}).get("files") or {}).items()}
    section = {
        "previous": {"run_id": previous["run_id"], "location": previous["location"],
                     "report": BASIS_FILE if earlier else None},
        "records": {"before": earlier_counts.get("kept", 0), "added": added, "removed": removed,
                    "after": earlier_counts.get("kept", 0) + added},
        "by_file": _counts_by((earlier or {}).get("version", {}).get("by_file"), earlier_files,
                              files_added, files_removed),
        # by_lang: the records the lengths step measured (none without it); removed: the against filter's count
        "by_lang": _counts_by((earlier or {}).get("version", {}).get("by_lang"), _langs(earlier), _langs(report),
                              against.get("counters", {}).get("removed_by_lang", {})),
        "lengths": lengths_diff(earlier, report),
        "max_seq_len": {"before": previous.get("max_seq_len"), "after": max_seq_len},
        "plan": {"before": plan_brief((earlier or {}).get("plan")), "after": plan_brief(plan_after),
                 "approximate": plan_note},
        "packing": {"after": packing_after},
    }
    if not earlier:
        section["previous"]["missing"] = (f"the earlier {BASIS_FILE} cannot be read (a version written before "
                                          "prepare wrote one, or a file other than its manifest lists): per file, "
                                          "language, length and plan figures before are unknown; records before "
                                          "are the earlier manifest's")
    return section


def version_markdown(section: dict) -> list[str]:
    r, m = section["records"], section["max_seq_len"]
    out = ["## Version", "", f"Appended to {section['previous']['run_id']} at {section['previous']['location']}.", "",
           "| records | before | added | removed (earlier_duplicate) | after |", "|---|---:|---:|---:|---:|",
           f"| all | {r['before']} | {r['added']} | {r['removed']} | {r['after']} |"]
    for kind in ("by_file", "by_lang"):
        for name, c in section[kind].items():
            out.append(f"| {kind[3:]} {name} | {c['before']} | {c['added']} | {c['removed']} | {c['after']} |")
    lengths = section["lengths"]
    out += ["", f"max_seq_len: {m['before']} -> {m['after']}"]
    if lengths.get("after"):
        b, a = lengths["before"]["tokens"], lengths["after"]["tokens"]
        out.append(f"tokens per record (p50 / p99 / max): {b['p50']} / {b['p99']} / {b['max']} -> "
                   f"{a['p50']} / {a['p99']} / {a['max']} (after: approximate, {HISTOGRAM_PERCENTILES})")
    else:
        out.append(f"token lengths: {lengths.get('missing')}")
    plan = section["plan"]
    for when in ("before", "after"):
        rec = (plan[when] or {}).get("recommendation")
        out.append(f"GPU plan {when}: " + (f"{rec['gpu']} x{rec['count']}, {rec['hours']} h, {rec['cost_text']}"
                                            if rec else "none"))
    if plan.get("approximate"):
        out.append(f"(plan after: {plan['approximate']})")
    return out + [""]
