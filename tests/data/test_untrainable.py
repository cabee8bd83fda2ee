"""Records that cannot train at the max length (lengths.untrained) and plain-text chunking (lengths.text_chunking),
through `prepare run` and `prepare precheck`: both say the same thing, and every record is accounted for."""
import json
import random

import pyarrow.parquet as pq
import pytest
from conftest import PEER_FORMATS, prepare_in_process

pytestmark = pytest.mark.slow  # whole runs through the CLI's main(), in this process

WORDS = ("kargo fatura iade şifre sipariş teslimat invoice refund parcel courier account upgrade coupon receipt "
         "ticket status warehouse payment address delivery order return label box tracking").split()


def prepare(*args, cwd):
    return prepare_in_process(*args, cwd=cwd)


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def shard_ids(run_dir) -> set[str]:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    return {i for s in manifest["shards"] for i in pq.read_table(run_dir / s["path"], columns=["id"])["id"].to_pylist()}


def line_with(text: str, prefix: str) -> str:
    return next((line for line in text.splitlines() if line.startswith(prefix)), "")


@pytest.fixture
def long_prompts(tmp_path):
    """3 instructions whose prompt alone passes max_seq_len 96 (their answers lie past it), 17 that fit."""
    rng = random.Random(2)
    rows = [{"instruction": " ".join(rng.choice(WORDS) for _ in range(120)) + f" {i}",
             "output": f"Short answer number {i}."} for i in range(3)]
    rows += [{"instruction": " ".join(rng.choice(WORDS) for _ in range(8)) + f" {i}",
              "output": f"Short answer number {i}."} for i in range(3, 20)]
    data = write_jsonl(tmp_path / "in.jsonl", rows)
    (tmp_path / "cfg.json").write_text(json.dumps({"lengths": {"max_seq_len": 96}, "dedup": {"enabled": False}}))
    return data, tmp_path / "cfg.json"


def test_untrainable_records_are_dropped_counted_and_named_by_default(tmp_path, long_prompts):
    data, cfg = long_prompts
    run = prepare("run", str(data), "--config", str(cfg), "--out", str(tmp_path / "run"), "--workers", "1",
                  "--no-pii", "--no-estimate", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    counts, untrained = report["counts"], report["lengths"]["untrained"]
    assert counts["dropped"] == {"untrained": 3} and counts["kept"] == 17
    assert counts["input"] == counts["kept"] + counts["quarantined"] + sum(counts["dropped"].values())
    assert untrained["records"] == 3 and untrained["policy"] == "drop" and len(untrained["example_ids"]) == 3
    assert not shard_ids(tmp_path / "run") & set(untrained["example_ids"])
    assert report["files"]["in.jsonl"]["dropped"] == {"untrained": 3}
    run_line = line_with(run.stdout, "untrained:")
    assert "untrained: 3 chat/instruction record(s)" in run_line and "dropped (lengths.untrained: drop)" in run_line

    check = prepare("precheck", str(data), "--config", str(cfg), cwd=tmp_path)
    assert check.returncode == 0, check.stderr[-2000:]
    assert line_with(check.stdout, "untrained:") == run_line  # the same count and policy line as the run
    as_json = prepare("precheck", str(data), "--config", str(cfg), "--json", cwd=tmp_path)
    assert json.loads(as_json.stdout)["untrained"] == untrained


def test_untrainable_records_fail_the_run_only_when_asked(tmp_path, long_prompts):
    """(Merged with test_run_wiring's copy of this test: the same input, config and three runs.)"""
    data, cfg = long_prompts
    common = [str(data), "--config", str(cfg), "--workers", "1", "--no-pii", "--no-estimate"]
    strict = prepare("run", *common, "--out", str(tmp_path / "strict"), "--strict-untrained", cwd=tmp_path)
    assert strict.returncode == 2
    errors = [line for line in strict.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0].startswith("prepare: error: 3 chat/instruction record(s)"), strict.stderr
    assert "3 chat/instruction record(s) have no trainable token" in errors[0]
    assert "--allow-untrained" in errors[0] and "max_seq_len 96" in errors[0]
    assert "Traceback" not in strict.stderr and not (tmp_path / "strict" / "manifest.json").exists()
    assert not list((tmp_path / "strict").glob("**/part-*.parquet"))  # failed before a shard was written

    kept = prepare("run", *common, "--out", str(tmp_path / "kept"), "--allow-untrained", "--json", cwd=tmp_path)
    assert kept.returncode == 0, kept.stderr[-2000:]
    report = json.loads(kept.stdout)
    untrained = report["lengths"]["untrained"]
    assert report["counts"]["kept"] == 20 and untrained["policy"] == "keep"
    assert untrained["records"] == 3 and len(untrained["example_ids"]) == 3 and untrained["max_seq_len"] == 96
    assert set(untrained["example_ids"]) <= shard_ids(tmp_path / "kept")
    assert "no trainable token after truncation" in (tmp_path / "kept" / "report.md").read_text()

    both = prepare("run", *common, "--out", str(tmp_path / "both"), "--allow-untrained", "--strict-untrained",
                   cwd=tmp_path)
    assert both.returncode == 2 and "not allowed with argument" in both.stderr

    short = write_jsonl(tmp_path / "short.jsonl", [json.loads(line) for line in data.read_text().splitlines()[3:]])
    ok = prepare("run", str(short), *common[1:], "--out", str(tmp_path / "short"), "--json", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["lengths"]["untrained"]["records"] == 0


def test_the_glaive_demo_runs_by_default_and_precheck_says_what_run_does(tmp_path):
    """LLaMA-Factory's glaive_toolcall_en_demo.json: one record's 11k-token prompt leaves nothing to train at
    the max length the tool chooses; `run` used to fail on it by default while `precheck` said nothing."""
    data = str(PEER_FORMATS / "glaive_toolcall_en_demo.json")
    run = prepare("run", data, "--out", str(tmp_path / "run"), "--workers", "1", "--no-pii", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    counts = json.loads((tmp_path / "run" / "report.json").read_text())["counts"]
    assert counts["dropped"].get("untrained") == 1
    check = prepare("precheck", data, cwd=tmp_path)
    assert check.returncode == 0, check.stderr[-2000:]
    assert line_with(check.stdout, "untrained:") == line_with(run.stdout, "untrained:") != ""


def test_wiki_documents_are_chunked_to_a_sane_max_length(tmp_path):
    """LLaMA-Factory's wiki_demo.txt (30 documents up to ~30k tokens): the max length used to be chosen from
    whole documents (30,336, a B200 plan); now documents longer than it are cut into chunks, one row each,
    counted, and the length and plan follow what the trainer will see."""
    data = str(PEER_FORMATS / "wiki_demo.txt")
    check = prepare("precheck", data, "--json", cwd=tmp_path)
    assert check.returncode == 0, check.stderr[-2000:]
    pre = json.loads(check.stdout)
    assert pre["max_seq_len"] <= 2048 and pre["tokens"]["chunking"]["records"] > 0
    assert pre["memory"]["peak_allocated_gib"] < 24  # qlora 8B at 2k fits a 24 GB card

    run = prepare("run", data, "--out", str(tmp_path / "run"), "--workers", "1", "--no-pii", "--no-dedup",
                  "--json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout)
    counts, chunking = report["counts"], report["lengths"]["chunking"]
    assert report["lengths"]["max_seq_len"] == pre["max_seq_len"]
    assert counts["input"] == counts["kept"] == 30 and not counts["dropped"]
    assert chunking["records"] == pre["tokens"]["chunking"]["records"] and not chunking["estimated"]
    assert counts["rows"] == 30 - chunking["records"] + chunking["chunks"]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    rows = [r for s in manifest["shards"] for r in pq.read_table(tmp_path / "run" / s["path"]).to_pylist()]
    chunks = [r for r in rows if "chunk" in json.loads(r["meta"])]
    assert len(chunks) == chunking["chunks"] and len({r["id"] for r in rows}) == len(rows)
    parents = {json.loads(r["meta"])["chunk"]["parent"] for r in chunks}
    assert len(parents) == chunking["records"] and all(r["source"]["file"] == "wiki_demo.txt" for r in chunks)
