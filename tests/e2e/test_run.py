"""End to end with every stage on: the sample data to Parquet shards, manifest, report and S3."""
import json

import pyarrow.parquet as pq
import pytest

from pipeline.core.files import sha256_file
from pipeline.core.schemas import validate
from pipeline.runner import run_prepare

pytestmark = pytest.mark.slow


def test_report_accounts_for_every_record(sample_run):
    cfg, result = sample_run
    counts = result.report["counts"]
    assert counts["input"] == counts["kept"] + counts["quarantined"] + sum(counts["dropped"].values())
    assert counts["dropped"].get("exact_duplicate", 0) >= 3
    assert counts["dropped"].get("near_duplicate", 0) >= 1
    assert counts["quarantined"] >= 5
    report = json.loads((result.run_dir / "report.json").read_text())
    validate(report, "report")
    for name in ("read", "normalize", "clean", "dedup", "pii", "lengths", "split", "write"):
        assert {"seconds", "records_in", "records_out"} <= set(report["stages"][name]), name
    assert report["lengths"]["max_seq_len"] % 64 == 0
    assert report["plan"]["recommendation"]["gpu"]
    assert (result.run_dir / "report.md").read_text().startswith("# Prepare run report")


def test_manifest_and_shards(sample_run):
    cfg, result = sample_run
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    validate(manifest, "manifest")
    assert {s["split"] for s in manifest["shards"]} == {"train", "validation"}
    for shard in manifest["shards"]:
        path = result.run_dir / shard["path"]
        assert sha256_file(path) == shard["sha256"]
        assert pq.ParquetFile(path).metadata.num_rows == shard["rows"]
    assert sum(s["rows"] for s in manifest["shards"]) == manifest["counts"]["kept"]


def test_shards_load_with_datasets_in_trl_messages_form(sample_run):
    import datasets

    cfg, result = sample_run
    ds = datasets.load_dataset("parquet", data_dir=str(result.run_dir))
    assert set(ds) == {"train", "validation"}
    chat = [r for r in ds["train"] if r["kind"] != "text"]
    assert chat and all(m["role"] in ("system", "user", "assistant", "tool") for r in chat for m in r["messages"])
    assert all(isinstance(m["content"], str) for r in chat for m in r["messages"])
    for row in ds["train"].select(range(20)):
        validate(row, "record")


def test_upload_then_unchanged_rerun_is_idempotent(sample_run):
    import boto3

    cfg, first = sample_run
    assert first.manifest_uri == "s3://e2e/datasets/sample/manifest.json"
    keys = [o["Key"] for o in boto3.client("s3").list_objects_v2(Bucket="e2e")["Contents"]]
    manifest = json.loads((first.run_dir / "manifest.json").read_text())
    assert {f"datasets/sample/{s['path']}" for s in manifest["shards"]} | {"datasets/sample/manifest.json",
                                                                         "datasets/sample/report.html",
                                                                         "datasets/sample/version_basis.json",
                                                                         "datasets/sample/dedup_index.parquet"} == set(keys)
    second = run_prepare(cfg, progress=False)
    manifest2 = json.loads((second.run_dir / "manifest.json").read_text())
    assert [s["sha256"] for s in manifest2["shards"]] == [s["sha256"] for s in manifest["shards"]]
    assert manifest2["run_id"] == manifest["run_id"]
    assert second.upload["uploaded"] == []
    # report.html, version_basis.json and the index, the same bytes
    assert len(second.upload["skipped"]) == len(manifest["shards"]) + 4
