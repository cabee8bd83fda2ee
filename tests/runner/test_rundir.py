"""The run directory: an --out where a run would destroy or take in files that are not its own is refused
before anything is written, a run deletes only files it wrote, and one run at a time uses a folder."""
import json
import os
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import ROOT, fast_config
from slowshards import slow_shards

from pipeline.core.files import sha256_file
from pipeline.runner import PrepareError, run_prepare
from pipeline.runner.rundir import MARKER


def write_docs(path, n=5, tag="doc"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"text": f"{tag} number {i} with enough words to be kept"}) + "\n"
                            for i in range(n)))
    return path


def snapshot(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def cli(*args, cwd, env=None, wait=True):
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    cmd = [sys.executable, "-m", "pipeline.cli", "run", *args, "--no-pii", "--no-lengths", "--no-estimate"]
    if not wait:
        return subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def assert_one_line_error(proc, *words):
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    err = proc.stderr.strip()
    assert "\n" not in err and "Traceback" not in err and err.startswith("prepare: error: "), err
    for word in words:
        assert word in err, err


def test_out_equal_to_the_input_folder_is_refused_and_the_input_kept(tmp_path):
    d = tmp_path / "d"
    write_docs(d / "train" / "a.jsonl")  # used to be deleted with the rest of train/
    before = snapshot(tmp_path)
    proc = cli(str(d), "--out", str(d), cwd=tmp_path)
    assert_one_line_error(proc, str(d), "one of the inputs")
    assert snapshot(tmp_path) == before


def test_out_holding_an_input_is_refused_even_when_prepare_made_it(tmp_path):
    out = tmp_path / "run"
    run_prepare(fast_config(tmp_path, [write_docs(tmp_path / "in" / "a.jsonl")]), progress=False)
    planted = write_docs(out / "train" / "b.jsonl", tag="kept input")
    before = snapshot(tmp_path)
    with pytest.raises(PrepareError, match="holds an input"):
        run_prepare(fast_config(tmp_path, [planted]), progress=False)
    assert snapshot(tmp_path) == before


def test_out_inside_an_input_folder_is_refused(tmp_path):
    d = tmp_path / "d"
    write_docs(d / "a.jsonl")
    cfg = fast_config(tmp_path, [d])
    cfg.out = str(d / "run")
    with pytest.raises(PrepareError, match="inside an input folder"):
        run_prepare(cfg, progress=False)
    assert not (d / "run").exists()


def test_a_non_empty_folder_not_made_by_prepare_is_refused_untouched(tmp_path):
    out = tmp_path / "mine"
    for name in ("train/part-00000.parquet", "validation/part-00000.parquet", "work/notes.txt",
                 "quarantine/00000.jsonl", "manifest.json", "notes.txt"):
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(f"the user's own {name}\n")
    src = write_docs(tmp_path / "in" / "a.jsonl")
    before = snapshot(out)
    proc = cli(str(src), "--out", str(out), cwd=tmp_path)
    assert_one_line_error(proc, str(out), "not made by prepare")
    assert snapshot(out) == before and not (out / MARKER).exists()


def test_an_empty_out_is_refused_not_taken_as_the_current_folder(tmp_path):
    write_docs(tmp_path / "in" / "a.jsonl")
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "keep.txt").write_text("the user's file\n")
    before = snapshot(tmp_path)
    proc = cli("in", "--out", "", cwd=tmp_path)
    assert_one_line_error(proc, "--out is empty")
    assert snapshot(tmp_path) == before


def test_an_empty_folder_is_adopted_and_marked(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    result = run_prepare(fast_config(tmp_path, [write_docs(tmp_path / "in" / "a.jsonl")]), progress=False)
    assert (out / MARKER).is_file() and result.report["counts"]["kept"] == 5
    again = run_prepare(fast_config(tmp_path, [tmp_path / "in"]), progress=False)  # its own folder: accepted
    assert again.report["counts"]["kept"] == 5


def test_a_rerun_deletes_only_the_files_prepare_wrote(tmp_path):
    src = tmp_path / "in"
    write_docs(src / "a.jsonl")
    with open(write_docs(src / "b.jsonl", tag="other"), "a") as fh:
        fh.write("{not json\n")  # quarantine/00001.jsonl
    cfg = fast_config(tmp_path, [src])
    cfg.write.shard_rows = 1
    cfg.read.files_per_shard = 1  # a shard, and a quarantine file, per input file
    out = run_prepare(cfg, progress=False).run_dir
    first_shards = {p.name for p in (out / "train").glob("part-*")}
    assert (out / "quarantine" / "00001.jsonl").exists()
    theirs = {"train/notes.txt": "notes\n", "validation/keep.parquet": "not a shard\n",
              "quarantine/mine.jsonl": "{}\n", "README.txt": "about this folder\n"}
    for name, text in theirs.items():
        (out / name).write_text(text)
    (src / "b.jsonl").unlink()  # the rerun has one input and fewer, larger shards
    cfg = fast_config(tmp_path, [src])
    cfg.write.shard_rows = 2
    rerun = run_prepare(cfg, progress=False)
    for name, text in theirs.items():
        assert (out / name).read_text() == text, name
    shards = {p.name for p in (out / "train").glob("part-*")}
    assert shards < first_shards  # the earlier run's extra shards are gone
    assert not (out / "quarantine" / "00001.jsonl").exists()
    manifest = json.loads((out / "manifest.json").read_text())
    assert sorted(p.name for p in (out / "train").glob("part-*")) == sorted(
        s["path"].split("/")[1] for s in manifest["shards"] if s["split"] == "train")
    assert rerun.report["counts"]["kept"] == 5


def test_a_glob_over_the_input_folder_never_takes_in_the_run_directory(tmp_path):
    src = tmp_path / "in"
    with open(write_docs(src / "a.jsonl"), "a") as fh:
        fh.write("{not json\n")  # so that quarantine/00000.jsonl is not empty
    pq.write_table(pa.Table.from_pylist([{"text": f"a Parquet row number {i} with words"} for i in range(2)]),
                   src / "b.parquet")
    cfg = fast_config(tmp_path, [f"{src}/**/*.jsonl", f"{src}/**/*.parquet"])
    cfg.out = str(src / "run")
    first = run_prepare(cfg, progress=False).report
    second = run_prepare(cfg, progress=False).report  # the globs now match the first run's outputs too
    assert first["counts"]["input"] == second["counts"]["input"] == 8
    assert set(second["files"]) == {"a.jsonl", "b.parquet"}


@pytest.mark.integration  # two CLI runs in subprocesses
def test_a_second_run_into_a_busy_run_directory_fails_in_one_line(tmp_path):
    src = tmp_path / "in"
    for i in range(4):
        write_docs(src / f"p{i}.jsonl", tag=f"part {i}")
    out = tmp_path / "run"
    (tmp_path / "shards.json").write_text('{"read": {"files_per_shard": 1}}')  # four slow shards, not one
    first = cli(str(src), "--out", str(out), "--workers", "1", "--config", str(tmp_path / "shards.json"),
                cwd=tmp_path, env=slow_shards(2), wait=False)
    try:
        deadline = time.monotonic() + 120
        while not list((out / "work" / "results").glob("normalize-*.json")):
            assert first.poll() is None and time.monotonic() < deadline, "the first run ended too early"
            time.sleep(0.05)
        second = cli(str(src), "--out", str(out), "--workers", "1", cwd=tmp_path)
        assert first.poll() is None, "the first run ended before the second one started: nothing tested"
        assert_one_line_error(second, str(out), "another prepare run")
        _, err = first.communicate(timeout=300)
        assert first.returncode == 0, err[-2000:]
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    manifest = json.loads((out / "manifest.json").read_text())
    for shard in manifest["shards"]:  # two writers used to leave a manifest that did not match its files
        assert sha256_file(out / shard["path"]) == shard["sha256"]
    assert manifest["counts"]["input"] == 20
