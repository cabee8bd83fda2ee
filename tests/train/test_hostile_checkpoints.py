"""Attacks on `prepare checkpoints`: a bucket is not trusted by pull (anyone who can write to it must not choose
where files land), and sync uploads only the checkpoint's own regular files (never what a symlink points at)."""
from __future__ import annotations

import hashlib
import json
import os

import boto3
import pytest

SECRET = b"root-only secret content"


def plant(bucket: str, files: dict[str, bytes], name: str = "checkpoint-1", manifest_files=None) -> str:
    """A complete-looking checkpoint under s3://bucket/job/<name>/ whose manifest lists `files` (each also put at
    <name>/<path>, with its true size and sha256, so a pull that trusts the paths downloads it)."""
    s3 = boto3.client("s3")
    for path, body in files.items():
        s3.put_object(Bucket=bucket, Key=f"job/{name}/{path}", Body=body)
    listed = manifest_files if manifest_files is not None else [
        {"path": path, "bytes": len(body), "sha256": hashlib.sha256(body).hexdigest()} for path, body in files.items()]
    manifest = {"name": name, "step": 1, "files": listed}
    s3.put_object(Bucket=bucket, Key=f"job/{name}/prepare-checkpoint.json", Body=json.dumps(manifest).encode())
    return f"s3://{bucket}/job"


def pull_cli(uri: str, dest, capsys) -> tuple[int, str]:
    from pipeline.cli import main

    code = main(["checkpoints", "pull", uri, str(dest)])
    return code, capsys.readouterr().err


def every_file(root) -> set[str]:
    return {os.path.relpath(os.path.join(top, n), root) for top, _, names in os.walk(root) for n in names}


@pytest.mark.parametrize("path, reason", [
    ("../../escaped.bin", "'..'"),
    ("adapter/../../../escaped.bin", "'..'"),
    ("ABSOLUTE", "absolute"),
    ("a\x00b.bin", "control character"),
    ("..\\..\\escaped.bin", "backslash"),
    ("a//b.bin", "empty part"),
    ("./b.bin", "'.'"),
    ("", "empty"),
    ("prepare-checkpoint.json", "manifest"),
])
def test_pull_refuses_a_manifest_path_that_leaves_dest_and_writes_nothing(tmp_path, bucket, capsys, path, reason):
    root = tmp_path / "home"
    dest = root / "a" / "b" / "dest"
    victim = tmp_path / "victim.bin"
    if path == "ABSOLUTE":
        path = str(victim)
    # a good entry first: nothing at all is written, not even the files before the bad one
    uri = plant(bucket, {"adapter_model.safetensors": b"weights", path: b"planted by the bucket"})
    code, err = pull_cli(uri, dest, capsys)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("prepare: error: unsafe checkpoint manifest ")
    assert reason in err and "nothing was written" in err
    assert "planted" not in err
    assert not victim.exists() and not dest.exists()
    assert every_file(tmp_path) == set()


def test_pull_names_the_bad_entry_escaped_for_the_terminal(tmp_path, bucket, capsys):
    uri = plant(bucket, {"ok.bin": b"1", "../\x1b[2Jx": b"2"})
    code, err = pull_cli(uri, tmp_path / "dest", capsys)
    assert code == 2 and "\x1b" not in err and "'../\\x1b[2Jx'" in err


@pytest.mark.parametrize("entries, reason", [
    ("not a list", "no 'files' list"),
    ([["adapter.bin", 3]], "not an object"),
    ([{"path": "a.bin", "bytes": "3", "sha256": "0" * 64}], "bytes"),
    ([{"path": "a.bin", "bytes": -1, "sha256": "0" * 64}], "bytes"),
    ([{"path": "a.bin", "bytes": 3, "sha256": "../x"}], "sha256"),
    ([{"path": 7, "bytes": 3, "sha256": "0" * 64}], "not a string"),
    ([{"path": "a.bin", "bytes": 3, "sha256": "0" * 64}] * 2, "listed twice"),
    ([{"path": "a", "bytes": 3, "sha256": "0" * 64}, {"path": "a/b", "bytes": 3, "sha256": "0" * 64}], "folder"),
    ([{"path": "x" * 256, "bytes": 3, "sha256": "0" * 64}], "255 bytes"),
    ([{"path": "\ud800.bin", "bytes": 3, "sha256": "0" * 64}], "Unicode"),
])
def test_pull_refuses_a_malformed_manifest_in_one_line(tmp_path, bucket, capsys, entries, reason):
    uri = plant(bucket, {}, manifest_files=entries)
    code, err = pull_cli(uri, tmp_path / "dest", capsys)
    assert code == 2 and err.count("\n") == 1 and reason in err and "internal error" not in err
    assert not (tmp_path / "dest").exists()


def test_pull_refuses_a_manifest_that_is_not_json(tmp_path, bucket, capsys):
    s3 = boto3.client("s3")
    s3.put_object(Bucket=bucket, Key="job/checkpoint-3/prepare-checkpoint.json", Body=b"[" * 100_000)
    code, err = pull_cli(f"s3://{bucket}/job", tmp_path / "dest", capsys)
    assert code == 2 and "not a JSON object" in err and "internal error" not in err


@pytest.mark.parametrize("link", ["checkpoint-1.partial", "checkpoint-1"])
def test_pull_never_writes_through_a_symlink_inside_dest(tmp_path, bucket, capsys, link):
    dest, elsewhere = tmp_path / "dest", tmp_path / "elsewhere"
    dest.mkdir()
    elsewhere.mkdir()
    (elsewhere / "precious.txt").write_text("keep me")
    (dest / link).symlink_to(elsewhere, target_is_directory=True)
    uri = plant(bucket, {"adapter_model.safetensors": b"weights"})
    code, err = pull_cli(uri, dest, capsys)
    assert code == 2 and err.count("\n") == 1 and "symbolic link" in err and link in err
    assert every_file(elsewhere) == {"precious.txt"} and (elsewhere / "precious.txt").read_text() == "keep me"
    assert (dest / link).is_symlink()


def test_a_safe_nested_manifest_still_pulls_into_a_linked_dest(tmp_path, bucket, capsys):
    (tmp_path / "disk").mkdir()
    (tmp_path / "dest").symlink_to(tmp_path / "disk", target_is_directory=True)   # DEST itself: the user's link
    uri = plant(bucket, {"adapter_model.safetensors": b"w", "tokenizer/vocab.json": b"{}", "..name..": b"dots"})
    code, err = pull_cli(uri, tmp_path / "dest", capsys)
    assert (code, err) == (0, "")
    assert every_file(tmp_path / "disk") == {"checkpoint-1/adapter_model.safetensors",
                                             "checkpoint-1/tokenizer/vocab.json", "checkpoint-1/..name..",
                                             "checkpoint-1/prepare-checkpoint.json"}


# --------------------------------------------------------------------------------------------------- sync

def all_objects(bucket: str) -> dict[str, bytes]:
    s3 = boto3.client("s3")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    return {k: s3.get_object(Bucket=bucket, Key=k)["Body"].read() for k in keys}


def test_sync_never_follows_a_symlink(tmp_path, bucket, capsys):
    from pipeline.cli import main

    outside = tmp_path / "system"
    (outside / "keys").mkdir(parents=True)
    (outside / "shadow").write_bytes(SECRET)
    (outside / "keys" / "id_rsa").write_bytes(SECRET)
    (outside / "trainer_state.json").write_text(json.dumps({"global_step": 9}))
    out = tmp_path / "out"
    folder = out / "checkpoint-5"
    folder.mkdir(parents=True)
    (folder / "adapter_model.safetensors").write_bytes(b"weights")
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": 5, "log_history": []}))
    (folder / "optimizer.pt").symlink_to(outside / "shadow")          # a file link to a file outside the folder
    (folder / "extra").symlink_to(outside / "keys", target_is_directory=True)   # a folder reached through a link
    (out / "checkpoint-9").symlink_to(outside, target_is_directory=True)        # a whole checkpoint folder
    (out / "adapter_model.safetensors").write_bytes(b"final weights")
    (out / "tokenizer.json").symlink_to(outside / "shadow")           # beside the final model

    assert main(["checkpoints", "sync", str(out), f"s3://{bucket}/job", "--once"]) == 0
    err = capsys.readouterr().err
    stored = all_objects(bucket)
    assert not any(SECRET in body for body in stored.values())
    assert {k for k in stored if "/checkpoint-5/" in k} == {
        "job/checkpoint-5/adapter_model.safetensors", "job/checkpoint-5/trainer_state.json",
        "job/checkpoint-5/prepare-checkpoint.json"}
    assert not any("checkpoint-9" in k or "tokenizer.json" in k for k in stored)
    manifest = json.loads(stored["job/checkpoint-5/prepare-checkpoint.json"])
    assert [f["path"] for f in manifest["files"]] == ["adapter_model.safetensors", "trainer_state.json"]
    for name in ("checkpoint-5/optimizer.pt", "checkpoint-5/extra", "checkpoint-9", "tokenizer.json"):
        assert f"{name}: a symbolic link, not uploaded" in err


def test_the_trainer_callback_stages_no_symlink_target(tmp_path, monkeypatch, caplog):
    """S3Checkpoints.on_save stages the checkpoint for upload: a linked file's content never enters the stage."""
    pytest.importorskip("transformers")
    from types import SimpleNamespace

    from pipeline.train import S3Checkpoints

    (tmp_path / "shadow").write_bytes(SECRET)
    folder = tmp_path / "out" / "checkpoint-2"
    folder.mkdir(parents=True)
    (folder / "adapter_model.safetensors").write_bytes(b"weights")
    (folder / "optimizer.pt").symlink_to(tmp_path / "shadow")
    callback = S3Checkpoints("s3://some-bucket/job", check_bucket=False)
    monkeypatch.setattr(callback, "_start", lambda: None)   # no upload thread: the staged folder is looked at
    state = SimpleNamespace(is_world_process_zero=True, global_step=2, best_model_checkpoint=None)
    callback.on_save(SimpleNamespace(output_dir=str(tmp_path / "out")), state, None)
    stage, _ = callback._queue.get_nowait()
    assert every_file(stage) == {"adapter_model.safetensors"}
    assert "checkpoint-2/optimizer.pt: a symbolic link, not uploaded" in caplog.text
