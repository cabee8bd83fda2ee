"""What a run writes is readable by whoever reads its shards, and data in file names is shown, not run."""
import stat

from conftest import fast_config

from pipeline.runner import run_prepare


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


def test_split_by_kind_writes_chat_and_text_shard_sets(tmp_path):
    """Chat and plain-text rows in one shard have null in each other's columns (trl takes `messages` or `text`,
    not a mix). write.split_by_kind writes <split>/chat/ and <split>/text/, listed in the manifest; a rerun
    without it removes them."""
    import json

    import pyarrow.parquet as pq

    from pipeline.core.schemas import validate

    src = tmp_path / "in"
    src.mkdir()
    (src / "docs.jsonl").write_text("".join(f'{{"text": "document number {i} with enough words in it, {i * 7919}"}}\n'
                                            for i in range(30)))
    (src / "chat.jsonl").write_text("".join(json.dumps({"messages": [
        {"role": "user", "content": f"question {i} about topic {i * 31} and more"},
        {"role": "assistant", "content": f"answer {i} with details number {i * 7919}"}]}) + "\n" for i in range(30)))
    cfg = fast_config(tmp_path, [src])
    cfg.write.split_by_kind = True
    cfg.split.validation_fraction = 0.2
    result = run_prepare(cfg, progress=False)
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    validate(manifest, "manifest")
    sets = {(s["split"], s["kind"]) for s in manifest["shards"]}
    assert sets == {("train", "chat"), ("train", "text"), ("validation", "chat"), ("validation", "text")}
    for shard in manifest["shards"]:
        assert shard["path"].startswith(f"{shard['split']}/{shard['kind']}/part-")
        table = pq.read_table(result.run_dir / shard["path"])
        column = "text" if shard["kind"] == "text" else "messages"
        other = "messages" if shard["kind"] == "text" else "text"
        assert table.column(column).null_count == 0 and table.column(other).null_count == table.num_rows
    assert sum(s["rows"] for s in manifest["shards"]) == result.report["counts"]["kept"]

    cfg.write.split_by_kind = False
    again = run_prepare(cfg, progress=False)
    assert not list(again.run_dir.glob("*/*/part-*.parquet"))  # the shard sets of the first run are gone
    assert all("kind" not in s for s in json.loads((again.run_dir / "manifest.json").read_text())["shards"])


def test_line_of_a_json_array_record_is_its_position_and_documented(tmp_path):
    """`line` of a record from a .json array is its position in the array, not a line of the file: the record
    schema and docs/run-directory.md say so."""
    import json

    from conftest import ROOT

    src = tmp_path / "in"
    src.mkdir()
    items = [{"text": f"document number {i} with enough words in it, {i * 7919}"} for i in range(3)]
    (src / "a.json").write_text(json.dumps(items, indent=2))  # many lines per record
    result = run_prepare(fast_config(tmp_path, [src]), progress=False)
    import pyarrow.parquet as pq

    lines = sorted(r["source"]["line"] for p in result.run_dir.glob("*/part-*.parquet")
                   for r in pq.read_table(p).to_pylist())
    assert lines == [1, 2, 3]
    schema = json.loads((ROOT / "schemas" / "record.schema.json").read_text())
    described = schema["properties"]["source"]["properties"]["line"]["description"]
    assert "position of the record in the array" in described and "not a line of the file" in described
    readme = " ".join((ROOT / "docs" / "run-directory.md").read_text().split())
    assert "in a `.json` file the 1-based position of the record in the array" in readme
