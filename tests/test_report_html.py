"""report.html: one self-contained page per run (and for `precheck --html`), built from report.json, opened in a
real headless Chromium; listed in the manifest, uploaded with the shards, linked from the Prefect artifacts."""
import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pipeline.config import PrepareConfig
from pipeline.report_html import SECTION_IDS, render_html
from pipeline.runner import run_prepare
from pipeline.schemas import validate
from pipeline.shards import sha256_file

from conftest import ROOT, fast_config
from test_no_pii_leak import PLANTED, write_inputs

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
    assert manifest["reports"] == [{"path": "report.html", "bytes": path.stat().st_size, "sha256": sha256_file(path)}]
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


# ------------------------------------------------------------------------------------------------ Prefect

def test_the_flow_links_report_html_from_its_artifacts(prefect_api, tmp_path):
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from flows.prepare import prepare

    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a.jsonl").write_text("".join(json.dumps({"instruction": f"q {i} please", "output": f"answer {i} ok"})
                                            + "\n" for i in range(5)))
    out = prepare(fast_config(tmp_path, [inputs]))
    html = (Path(out["run_dir"]) / "report.html").resolve().as_uri()

    async def read(key):
        async with get_client() as client:
            return await client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))

    links = asyncio.run(read("prepare-report-html"))
    assert any(html in str(a.data) for a in links), [a.data for a in links]
    assert any(html in str(a.data) for a in asyncio.run(read("prepare-report")))


def test_the_stratified_split_is_a_table_of_the_splits_section(html_run):
    _, result = html_run
    report = json.loads((result.run_dir / "report.json").read_text())
    assert report["split"]["method"] == "stratified_by_language"
    page = Page((result.run_dir / "report.html").read_text(encoding="utf-8"))
    assert "table-split-languages" in page.ids and "extra-split" not in page.ids
    words = " ".join(page.text)
    assert "Validation stratified by language" in words and "stratified_by_language" not in words
