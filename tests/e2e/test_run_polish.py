"""What `prepare run` says and writes beside the shards: file counts, quarantine files, stage times, the
memory of reading work files back."""
import json
import time

import pyarrow.parquet as pq
from conftest import fast_config

from pipeline.runner import run_prepare


def docs(n: int, start: int = 0) -> str:
    return "".join(json.dumps({"text": f"document number {i} with enough distinct words in it, {i * 7919}"}) + "\n"
                   for i in range(start, start + n))


def test_the_input_count_counts_files_not_shards(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "big.jsonl").write_text(docs(400))
    (src / "small.jsonl").write_text(docs(3, 1000))
    cfg = fast_config(tmp_path, [src])
    cfg.read.shard_bytes = 4096  # big.jsonl is read as several byte-range shards
    seen: list[str] = []
    run_prepare(cfg, progress=False, log=seen.append)
    line = next(m for m in seen if " input file(s)" in m)
    assert line.startswith("prepare: 2 input file(s) in ") and " shards -> " in line, line
    shards = int(line.split(" in ")[1].split()[0])
    assert shards > 2


def test_no_empty_quarantine_files(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "a_clean.jsonl").write_text(docs(5))
    (src / "b_broken.jsonl").write_text(docs(5, 100) + "{not json\n")
    cfg = fast_config(tmp_path, [src], read={"files_per_shard": 1})  # a clean shard and a broken one
    for _ in range(2):  # the second run reuses the finished shards and still writes no empty file
        result = run_prepare(cfg, progress=False)
        files = sorted((result.run_dir / "quarantine").glob("*.jsonl"))
        assert [f.name for f in files] == ["00001.jsonl"]
        assert [json.loads(line)["reason"] for line in files[0].read_text().splitlines()] == ["invalid_json"]
    # a rerun after the broken line was fixed leaves no quarantine file behind
    (src / "b_broken.jsonl").write_text(docs(5, 100))
    result = run_prepare(cfg, progress=False)
    assert not list((result.run_dir / "quarantine").glob("*.jsonl")) and result.report["counts"]["quarantined"] == 0


def test_the_read_stage_is_timed(tmp_path, monkeypatch):
    """The read stage's time is the reading itself: the reader's generator ran outside the stage's timer, so
    `read` showed 0.00 s whatever the input. A reader that takes 0.1 s per batch must show at least that."""
    from pipeline.data import readers

    real = readers.FileReader.batches

    def slow(self):
        for batch in real(self):
            time.sleep(0.1)
            yield batch

    monkeypatch.setattr(readers.FileReader, "batches", slow)
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.jsonl").write_text(docs(30))
    cfg = fast_config(tmp_path, [src])
    cfg.read.batch_size = 10  # three batches: at least 0.3 s of reading
    rep = run_prepare(cfg, progress=False).report
    assert rep["stages"]["read"]["seconds"] >= 0.3, rep["stages"]["read"]
    assert rep["stages"]["normalize"]["seconds"] < rep["stages"]["read"]["seconds"]


def test_work_files_are_read_back_without_pre_buffering(tmp_path, monkeypatch):
    """pyarrow's pre_buffer (on by default) loads a whole row group's column chunks before decoding: for a work
    file that is one more batch in memory per worker (bench figure in the commit). Every work file the run reads
    back batch by batch is opened with pre_buffer=False."""
    opened = []
    real = pq.ParquetFile

    class Spy(real):
        def __init__(self, source, **kwargs):
            opened.append((str(source), kwargs.get("pre_buffer", True)))
            super().__init__(source, **kwargs)

    monkeypatch.setattr(pq, "ParquetFile", Spy)
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.jsonl").write_text(docs(20))
    run_prepare(fast_config(tmp_path, [src]), progress=False)
    work = [(path, pre) for path, pre in opened if "/work/" in path]
    assert {p.split("/work/")[1].split("/")[0] for p, _ in work} == {"normalized", "keys", "processed"}
    assert all(pre is False for _, pre in work), work



def test_the_token_bench_corpus_is_in_the_record_form():
    """bench/tokens built tool calls the old way ({"name", "arguments": "<JSON string>"}, no tools): its figures
    were taken on records the pipeline no longer writes. Its records are valid records, tools included."""
    import sys

    from conftest import ROOT

    from pipeline.core.records import template_inputs
    from pipeline.core.schemas import validate

    sys.path.insert(0, str(ROOT / "bench" / "tokens"))
    try:
        from corpus import make_records
    finally:
        sys.path.remove(str(ROOT / "bench" / "tokens"))
    with_tools = [r for r in make_records(2000) if r["tools"]]
    assert with_tools
    for rec in with_tools[:50]:
        validate({**rec, "id": "0" * 32}, "record")  # the bench's ids are short labels, not content hashes
        messages, tools = template_inputs(rec)
        call = next(m for m in messages if m.get("tool_calls"))["tool_calls"][0]
        assert call["type"] == "function" and isinstance(call["function"]["arguments"], dict)
        assert tools and tools[0]["function"]["name"] == call["function"]["name"]
