"""What a run writes is readable by whoever reads its shards, and data in file names is shown, not run."""
import stat

from pipeline.runner import run_prepare

from conftest import fast_config


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_manifest_and_reports_have_the_shards_mode(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.jsonl").write_text("".join(f'{{"text": "document number {i} with enough words in it"}}\n'
                                         for i in range(20)))
    result = run_prepare(fast_config(tmp_path, [src]), progress=False)
    shard = next((result.run_dir / "train").glob("part-*.parquet"))
    for name in ("manifest.json", "report.json", "report.md"):
        assert _mode(result.run_dir / name) == _mode(shard), name


def test_html_in_a_file_name_is_escaped_in_report_md(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "<img src=x onerror=alert(1)>.jsonl").write_text(
        "".join(f'{{"text": "document number {i} with enough words in it"}}\n' for i in range(5)))
    result = run_prepare(fast_config(tmp_path, [src]), progress=False)
    md = (result.run_dir / "report.md").read_text()
    assert "<img" not in md
    assert "&lt;img src=x onerror=alert(1)&gt;.jsonl" in md
