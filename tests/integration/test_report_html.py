"""report.html: one self-contained page per run (and for `precheck --html`), built from report.json, opened in a
real headless Chromium; listed in the manifest, uploaded with the shards, linked from the Prefect artifacts."""
import html
import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import ROOT, fast_config
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_no_pii_leak import PLANTED, write_inputs

from pipeline.core.config import PrepareConfig
from pipeline.core.files import sha256_file
from pipeline.core.schemas import validate
from pipeline.report.html import render_html
from pipeline.report.html.page import SECTION_IDS, svg_memory, text_width
from pipeline.runner import run_prepare

pytestmark = pytest.mark.integration

HOSTILE = '<b>x & "q" <img src=y onerror=z>.jsonl'   # a file name holding markup


class Page(HTMLParser):
    """Elements by tag, ids, and every attribute that loads something."""

    def __init__(self, text: str):
        super().__init__()
        self.tags: dict[str, int] = {}
        self.ids: set[str] = set()
        self.refs: list[tuple[str, str, str]] = []
        self.rects: dict[str, int] = {}     # svg id -> rect.bar count
        self._svg: list[str] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if "id" in a:
            self.ids.add(a["id"])
        for name in ("src", "href", "xlink:href", "srcset", "data", "action"):
            if name in a:
                self.refs.append((tag, name, a[name]))
        if tag == "svg":
            self._svg.append(a.get("id", ""))
        if tag == "rect" and "bar" in (a.get("class") or "").split() and self._svg:
            self.rects[self._svg[-1]] = self.rects.get(self._svg[-1], 0) + 1

    def handle_endtag(self, tag):
        if tag == "svg" and self._svg:
            self._svg.pop()

    def handle_data(self, data):
        self.text.append(data)


@pytest.fixture(scope="module")
def html_run(tmp_path_factory, s3_endpoint):
    """A real run with every stage on over planted personal data, a duplicate, a broken line and a file whose
    name holds markup, uploaded to the local S3 server."""
    import boto3

    root = tmp_path_factory.mktemp("html")
    inputs = write_inputs(root / "in")
    rows = [{"instruction": f"Soru {i}: kargo ne zaman gelir, sipariş {i * 7}?",
             "output": "Siparişiniz iki iş günü içinde teslim edilir; takip numarası SMS ile gelir. " * (1 + i % 6)}
            for i in range(30)]
    rows.append(rows[0])  # an exact duplicate
    (inputs / HOSTILE).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows) + "{broken\n",
                                  encoding="utf-8")
    boto3.client("s3").create_bucket(Bucket="html")
    cfg = PrepareConfig(inputs=[str(inputs)], out=str(root / "run"), workers=1, s3="s3://html/ds")
    cfg.clean.min_chars = 1
    return cfg, run_prepare(cfg, progress=False)


def test_the_run_writes_report_html_lists_it_in_the_manifest_and_uploads_it(html_run):
    import boto3

    cfg, result = html_run
    path = result.run_dir / "report.html"
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    validate(manifest, "manifest")
    assert manifest["reports"][0] == {"path": "report.html", "bytes": path.stat().st_size, "sha256": sha256_file(path)}
    remote = boto3.client("s3").get_object(Bucket="html", Key="ds/report.html")["Body"].read()
    assert remote == path.read_bytes()


def test_the_page_has_every_section_and_charts_and_loads_nothing(html_run):
    _, result = html_run
    text = (result.run_dir / "report.html").read_text(encoding="utf-8")
    page = Page(text)
    assert set(SECTION_IDS) <= page.ids
    assert {"chart-reasons", "chart-files", "chart-lengths", "chart-lengths-cut", "chart-memory", "chart-gpus",
            "chart-pii", "chart-dedup", "table-gpus", "table-tradeoff"} <= page.ids
    for chart in ("chart-reasons", "chart-files", "chart-lengths", "chart-memory", "chart-gpus", "chart-pii"):
        assert page.rects.get(chart, 0) >= 2, chart
    # self-contained: no script at all, no stylesheet link, and every href an anchor on the page itself
    assert page.tags.get("script", 0) == 0 and page.tags.get("link", 0) == 0 and page.tags.get("img", 0) == 0
    assert page.refs and all(attr == "href" and value.startswith("#") and value[1:] in page.ids
                             for _, attr, value in page.refs), page.refs
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "") and "https://" not in text
    # the report's figures are on the page
    report = json.loads((result.run_dir / "report.json").read_text())
    words = " ".join(page.text)
    assert f"max_seq_len {report['lengths']['max_seq_len']:,}" in words
    assert report["plan"]["recommendation"]["gpu"] in words
    assert f"input {report['counts']['input']:,} = kept {report['counts']['kept']:,}" in words


def test_file_names_are_escaped_and_no_personal_data_is_on_the_page(html_run):
    _, result = html_run
    text = (result.run_dir / "report.html").read_text(encoding="utf-8")
    page = Page(text)
    assert page.tags.get("b", 0) == 0 and page.tags.get("img", 0) == 0   # the name's markup is not markup
    assert any(HOSTILE in t for t in page.text)                          # but its text is shown
    for name, value in PLANTED.items():
        compact = value.replace(" ", "").replace("-", "")
        assert value not in text and compact not in text.replace(" ", "").replace("-", ""), name


def test_an_unchanged_rerun_writes_the_same_page_and_uploads_nothing(html_run):
    cfg, first = html_run
    before = (first.run_dir / "report.html").read_bytes()
    second = run_prepare(cfg, progress=False)
    assert (second.run_dir / "report.html").read_bytes() == before
    assert second.upload["uploaded"] == [] and "report.html" in second.upload["skipped"]


def test_unknown_report_sections_get_a_section_of_their_own_escaped():
    page = Page(render_html({"toxicity": {"note": "<script>x</script>"}}))
    assert "extra-toxicity" in page.ids and page.tags.get("script", 0) == 0
    assert set(SECTION_IDS) <= page.ids   # a report without the usual sections still has their ids


def test_a_run_with_the_slow_stages_off_still_gets_a_page(tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a.jsonl").write_text("".join(json.dumps({"instruction": f"q {i} please", "output": f"answer {i} ok"})
                                            + "\n" for i in range(5)))
    result = run_prepare(fast_config(tmp_path, [inputs]), progress=False)
    page = Page((result.run_dir / "report.html").read_text(encoding="utf-8"))
    assert set(SECTION_IDS) <= page.ids and page.rects.get("chart-splits", 0) >= 1


def test_precheck_html_writes_the_same_kind_of_page(tmp_path, capsys):
    from pipeline.cli import main

    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a.jsonl").write_text("".join(json.dumps({"instruction": f"question number {i}?",
                                                        "output": "an answer " * (i + 1)}) + "\n" for i in range(40)))
    out = tmp_path / "pre.html"
    assert main(["precheck", str(inputs), "--html", str(out)]) == 0
    page = Page(out.read_text(encoding="utf-8"))
    assert set(SECTION_IDS) <= page.ids
    assert page.rects.get("chart-lengths", 0) >= 2 and page.rects.get("chart-gpus", 0) >= 2
    words = " ".join(page.text)
    assert "Prepare precheck report" in words
    assert "does not look for personal data" in words and "exact duplicates not counted" in words
    assert page.tags.get("script", 0) == 0


def test_the_untrained_record_count_is_on_the_page():
    report = {"lengths": {"max_seq_len": 2048, "untrained": {"records": 1234, "max_seq_len": 2048,
                                                             "example_ids": ["ab12", "cd34"], "policy": "drop"}}}
    page = Page(render_html(report))
    assert "untrained" in page.ids
    words = " ".join(page.text)
    assert "no trainable token after truncation at max_seq_len 2,048: 1,234" in words and "ab12" in words
    assert "dropped (lengths.untrained: drop)" in words


# The memory chart's GPU labels: each (x, y, text, anchor) after its dashed line (x, top, bottom), as drawn
_USABLE = re.compile(r'<line class="usable" x1="([\d.]+)" y1="([-\d.]+)" x2="[\d.]+" y2="([\d.]+)">.*?</line>'
                     r"<text([^>]*)>([^<]*)</text>")


def _memory_labels(svg: str) -> tuple[list, list]:
    lines, boxes = [], []
    for x, top, bottom, attrs, text in _USABLE.findall(svg):
        a = dict(re.findall(r'([\w-]+)="([^"]*)"', attrs))
        w = text_width(html.unescape(text))
        left = float(a["x"]) - w if a.get("text-anchor") == "end" else float(a["x"])
        lines.append((float(x), float(top), float(bottom)))
        boxes.append((left, float(a["y"]) - 11, left + w, float(a["y"]) + 3))
    return lines, boxes


def _collisions(lines: list, boxes: list) -> list:
    """Labels that overlap, and dashed lines that cross a label."""
    found = [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]
             if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]]
    found += [(line, box) for line in lines for box in boxes
              if box[0] <= line[0] <= box[2] and line[1] < box[3] and line[2] > box[1]]
    return found


CATALOG_USABLE = [("L4", 20.2), ("RTX 4090", 21.6), ("A40", 40.5), ("L40S", 40.5), ("RTX PRO 6000", 86.0),
                  ("A100", 72.0), ("H100", 71.7), ("H200", 126.4), ("B200", 161.2)]
GPU_NAMES = ["L4", "RTX 4090", "A40", "L40S", "A100 80GB x2", "H100 x8", "RTX PRO 6000", "MI300X", "H200", "B200"]


@settings(max_examples=200, deadline=None)
@example(gpus=CATALOG_USABLE, need=55.3)   # the sample data's plan: L4's label was crossed by RTX 4090's line
@given(gpus=st.lists(st.tuples(st.sampled_from(GPU_NAMES), st.floats(8, 200)), min_size=1, max_size=10),
       need=st.floats(4, 150))
def test_gpu_labels_of_the_memory_chart_never_touch_a_label_or_a_line(gpus, need):
    svg = svg_memory({"weights": need * 0.8, "activations": need * 0.2}, 1, gpus, ("H100 x1", 4, need),
                     "chart-memory")
    lines, boxes = _memory_labels(svg)
    assert boxes   # the GPUs on the axis are labelled (at least the smallest that holds the need)
    assert not _collisions(lines, boxes)
    width = float(re.search(r'viewBox="0 0 ([\d.]+)', svg).group(1))
    assert all(0 <= box[0] and box[2] <= width for box in boxes)   # inside the picture


# ---------------------------------------------------------------------------------------------- the browser

@pytest.fixture(scope="session")
def chromium():
    """Debian's chromium, installed with tests/install_chromium.sh where it is missing."""
    binary = shutil.which("chromium")
    if binary is None:
        proc = subprocess.run(["sh", str(ROOT / "tests" / "install_chromium.sh")], capture_output=True, text=True,
                              timeout=1800)
        binary = shutil.which("chromium")
        if binary is None:
            pytest.skip(f"chromium cannot be installed here: {(proc.stderr or proc.stdout).strip()[-300:]}")
    return binary


def _chromium(binary: str, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    # --no-sandbox: the sandbox needs user namespaces, which containers (and root) often lack
    return subprocess.run([binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--user-data-dir={tmp / 'profile'}", "--no-first-run", *args],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp)})


def test_report_html_renders_in_headless_chromium(html_run, chromium, tmp_path):
    from PIL import Image

    _, result = html_run
    url = (result.run_dir / "report.html").resolve().as_uri()
    dom = _chromium(chromium, tmp_path, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-500:]
    page = Page(dom.stdout)   # the DOM Chromium built from the file
    assert set(SECTION_IDS) <= page.ids
    for chart in ("chart-lengths", "chart-memory", "chart-gpus", "chart-reasons"):
        assert page.rects.get(chart, 0) >= 2, chart

    shot = tmp_path / "report.png"
    proc = _chromium(chromium, tmp_path, f"--screenshot={shot}", "--window-size=1100,9000", url)
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-500:]
    image = Image.open(shot).convert("RGB")
    colors = dict((rgb, n) for n, rgb in image.getcolors(maxcolors=1 << 20))
    assert len(colors) > 50                             # not a blank page
    assert colors.get((0x2E, 0x86, 0xC1), 0) > 2000      # the blue bars (histogram, splits, GPU costs) painted
    assert colors.get((0x27, 0xAE, 0x60), 0) > 500       # the green ones (kept records, the recommended GPU)
    assert colors.get((0xC0, 0x39, 0x2B), 0) > 200       # red: drops, personal data, the max_seq_len cut


# Measures the page as laid out (added to a copy only: the page itself holds no script) into <pre id="metrics">
_MEASURE = """<script>
const box = el => el.getBoundingClientRect();
const contentRight = s => box(s).right - parseFloat(getComputedStyle(s).paddingRight);
const out = {pageWidth: document.documentElement.scrollWidth, windowWidth: window.innerWidth, tables: {},
             labels: [], lines: []};
document.querySelectorAll("table").forEach((t, i) => {
  const scroller = t.parentElement, section = t.closest("section");
  out.tables[t.id || "table-" + i] = {table: box(t).width, box: scroller.clientWidth, scrolls:
    getComputedStyle(scroller).overflowX, boxRight: box(scroller).right, sectionRight: contentRight(section)};
});
document.querySelectorAll("#chart-memory text.gpu-label").forEach(t => {
  const b = t.getBBox(); out.labels.push([b.x, b.y, b.x + b.width, b.y + b.height]);
});
document.querySelectorAll("#chart-memory line.usable").forEach(l => {
  out.lines.push([l.x1.baseVal.value, l.y1.baseVal.value, l.y2.baseVal.value]);
});
const pre = document.createElement("pre"); pre.id = "metrics"; pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>"""


def _measure(chromium: str, tmp: Path, page: Path, width: int) -> dict:
    measured = tmp / f"measured-{width}.html"
    measured.write_text(page.read_text(encoding="utf-8").replace("</main>", "</main>" + _MEASURE), encoding="utf-8")
    dom = _chromium(chromium, tmp, f"--window-size={width},3000", "--dump-dom", measured.resolve().as_uri())
    assert dom.returncode == 0, dom.stderr[-500:]
    return json.loads(html.unescape(re.search(r'<pre id="metrics">(.*?)</pre>', dom.stdout, re.S).group(1)))


def test_tables_fit_or_scroll_in_their_own_box_and_chart_labels_do_not_collide(html_run, chromium, tmp_path):
    """At 1,100 px the files tables fit (long names wrap), at 600 px the widest table scrolls inside its own
    box; no table reaches past its section and the page never scrolls sideways. The memory chart's GPU labels,
    measured in the browser's own fonts, touch neither each other nor another GPU's line."""
    _, result = html_run
    report = json.loads((result.run_dir / "report.json").read_text())
    wide = "exports/2024-q3/customer-support/conversations_tr_windows1254_export_final_version_2_fixed.jsonl.gz"
    entry = next(iter(report["files"].values()))
    report["files"][wide] = {**entry, "encoding": "cp1254", "truncated": True, "dropped": {
        "exact_duplicate": 1234, "near_duplicate": 567, "too_short": 89},
        "warnings": ["the gz stream ends early (truncated or corrupt); the rows before the cut were read",
                     "3 column(s) with a name already used in the file kept, renamed with a .1, .2, ... suffix"]}
    plan = report["plan"]   # the GPUs of the catalog on the memory chart, crowded as for the sample data
    plan["candidates"] = [{**plan["candidates"][0], "gpu": name, "count": 1, "usable_gib": usable}
                          for name, usable in CATALOG_USABLE]
    plan["recommendation"] = {**plan["recommendation"], "vram_need_gib": 55.3}
    page = tmp_path / "report.html"
    page.write_text(render_html(report), encoding="utf-8")

    wide_view = _measure(chromium, tmp_path, page, 1100)
    for tid in ("table-files", "table-file-notes"):
        t = wide_view["tables"][tid]
        assert t["table"] <= t["box"] + 1, (tid, t)
    narrow = _measure(chromium, tmp_path, page, 600)
    groups = narrow["tables"]["table-length-groups"]
    assert groups["table"] > groups["box"] and groups["scrolls"] == "auto", groups
    for view in (wide_view, narrow):
        assert view["pageWidth"] <= view["windowWidth"], view["pageWidth"]
        for tid, t in view["tables"].items():
            assert t["boxRight"] <= t["sectionRight"] + 1, (tid, t)

    labels, lines = wide_view["labels"], wide_view["lines"]
    assert len(labels) == len(lines) == 6, labels   # H200 and B200 are beyond the axis
    overlaps = [(a, b) for i, a in enumerate(labels) for b in labels[i + 1:]
                if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]]
    crossed = [(line, label) for line in lines for label in labels
               if label[0] <= line[0] <= label[2] and line[1] < label[3] and line[2] > label[1]]
    assert not overlaps and not crossed, (overlaps, crossed)

    shot = tmp_path / "report.png"   # to look at: PREPARE_SHOT=/some/dir keeps it
    proc = _chromium(chromium, tmp_path, f"--screenshot={shot}", "--window-size=1100,9000", page.resolve().as_uri())
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-500:]
    if os.environ.get("PREPARE_SHOT"):
        shutil.copy(shot, Path(os.environ["PREPARE_SHOT"]) / "report.png")


# (that the flow links report.html from its artifacts: tests/integration/test_flow.py)


def test_the_stratified_split_is_a_table_of_the_splits_section(html_run):
    _, result = html_run
    report = json.loads((result.run_dir / "report.json").read_text())
    assert report["split"]["method"] == "stratified_by_language"
    page = Page((result.run_dir / "report.html").read_text(encoding="utf-8"))
    assert "table-split-languages" in page.ids and "extra-split" not in page.ids
    words = " ".join(page.text)
    assert "Validation stratified by language" in words and "stratified_by_language" not in words
