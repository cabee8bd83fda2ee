"""`prepare run NEW --out RUN --append-to PREVIOUS`: a new version whose manifest references the earlier shards
(unchanged, not copied) and adds this run's new records, without the new records that copy an earlier one;
old records keep their ids and splits because their shards are the same files."""
import hashlib
import json
import re

import pyarrow.parquet as pq
import pytest
from test_against_run import notes, run, write_inputs
from test_run_wiring import answer_of, prepare_cli, write_jsonl

from pipeline.core.schemas import validate
from pipeline.data.show import open_target


def manifest_of(run_dir) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())


def version_rows(run_dir) -> list[dict]:
    """Every record of a (local) version: each shard read where its manifest entry says it is."""
    rows = []
    for shard in manifest_of(run_dir)["shards"]:
        at = (shard.get("base") or str(run_dir)) + "/" + shard["path"]
        rows += [{**r, "_split": shard["split"]} for r in pq.read_table(at).to_pylist()]
    return rows


def version_rows_s3(run_dir, s3) -> list[dict]:
    """Every record of a version with earlier shards on S3, each shard read with boto3 where `base` says."""
    import io

    rows = []
    for shard in manifest_of(run_dir)["shards"]:
        if shard.get("base"):
            bucket, _, prefix = shard["base"].removeprefix("s3://").partition("/")
            data = s3.get_object(Bucket=bucket, Key=f"{prefix}/{shard['path']}")["Body"].read()
            rows += pq.read_table(io.BytesIO(data)).to_pylist()
        else:
            rows += pq.read_table(run_dir / shard["path"]).to_pylist()
    return rows


def file_hashes(run_dir) -> dict[str, str]:
    return {str(p.relative_to(run_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run_dir.rglob("*")) if p.is_file() and "work" not in p.parts}


def check_version(v2, v1, old):
    earlier, version = manifest_of(v1), manifest_of(v2)
    validate(version, "manifest")
    n_old = len(earlier["shards"])
    assert version["previous"]["run_id"] == earlier["run_id"] and version["previous"]["shards"] == n_old
    assert version["shards"][:n_old] == [{**s, "base": version["previous"]["location"]} for s in earlier["shards"]]
    assert all("base" not in s for s in version["shards"][n_old:]) and len(version["shards"]) > n_old
    assert version["counts"]["kept"] == 20 + 15 and version["counts"]["added"]["kept"] == 15
    assert version["counts"]["added"]["dropped"] == {"earlier_duplicate": 2}
    assert version["counts"]["dropped"].get("earlier_duplicate") == 2
    assert sum(s["rows"] for s in version["shards"]) == 35
    # the version's indexes: this run's (new records only) and the earlier one, for a later --against
    assert version["dedup_index"]["rows"] == 15
    assert [(i["run_id"], i["sha256"]) for i in version["previous"]["dedup_indexes"]] == \
        [(earlier["run_id"], earlier["dedup_index"]["sha256"])]


def test_append_to_a_run_directory_references_the_old_shards(tmp_path):
    new_data, old = write_inputs(tmp_path)
    v1 = run(tmp_path, "v1", tmp_path / "v1.jsonl")
    before = file_hashes(v1)
    v2 = run(tmp_path, "v2", new_data, "--append-to", str(v1))
    check_version(v2, v1, old)
    assert manifest_of(v2)["previous"]["location"] == str(v1)
    assert file_hashes(v1) == before  # the earlier dataset is only read
    for shard in manifest_of(v2)["shards"][:len(manifest_of(v1)["shards"])]:
        assert not (v2 / shard["path"]).exists() or \
            hashlib.sha256((v2 / shard["path"]).read_bytes()).hexdigest() != shard["sha256"]  # not copied
    rows = version_rows(v2)
    answers = [answer_of(r) for r in rows]
    assert answers.count(old[3]["output"]) == 1  # the copy of an old record is dropped, the old one kept
    assert sum(a.startswith("Visit 7:") for a in answers) == 1  # the near copy too
    old_ids = {r["id"]: r["_split"] for r in version_rows(v1)}
    assert {r["id"]: r["_split"] for r in rows if r["id"] in old_ids} == old_ids  # ids and splits unchanged
    assert len(rows) == len({r["id"] for r in rows}) == 35
    # prepare show reads the earlier shards where they are, not the new shards of the same name twice
    shown = [r["id"] for batch in open_target(str(v2), splits=("train", "validation")).records() for r in batch]
    assert sorted(shown) == sorted(r["id"] for r in rows)
    # the same command again writes the same bytes: manifest, shards, index (report.json/md hold timings)
    timed = {".prepare-run", "report.json", "report.md"}
    first = {k: v for k, v in file_hashes(v2).items() if k not in timed}
    run(tmp_path, "v2", new_data, "--append-to", str(v1))
    assert {k: v for k, v in file_hashes(v2).items() if k not in timed} == first
    assert "manifest.json" in first


def test_a_later_against_the_version_covers_its_old_records_too(tmp_path):
    new_data, old = write_inputs(tmp_path)
    v1 = run(tmp_path, "v1", tmp_path / "v1.jsonl")
    v2 = run(tmp_path, "v2", new_data, "--append-to", str(v1))
    added = [json.loads(line) for line in new_data.read_text().splitlines()][0]
    write_jsonl(tmp_path / "v3.jsonl", [*notes(300, 5, seed=3), dict(old[1]), dict(added)])
    v3 = run(tmp_path, "v3", tmp_path / "v3.jsonl", "--against", str(v2))
    report = json.loads((v3 / "report.json").read_text())
    assert report["dedup"]["against"]["by_earlier"] == {manifest_of(v1)["run_id"]: 1, manifest_of(v2)["run_id"]: 1}
    assert report["counts"]["kept"] == 5


def test_without_append_to_a_run_is_no_version(tmp_path):
    """The case this fixes: a plain run of the new data holds neither the earlier records nor a link to them,
    and keeps the copy of an old record."""
    new_data, old = write_inputs(tmp_path)
    v1 = run(tmp_path, "v1", tmp_path / "v1.jsonl")
    plain = run(tmp_path, "plain", new_data)
    assert "previous" not in manifest_of(plain)
    assert not {r["id"] for r in version_rows(v1)} <= {r["id"] for r in version_rows(plain)}
    assert old[3]["output"] in [answer_of(r) for r in version_rows(plain)]


def test_appending_into_the_earlier_run_directory_is_refused(tmp_path):
    new_data, _ = write_inputs(tmp_path)
    v1 = run(tmp_path, "v1", tmp_path / "v1.jsonl")
    before = file_hashes(v1)
    proc = prepare_cli(str(new_data), "--out", str(v1), "--workers", "1", "--no-pii", "--no-lengths",
                       "--no-estimate", "--append-to", str(v1), cwd=tmp_path)
    assert proc.returncode != 0 and "--out must be another run directory" in proc.stderr
    assert file_hashes(v1) == before


def test_append_to_an_s3_prefix(tmp_path, bucket):
    import boto3

    new_data, old = write_inputs(tmp_path)
    uri, uri2 = f"s3://{bucket}/datasets/v1", f"s3://{bucket}/datasets/v2"
    v1 = run(tmp_path, "v1", tmp_path / "v1.jsonl", "--s3", uri)
    v2 = run(tmp_path, "v2", new_data, "--append-to", uri, "--s3", uri2)
    check_version(v2, v1, old)
    version = manifest_of(v2)
    assert version["previous"]["location"] == uri
    s3 = boto3.client("s3")
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="datasets/v2/")["Contents"]}
    new_shards = [s for s in version["shards"] if "base" not in s]
    assert {k for k in keys if k.endswith(".parquet") and "/part-" in k} == \
        {f"datasets/v2/{s['path']}" for s in new_shards}  # the old shards stay where they are, not copied
    assert json.loads(s3.get_object(Bucket=bucket, Key="datasets/v2/manifest.json")["Body"].read()) == version
    # the figures before, from the earlier version_basis.json on S3 (before: none, the upload had no report.json)
    assert "datasets/v1/version_basis.json" in {o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]}
    diff = json.loads((v2 / "report.json").read_text())["version"]
    assert diff["previous"]["report"] == "version_basis.json" and "missing" not in diff["previous"]
    assert diff["by_file"]["v1.jsonl"] == {"before": 20, "added": 0, "removed": 0, "after": 20}
    assert diff["by_file"]["v2.jsonl"] == {"before": 0, "added": 15, "removed": 2, "after": 15}
    # `prepare show` reads the earlier shards from S3 (before: refused)
    shown = [r["id"] for batch in open_target(str(v2), splits=("train", "validation")).records() for r in batch]
    assert sorted(shown) == sorted(r["id"] for r in version_rows_s3(v2, s3))


def test_the_report_shows_the_version_against_a_run_of_all_the_data(tmp_path):
    """With lengths and the plan on: report.json's version section against one run of the old and new records
    together (exact where it says so, approximate where it says so)."""
    old, new = notes(0, 20, seed=1), notes(100, 15, seed=2)
    write_jsonl(tmp_path / "v1.jsonl", old)
    write_jsonl(tmp_path / "v2.jsonl", [*new, dict(old[3])])
    write_jsonl(tmp_path / "all.jsonl", old + new)
    common = ("--workers", "1", "--no-pii")
    for name, data, extra in (("v1", "v1.jsonl", ()), ("v2", "v2.jsonl", ("--append-to", "v1")),
                              ("all", "all.jsonl", ())):
        proc = prepare_cli(str(tmp_path / data), "--out", str(tmp_path / name), *common, *extra, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
    version = json.loads((tmp_path / "v2" / "report.json").read_text())["version"]
    joint = json.loads((tmp_path / "all" / "report.json").read_text())
    assert version["records"] == {"before": 20, "added": 15, "removed": 1, "after": 35}
    assert version["by_file"]["v2.jsonl"] == {"before": 0, "added": 15, "removed": 1, "after": 15}
    assert version["by_lang"]["en"]["after"] == joint["lengths"]["groups"]["lang:en"]["records"]
    assert version["by_lang"]["en"]["removed"] == 1
    after, whole = version["lengths"]["after"], joint["lengths"]["groups"]["all"]
    assert after["records"] == whole["records"] and after["histogram"] == whole["histogram"]
    assert {k: after["tokens"][k] for k in ("total", "mean", "min", "max")} == \
        {k: whole["tokens"][k] for k in ("total", "mean", "min", "max")}
    assert "approximate" in after and version["plan"]["approximate"]
    assert version["max_seq_len"]["before"] == version["max_seq_len"]["after"] == joint["lengths"]["max_seq_len"]
    plan = version["plan"]["after"]
    assert plan["tokens_per_epoch"] == joint["plan"]["tokens"]["per_epoch"]
    assert plan["recommendation"]["gpu"] == joint["plan"]["recommendation"]["gpu"]
    assert "## Version" in (tmp_path / "v2" / "report.md").read_text()
    assert 'id="version"' in (tmp_path / "v2" / "report.html").read_text()


@pytest.mark.slow
def test_a_version_keeps_the_earlier_pseudonym_salt(tmp_path, monkeypatch):
    """The same person gets the same pseudonym in the old records and the new ones: an append with another salt
    is refused before anything is written; with the earlier salt it goes through."""
    def person(i):
        return {"instruction": f"Please update the address on my account, case {i}.",
                "output": f"Of course, John Miller. The address of case {i} is changed and the courier of order "
                          f"{5500 + i} will call John Miller before the delivery on Thursday morning."}
    write_jsonl(tmp_path / "v1.jsonl", [person(1), *notes(0, 3, seed=1)])
    write_jsonl(tmp_path / "v2.jsonl", [person(2), *notes(50, 3, seed=2)])
    (tmp_path / "pii.json").write_text(json.dumps({"pii": {"operator": "pseudonym"}}))
    common = ("--workers", "1", "--no-lengths", "--no-estimate", "--config", str(tmp_path / "pii.json"))
    monkeypatch.setenv("PREPARE_PII_SALT", "first salt")
    proc = prepare_cli(str(tmp_path / "v1.jsonl"), "--out", str(tmp_path / "v1"), *common, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "first salt" not in (tmp_path / "v1" / "manifest.json").read_text()
    monkeypatch.setenv("PREPARE_PII_SALT", "second salt")
    args = (str(tmp_path / "v2.jsonl"), "--out", str(tmp_path / "v2"), *common, "--append-to", str(tmp_path / "v1"))
    proc = prepare_cli(*args, cwd=tmp_path)
    assert proc.returncode != 0 and "pseudonym salt" in proc.stderr
    assert not (tmp_path / "v2").exists()
    monkeypatch.setenv("PREPARE_PII_SALT", "first salt")
    proc = prepare_cli(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    names = {tuple(re.findall(r"<PERSON_[0-9a-f]+>", answer_of(r))) for r in version_rows(tmp_path / "v2")
             if "courier" in answer_of(r)}
    assert len(names) == 1 and len(next(iter(names))) == 2  # both records, the same pseudonym twice


def test_a_version_of_a_version_starts_from_the_whole_earlier_version(tmp_path):
    new_data, old = write_inputs(tmp_path)
    v1 = run(tmp_path, "v1", tmp_path / "v1.jsonl")
    v2 = run(tmp_path, "v2", new_data, "--append-to", str(v1))
    write_jsonl(tmp_path / "v3.jsonl", [*notes(500, 4, seed=5), dict(old[0])])
    v3 = run(tmp_path, "v3", tmp_path / "v3.jsonl", "--append-to", str(v2))
    version, earlier = manifest_of(v3), manifest_of(v2)
    validate(version, "manifest")
    assert version["shards"][:len(earlier["shards"])] == \
        [{**s, "base": s.get("base", str(v2))} for s in earlier["shards"]]
    assert {s.get("base") for s in version["shards"]} == {str(v1), str(v2), None}
    assert [i["run_id"] for i in version["previous"]["dedup_indexes"]] == [earlier["run_id"], manifest_of(v1)["run_id"]]
    assert version["counts"]["kept"] == 35 + 4 and version["counts"]["added"]["kept"] == 4
    diff = json.loads((v3 / "report.json").read_text())["version"]
    assert diff["records"] == {"before": 35, "added": 4, "removed": 1, "after": 39}
    assert diff["by_file"]["v1.jsonl"] == {"before": 20, "added": 0, "removed": 0, "after": 20}
    assert diff["by_file"]["v3.jsonl"] == {"before": 0, "added": 4, "removed": 1, "after": 4}
    assert len(version_rows(v3)) == 39
