"""Issue 30: a folder is a run directory only when prepare wrote its marker; a run deletes or replaces only the
files its marker's ledger lists, and never writes through a symlink. Each attack leaves the folder as it was."""
import json
import os

import pytest
from conftest import fast_config
from test_rundir import assert_one_line_error, cli, snapshot, write_docs

from pipeline.runner import PrepareError, run_prepare
from pipeline.runner.rundir import MARKER

USER_FILES = {"work/thesis.docx": b"chapter one", "train/part-00007.parquet": b"my own parquet",
              "quarantine/00042.jsonl": b'{"mine": true}\n', "notes.txt": b"notes"}


def plant(root, files=USER_FILES):
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)


@pytest.fixture
def src(tmp_path):
    return write_docs(tmp_path / "in" / "a.jsonl")


def refused(tmp_path, src, *words):
    """A run into tmp_path/run fails with a PrepareError holding `words`, and changes nothing there."""
    before = snapshot(tmp_path)
    links = {p: os.readlink(p) for p in tmp_path.rglob("*") if p.is_symlink()}
    with pytest.raises(PrepareError) as err:
        run_prepare(fast_config(tmp_path, [src]), progress=False, log=lambda m: None)
    for word in words:
        assert word in str(err.value), str(err.value)
    assert snapshot(tmp_path) == before
    assert {p: os.readlink(p) for p in tmp_path.rglob("*") if p.is_symlink()} == links
    return str(err.value)


@pytest.mark.parametrize("marker", [b"", b"This folder is a prepare run directory.\n",
                                    b'{"kind": "prepare run directory"}\n'], ids=["empty", "text", "no id"])
def test_a_planted_marker_does_not_make_a_run_directory(tmp_path, src, marker):
    out = tmp_path / "run"
    plant(out, {**USER_FILES, MARKER: marker})
    refused(tmp_path, src, "did not write")


@pytest.mark.integration  # the CLI in a subprocess
def test_a_planted_marker_is_one_line_from_the_cli(tmp_path, src):
    out = tmp_path / "run"
    plant(out, {**USER_FILES, MARKER: b""})
    before = snapshot(tmp_path)
    proc = cli(str(src), "--out", str(out), cwd=tmp_path)
    assert_one_line_error(proc, str(out), MARKER)
    assert snapshot(tmp_path) == before


def test_a_symlinked_marker_is_refused_and_its_target_untouched(tmp_path, src):
    out = tmp_path / "run"
    out.mkdir()
    (tmp_path / "target.txt").write_bytes(b"")  # empty: the old code wrote its marker text into it
    (out / MARKER).symlink_to(tmp_path / "target.txt")
    refused(tmp_path, src, "symlink")


def test_a_hard_linked_marker_is_refused(tmp_path, src):
    out = tmp_path / "run"
    run_prepare(fast_config(tmp_path, [src]), progress=False, log=lambda m: None)
    mine = tmp_path / "mine.txt"
    os.link(out / MARKER, mine)  # appending the ledger to the marker would write into this file
    refused(tmp_path, src, "not a plain file")


@pytest.mark.parametrize("folder", ["train", "quarantine", "validation"])
def test_a_symlinked_output_folder_is_refused_and_not_written_through(tmp_path, src, folder):
    out = tmp_path / "run"
    run_prepare(fast_config(tmp_path, [src]), progress=False, log=lambda m: None)
    elsewhere = tmp_path / "elsewhere"
    plant(elsewhere, {"keep.txt": b"mine"})
    import shutil

    shutil.rmtree(out / folder)
    (out / folder).symlink_to(elsewhere, target_is_directory=True)
    refused(tmp_path, src, f"{folder}: is a symlink")


def test_a_symlinked_shard_temporary_is_refused(tmp_path, src):
    out = tmp_path / "run"
    run_prepare(fast_config(tmp_path, [src]), progress=False, log=lambda m: None)
    (tmp_path / "victim").write_bytes(b"precious")
    (out / "train" / "part-00000.parquet.tmp").symlink_to(tmp_path / "victim")
    refused(tmp_path, src, "part-00000.parquet.tmp: is a symlink")


@pytest.mark.parametrize("name", ["train/part-00007.parquet", "quarantine/00042.jsonl", "work/thesis.docx",
                                  "report.md"])
def test_a_foreign_file_where_prepare_writes_stops_the_run_naming_it(tmp_path, src, name):
    out = tmp_path / "run"
    run_prepare(fast_config(tmp_path, [src]), progress=False, log=lambda m: None)
    if name == "report.md":  # a report prepare did not write: one the ledger does not list
        (out / name).unlink()
        with open(out / MARKER, "a") as fh:
            fh.write(json.dumps({"deleted": ["report.md"]}) + "\n")
    plant(out, {name: b"the user's own"})
    message = refused(tmp_path, src, "not written by prepare")
    assert (name if name != "work/thesis.docx" else "work") in message


def test_the_marker_lists_what_the_run_wrote(tmp_path, src):
    out = tmp_path / "run"
    run_prepare(fast_config(tmp_path, [src]), progress=False, log=lambda m: None)
    lines = [json.loads(line) for line in (out / MARKER).read_text().splitlines() if line.strip()]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["run_dir_id"] == lines[0]["id"]  # the id is recorded in two places
    written = {n for line in lines[1:] for n in line.get("wrote", [])}
    assert {s["path"] for s in manifest["shards"]} <= written and "manifest.json" in written
    again = run_prepare(fast_config(tmp_path, [src]), progress=False, log=lambda m: None)  # its own folder
    assert again.report["counts"]["kept"] == 5
