"""report.html: the run's findings in one self-contained page (inline CSS and inline SVG charts; no script, no
external asset, so it opens offline and from S3 as it is).

Built from report.json only (never from records): the report holds counts, ids and file positions, so the page
holds no personal data either. Every value from the data (file names, reasons, tokenizer names) is escaped.
Timings and cache counters are left out on purpose: the same data and config give the same bytes, so an
unchanged re-run uploads nothing (the S3 upload skips objects whose sha256 matches).

Sections carry stable element ids (page.SECTION_IDS) that tests and links use:
    summary, accounting, splits, stages, languages, quality, lengths, packing, dedup, pii, memory, gpus

page.py holds the scaffold and the building blocks (tables, paragraphs, sections, SVG charts); records.py,
steps.py and plan.py the sections, one function each; this module the entry points (render_html, write_html).
"""
from __future__ import annotations

from pathlib import Path

from pipeline.core.files import atomic_write_text, sha256_file
from pipeline.report.html.page import page
from pipeline.report.html.plan import gpus_section, memory_section
from pipeline.report.html.records import (
    accounting_section,
    languages_section,
    splits_section,
    stages_section,
    summary_section,
)
from pipeline.report.html.steps import (
    dedup_section,
    extra_sections,
    lengths_section,
    packing_section,
    pii_section,
    quality_section,
)
from pipeline.report.html.version import version_section

REPORT_HTML = "report.html"


def render_html(report: dict, title: str = "Prepare run report", note: str | None = None) -> str:
    """The page for a report.json (run) or a precheck report (`precheck` key instead of `counts`)."""
    sections = [summary_section(report, note), accounting_section(report), splits_section(report),
                stages_section(report), languages_section(report), quality_section(report), lengths_section(report),
                packing_section(report), dedup_section(report), pii_section(report), memory_section(report),
                gpus_section(report), version_section(report), extra_sections(report)]
    return page(title, sections)


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
