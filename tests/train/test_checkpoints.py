"""Checkpoints on S3 (moto server over HTTP): manifest last, partial uploads never pulled, unchanged files
skipped, last K + best kept, the watcher for trainers without callbacks."""
from __future__ import annotations

import json
from pathlib import Path

import boto3


def checkpoint(out: Path, step: int, best: int | None = None, size: int = 1000) -> Path:
    folder = out / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    (folder / "adapter_model.safetensors").write_bytes(bytes([step % 256]) * size)
    (folder / "optimizer.pt").write_bytes(b"o" * size)
    state = {"global_step": step, "best_model_checkpoint": str(out / f"checkpoint-{best}") if best else None,
             "best_metric": 0.5, "log_history": [{"eval_loss": 1.0 / step, "step": step}]}
    (folder / "trainer_state.json").write_text(json.dumps(state))
    return folder


def keys(bucket, prefix):
    return sorted(o["Key"] for o in boto3.client("s3").list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", []))


def test_a_checkpoint_without_its_manifest_is_never_pulled(tmp_path, bucket):
    from pipeline.train.checkpoints import MANIFEST, pull, upload_checkpoint

    uri = f"s3://{bucket}/job"
    upload_checkpoint(checkpoint(tmp_path / "out", 10), uri)
    # a server that stopped mid-upload of checkpoint-20: files, no manifest
    partial = checkpoint(tmp_path / "out", 20)
    s3 = boto3.client("s3")
    s3.upload_file(str(partial / "adapter_model.safetensors"), bucket, "job/checkpoint-20/adapter_model.safetensors")
    restored = pull(uri, tmp_path / "new")
    assert restored.name == "checkpoint-10"
    assert (restored / "adapter_model.safetensors").read_bytes() == bytes([10]) * 1000
    assert (restored / MANIFEST).is_file() and not (tmp_path / "new" / "checkpoint-10.partial").exists()


def test_an_unchanged_checkpoint_uploads_nothing_again(tmp_path, bucket):
    from pipeline.train.checkpoints import upload_checkpoint

    folder = checkpoint(tmp_path / "out", 5)
    first = upload_checkpoint(folder, f"s3://{bucket}/job")
    assert set(first) == {"adapter_model.safetensors", "optimizer.pt", "trainer_state.json",
                          "prepare-checkpoint.json"}
    assert upload_checkpoint(folder, f"s3://{bucket}/job") == []


def test_watcher_keeps_last_k_and_best_then_only_the_best(tmp_path, bucket, capsys):
    from pipeline.cli import main
    from pipeline.train.checkpoints import list_remote, sync

    out = tmp_path / "out"
    uri = f"s3://{bucket}/job"
    for step in (1, 2, 3, 4):
        checkpoint(out, step, best=1)
    sync(out, uri, keep=2, once=False, stable_seconds=0, max_polls=1, log=lambda m: None)
    complete = {n for n, e in list_remote(uri).items() if e.complete}
    assert complete == {"checkpoint-1", "checkpoint-3", "checkpoint-4"}   # last 2 + the best
    # the final model appears at the top of the output folder: final/, eval report, only the best
    (out / "adapter_model.safetensors").write_bytes(b"final")
    assert main(["checkpoints", "sync", str(out), uri, "--once"]) == 0
    assert {n for n, e in list_remote(uri).items() if e.complete} == {"checkpoint-1", "final"}
    report = json.loads(boto3.client("s3").get_object(Bucket=bucket, Key="job/eval_report.json")["Body"].read())
    assert report["best_model_checkpoint"] == "checkpoint-1"
    assert keys(bucket, "job/final/") == ["job/final/adapter_model.safetensors", "job/final/prepare-checkpoint.json"]


def test_pull_from_an_empty_prefix_is_one_line(bucket, tmp_path, capsys):
    from pipeline.cli import main

    assert main(["checkpoints", "pull", f"s3://{bucket}/nothing", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (f"prepare: error: no complete checkpoint under s3://{bucket}/nothing "
                                               f"(a checkpoint is complete once its prepare-checkpoint.json is uploaded)")


def test_the_best_survives_a_resume_in_a_fresh_folder(tmp_path, bucket):
    """Killed after the best (checkpoint-2), resumed on another machine from a pulled checkpoint-4: the resumed
    trainer no longer has checkpoint-2's folder (its best_model_checkpoint is reset) but carries its
    best_global_step; best.json keeps the best on S3 through the pruning and the end names it."""
    from pipeline.train.checkpoints import BEST, list_remote, pull, read_best, sync

    uri = f"s3://{bucket}/job"
    first = tmp_path / "first"
    for step, loss in ((2, 0.5), (4, 0.9)):
        folder = checkpoint(first, step)
        state = {"global_step": step, "best_global_step": 2, "best_metric": 0.5,
                 "best_model_checkpoint": str(first / "checkpoint-2"),
                 "log_history": [{"eval_loss": 0.5, "step": 2}, {"eval_loss": 0.9, "step": 4}][:step // 2]}
        (folder / "trainer_state.json").write_text(json.dumps(state))
    sync(first, uri, keep=1, stable_seconds=0, max_polls=1, log=lambda m: None)   # then the server is gone
    assert read_best(uri)["checkpoint"] == "checkpoint-2"
    resumed = tmp_path / "second"
    assert pull(uri, resumed).name == "checkpoint-4"
    for step in (6, 8):   # worse than the best: the trainer keeps best_global_step 2
        folder = checkpoint(resumed, step)
        state = {"global_step": step, "best_global_step": 2, "best_metric": 0.5, "best_model_checkpoint": None,
                 "log_history": [{"eval_loss": 1.0 + step, "step": step}]}
        (folder / "trainer_state.json").write_text(json.dumps(state))
    (resumed / "trainer_state.json").write_text((resumed / "checkpoint-8" / "trainer_state.json").read_text())
    (resumed / "adapter_model.safetensors").write_bytes(b"final")
    result = sync(resumed, uri, keep=1, stable_seconds=0, once=True, log=lambda m: None)
    assert result["best"] == "checkpoint-2"
    assert {n for n, e in list_remote(uri).items() if e.complete} == {"checkpoint-2", "final"}
    report = json.loads(boto3.client("s3").get_object(Bucket=bucket, Key="job/eval_report.json")["Body"].read())
    assert (report["best_model_checkpoint"], report["best_metric"]) == ("checkpoint-2", 0.5)
    assert f"job/{BEST}" in keys(bucket, "job/")


def test_a_best_evaluated_at_a_step_not_saved_never_costs_the_saved_best(tmp_path, bucket):
    """eval_steps below save_steps (a user's override): the trainer's best_global_step can be a step no checkpoint
    was saved at. The best kept is then a saved one (the trainer's best_model_checkpoint, else what best.json had),
    and pruning keeps it."""
    from pipeline.train.checkpoints import list_remote, read_best, sync

    uri = f"s3://{bucket}/unsaved"
    out = tmp_path / "out"
    history = [{"eval_loss": 0.7, "step": 2}, {"eval_loss": 0.4, "step": 3}, {"eval_loss": 0.9, "step": 4},
               {"eval_loss": 0.6, "step": 5}, {"eval_loss": 0.95, "step": 6}]
    for step, best_step, best_dir in ((2, 2, "checkpoint-2"), (4, 3, "checkpoint-2"), (6, 5, "checkpoint-2")):
        folder = checkpoint(out, step)
        state = {"global_step": step, "best_global_step": best_step, "best_metric": 0.4,
                 "best_model_checkpoint": str(out / best_dir),
                 "log_history": [e for e in history if e["step"] <= step]}
        (folder / "trainer_state.json").write_text(json.dumps(state))
        sync(out, uri, keep=1, stable_seconds=0, max_polls=1, log=lambda m: None)
        assert read_best(uri)["checkpoint"] == "checkpoint-2"
    assert {n for n, e in list_remote(uri).items() if e.complete} == {"checkpoint-2", "checkpoint-6"}


def test_sync_waits_for_the_trainer_to_make_its_folder(tmp_path, bucket, monkeypatch, capsys):
    from pipeline.cli import main
    from pipeline.train import checkpoints

    out = tmp_path / "out"
    # the trainer makes its output_dir while sync sleeps between looks
    monkeypatch.setattr(checkpoints.time, "sleep", lambda seconds: out.mkdir(exist_ok=True))
    lines = []
    checkpoints.sync(out, f"s3://{bucket}/job", once=True, poll_seconds=5, wait_seconds=60, log=lines.append)
    assert lines[0] == f"waiting for {out} (the trainer's output_dir) to appear: 0 of 60 s"
    # and gives up after --wait, in one line
    monkeypatch.setattr(checkpoints.time, "sleep", lambda seconds: None)
    assert main(["checkpoints", "sync", str(tmp_path / "never"), f"s3://{bucket}/job", "--wait", "10",
                 "--poll", "5"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"prepare: error: no such folder: {tmp_path / 'never'} (waited 10 s for the trainer to make it)")
