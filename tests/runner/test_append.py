"""runner/append.py: the checks an appended version makes before the run, and how its manifest is made of the
earlier one's and this run's."""
import pytest

from pipeline.core.config import PrepareConfig
from pipeline.core.errors import PrepareError
from pipeline.runner.append import check_append, salt_check, summed_kinds, version_config, version_manifest

SHA = "a" * 64


def pseudonym_cfg(**more) -> PrepareConfig:
    return PrepareConfig(inputs=["x.jsonl"], out="runs/v2", append_to="runs/v1",
                         pii={"operator": "pseudonym"}, **more)


def previous(**more) -> dict:
    return {"run_id": "r1", "location": "/data/runs/v1", "max_seq_len": 512, "counts": {"kept": 3},
            "shards": [{"path": "train/part-00000.parquet", "split": "train", "rows": 3, "bytes": 9, "sha256": SHA}],
            **more}


def test_the_salt_check_tells_the_earlier_salt_from_another_and_holds_no_salt(monkeypatch):
    monkeypatch.setenv("PREPARE_PII_SALT", "the earlier salt")
    cfg = pseudonym_cfg()
    kept = salt_check(cfg, "0" * 32)
    assert kept["source"] == "env" and "the earlier salt" not in str(kept)
    check_append(cfg, previous(pii_salt=kept), print)  # the same salt: accepted
    monkeypatch.setenv("PREPARE_PII_SALT", "another salt")
    with pytest.raises(PrepareError, match="pseudonym salt"):
        check_append(cfg, previous(pii_salt=kept), print)
    monkeypatch.delenv("PREPARE_PII_SALT")
    with pytest.raises(PrepareError, match="pseudonym salt"):
        check_append(cfg, previous(pii_salt=kept), print)
    assert salt_check(cfg, "0" * 32) == {"source": "run"}
    assert salt_check(PrepareConfig(inputs=["x"]), "0" * 32) is None  # no pseudonyms: nothing to keep


def test_an_earlier_random_salt_is_said_not_refused(monkeypatch):
    monkeypatch.setenv("PREPARE_PII_SALT", "a salt")
    said = []
    check_append(pseudonym_cfg(), previous(pii_salt={"source": "run"}), said.append)
    assert said and "cannot match" in said[0]


def test_an_s3_output_over_the_earlier_prefix_is_refused():
    cfg = PrepareConfig(inputs=["x"], out="runs/v2", append_to="s3://b/v1", s3="s3://b/v1/")
    with pytest.raises(PrepareError, match="--s3 must be another prefix"):
        check_append(cfg, previous(location="s3://b/v1"), print)


def test_an_upload_that_would_reference_local_shards_is_refused():
    cfg = PrepareConfig(inputs=["x"], out="runs/v2", append_to="runs/v1", s3="s3://b/v2")
    with pytest.raises(PrepareError, match="append to the earlier version's s3:// prefix"):
        check_append(cfg, previous(), print)


def test_the_earlier_max_length_is_kept_unless_the_user_sets_one_the_shards_allow():
    cfg = PrepareConfig(inputs=["x"], append_to="runs/v1")
    assert version_config(cfg, previous()).lengths.max_seq_len == 512
    mine = PrepareConfig(inputs=["x"], append_to="runs/v1", lengths={"max_seq_len": 1024})
    assert version_config(mine, previous()).lengths.max_seq_len == 1024  # overflow: keep, the trainer cuts
    cut = PrepareConfig(inputs=["x"], append_to="runs/v1", lengths={"max_seq_len": 1024, "overflow": "drop"})
    with pytest.raises(PrepareError, match="at which its shards were written"):
        version_config(cut, previous())


def test_a_version_of_a_version_names_every_shard_and_index_where_it_is():
    index = {"path": "dedup_index.parquet", "rows": 3, "bytes": 9, "sha256": SHA}
    v2 = version_manifest({"run_id": "", "counts": {"kept": 2, "dropped": {"x": 1}}, "dedup_index": index,
                           "shards": [{"path": "train/part-00000.parquet", "rows": 2, "sha256": SHA}]},
                          previous(dedup_index=index))
    assert v2["counts"] == {"added": {"kept": 2, "dropped": {"x": 1}}, "dropped": {"x": 1}, "kept": 5}
    assert [s.get("base") for s in v2["shards"]] == ["/data/runs/v1", None]
    v3 = version_manifest({"run_id": "", "counts": {"kept": 1}, "shards": []},
                          {**v2, "run_id": "r2", "location": "s3://b/v2"})
    assert [s.get("base") for s in v3["shards"]] == ["/data/runs/v1", "s3://b/v2"]
    assert v3["counts"]["kept"] == 6 and v3["counts"]["added"] == {"kept": 1}
    assert [(i["run_id"], i["base"]) for i in v3["previous"]["dedup_indexes"]] == \
        [("r2", "s3://b/v2"), ("r1", "/data/runs/v1")]


def test_kinds_sum_only_the_figures_both_parts_have():
    earlier = {"chat": {"train": {"records": 3}}}
    added = {"chat": {"train": {"records": 2, "tokens": 50}, "validation": {"records": 1, "tokens": 9}},
             "text": {"train": {"records": 4, "tokens": 80}}}
    assert summed_kinds(earlier, added) == {
        "chat": {"train": {"records": 5}, "validation": {"records": 1, "tokens": 9}},
        "text": {"train": {"records": 4, "tokens": 80}}}


def test_a_version_of_a_run_without_kinds_has_none_rather_than_the_new_records_alone():
    added = {"run_id": "", "counts": {"kept": 1}, "kinds": {"chat": {"train": {"records": 1}}},
             "shards": [{"path": "train/part-00000.parquet", "rows": 1, "sha256": SHA}]}
    assert "kinds" not in version_manifest(added, previous())
    both = version_manifest(added, previous(kinds={"chat": {"train": {"records": 3}}}))
    assert both["kinds"] == {"chat": {"train": {"records": 4}}}
