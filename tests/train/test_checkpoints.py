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
