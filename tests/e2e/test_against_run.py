"""`prepare run --against PREVIOUS`: a new dataset's records that copy (exactly or nearly) a record of an earlier
release are removed, by the earlier release's dedup index alone (local run directory or S3 prefix), counted as
earlier_duplicate and listed in the dedup audit with the earlier manifest's id and shard."""
import json
import random

import pyarrow.parquet as pq
import pytest
from test_run_wiring import answer_of, prepare_cli, rows_of, write_jsonl

from pipeline.core.schemas import validate

PLACES = ("harbour", "village", "library", "delta", "market", "observatory", "museum", "forest", "bridge")


def notes(first: int, count: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(first, first + count):
        words = " ".join(rng.choice(PLACES) + str(rng.randrange(1000)) for _ in range(80))
        rows.append({"instruction": f"Describe visit {i} in detail.", "output": f"Visit {i}: {words}."})
    return rows


def run(tmp_path, name, data, *args):
    out = tmp_path / name
    proc = prepare_cli(str(data), "--out", str(out), "--workers", "1", "--no-pii", "--no-lengths",
                       "--no-estimate", *args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def write_inputs(tmp_path):
    old = notes(0, 20, seed=1)
    write_jsonl(tmp_path / "v1.jsonl", old)
    new = notes(100, 15, seed=2)
    new.append(dict(old[3]))  # a record of the earlier release, as it was
    near = old[7]["output"].split()
    near[5] = "changed"  # one word of 82 changed: near, not exact
    new.append({"instruction": old[7]["instruction"], "output": " ".join(near)})
    return write_jsonl(tmp_path / "v2.jsonl", new), old


def answers(run_dir) -> set[str]:
    return {answer_of(r) for r in rows_of(run_dir)}


def check_removed(new_run, earlier_run, old):
    earlier_manifest = json.loads((earlier_run / "manifest.json").read_text())
    assert old[3]["output"] not in answers(new_run)
    assert not any(a.startswith("Visit 7:") for a in answers(new_run))
    report = json.loads((new_run / "report.json").read_text())
    validate(report, "report")
    validate(json.loads((new_run / "manifest.json").read_text()), "manifest")
    assert report["stages"]["against"]["dropped"] == {"earlier_duplicate": 2}
    assert report["dedup"]["against"]["by_earlier"] == {earlier_manifest["run_id"]: 2}
    assert report["counts"]["kept"] == 15
    audit = [a for a in pq.read_table(new_run / "dedup_removed.parquet").to_pylist()
             if a["reason"] == "earlier_duplicate"]
    assert sorted(a["source_line"] for a in audit) == [16, 17]
    assert {a["duplicate_of_manifest"] for a in audit} == {earlier_manifest["run_id"]}
    shards = {s["path"] for s in earlier_manifest["shards"]}
    assert {a["duplicate_of_shard"] for a in audit} <= shards
    exact = next(a for a in audit if a["source_line"] == 16)
    assert exact["similarity"] == 1.0
    # the earlier record is named by shard and row (the index holds no ids); an exact copy has the same id
    at = pq.read_table(earlier_run / exact["duplicate_of_shard"], columns=["id"])["id"].to_pylist()
    assert at[exact["duplicate_of_row"]] == exact["id"]
    assert {a["duplicate_of"] for a in audit} == {None}


def test_against_a_run_directory_removes_what_a_plain_run_keeps(tmp_path):
    new_data, old = write_inputs(tmp_path)
    v1 = run(tmp_path, "v1", tmp_path / "v1.jsonl")
    manifest = json.loads((v1 / "manifest.json").read_text())
    assert manifest["dedup_index"]["path"] == "dedup_index.parquet"
    assert manifest["dedup_index"]["rows"] == 20
    plain = run(tmp_path, "plain", new_data)  # without --against both copies are kept: the case this fixes
    assert old[3]["output"] in answers(plain)
    assert "against" not in json.loads((plain / "report.json").read_text())["stages"]
    v2 = run(tmp_path, "v2", new_data, "--against", str(v1))
    check_removed(v2, v1, old)
    # the new release's index lists only what it wrote
    manifest = json.loads((v2 / "manifest.json").read_text())
    assert manifest["dedup_index"]["rows"] == 15
    # a rerun writes the same bytes: shards and index
    again = json.loads((run(tmp_path, "v2", new_data, "--against", str(v1)) / "manifest.json").read_text())
    assert [s["sha256"] for s in again["shards"]] == [s["sha256"] for s in manifest["shards"]]
    assert again["dedup_index"]["sha256"] == manifest["dedup_index"]["sha256"]


def test_against_an_s3_prefix_reads_the_uploaded_index(tmp_path, bucket):
    new_data, old = write_inputs(tmp_path)
    uri = f"s3://{bucket}/datasets/v1"
    v1 = run(tmp_path, "v1", tmp_path / "v1.jsonl", "--s3", uri)
    import boto3

    keys = {o["Key"] for o in boto3.client("s3").list_objects_v2(Bucket=bucket, Prefix="datasets/v1/")["Contents"]}
    assert "datasets/v1/dedup_index.parquet" in keys
    v2 = run(tmp_path, "v2", new_data, "--against", uri)
    check_removed(v2, v1, old)


def test_an_earlier_manifest_without_an_index_is_refused_by_name(tmp_path):
    new_data, _ = write_inputs(tmp_path)
    v1 = run(tmp_path, "v1", tmp_path / "v1.jsonl")
    manifest = json.loads((v1 / "manifest.json").read_text())
    del manifest["dedup_index"]
    (v1 / "manifest.json").write_text(json.dumps(manifest))
    proc = prepare_cli(str(new_data), "--out", str(tmp_path / "v2"), "--workers", "1", "--no-pii", "--no-lengths",
                       "--no-estimate", "--against", str(v1), cwd=tmp_path)
    assert proc.returncode != 0
    assert "lists no dedup index" in proc.stderr
    assert not (tmp_path / "v2" / "manifest.json").exists()


@pytest.mark.parametrize("edit", ["index"])
def test_an_index_that_is_not_the_one_the_manifest_lists_is_refused(tmp_path, edit):
    new_data, _ = write_inputs(tmp_path)
    v1 = run(tmp_path, "v1", tmp_path / "v1.jsonl")
    with open(v1 / "dedup_index.parquet", "ab") as fh:
        fh.write(b"x")
    proc = prepare_cli(str(new_data), "--out", str(tmp_path / "v2"), "--workers", "1", "--no-pii", "--no-lengths",
                       "--no-estimate", "--against", str(v1), cwd=tmp_path)
    assert proc.returncode != 0 and "not the file its manifest lists" in proc.stderr


@pytest.mark.slow
def test_a_copy_with_personal_data_is_found_across_runs_with_other_pseudonym_salts(tmp_path, monkeypatch):
    """The index is keyed on the text with pseudonyms collapsed to their type: a run with another salt (other
    pseudonyms in its shards) still finds the copy."""
    person = {"instruction": "Please update the delivery address on my account.",
              "output": "Of course, John Miller. I have changed the address on the account of John Miller and "
                        "sent a confirmation to john.miller@example.com; the parcel of order 5521 now goes to the "
                        "new address, and the courier will call before the delivery on Thursday morning."}
    write_jsonl(tmp_path / "v1.jsonl", [person, *notes(0, 5, seed=1)])
    write_jsonl(tmp_path / "v2.jsonl", [*notes(50, 5, seed=2), person])
    common = ("--workers", "1", "--no-lengths", "--no-estimate", "--config", str(tmp_path / "pii.json"))
    (tmp_path / "pii.json").write_text(json.dumps({"pii": {"operator": "pseudonym"}}))
    monkeypatch.setenv("PREPARE_PII_SALT", "first salt")
    v1 = tmp_path / "v1"
    proc = prepare_cli(str(tmp_path / "v1.jsonl"), "--out", str(v1), *common, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    monkeypatch.setenv("PREPARE_PII_SALT", "second salt")
    plain, v2 = tmp_path / "plain", tmp_path / "v2"
    for out, extra in ((plain, ()), (v2, ("--against", str(v1)))):
        proc = prepare_cli(str(tmp_path / "v2.jsonl"), "--out", str(out), *common, *extra, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
    pseudonymised = lambda run: {a for a in answers(run) if "<PERSON_" in a}  # noqa: E731
    assert pseudonymised(v1) and pseudonymised(plain) and pseudonymised(v1) != pseudonymised(plain)
    assert not pseudonymised(v2)
    report = json.loads((v2 / "report.json").read_text())
    assert report["stages"]["against"]["dropped"] == {"earlier_duplicate": 1}
    index = pq.read_table(v1 / "dedup_index.parquet")
    assert "John" not in str(index.to_pylist()) and b"Miller" not in (v1 / "dedup_index.parquet").read_bytes()
