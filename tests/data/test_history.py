"""The dedup index a released dataset carries (dedup/history.py) and the lookup of new records in it
(dedup/against.py): no text in the index, keys that do not change with the pseudonym salt, exact and near
matches found, and indexes of other settings refused."""
import copy
import random

import numpy as np
import pyarrow.parquet as pq
import pytest

from pipeline.core.config import DedupConfig, PiiConfig
from pipeline.data.dedup.against import Earlier, check_index, find_earlier
from pipeline.data.dedup.history import history_keys, index_schema, mask_text, masked_record, write_index

WORDS = [f"word{i}" for i in range(3000)]


def docs(n: int, seed: int, first: int = 0) -> list[dict]:
    rng = random.Random(seed)
    return [{"_order": first + i, "id": f"r{first + i}", "kind": "text",
             "text": " ".join(rng.choice(WORDS) for _ in range(80)), "source": {"file": "in.jsonl", "line": i + 1}}
            for i in range(n)]


def index_of(records, cfg, tmp_path, name="old"):
    keys = tmp_path / f"{name}_keys.parquet"
    pq.write_table(history_keys(records, cfg), keys)
    path = tmp_path / f"{name}_index.parquet"
    table = pq.read_table(keys)
    write_index([keys], {"train/part-00000.parquet": table["id"].combine_chunks()}, cfg, path)
    return path


def lookup(new, index, cfg, tmp_path):
    keys = tmp_path / "new_keys.parquet"
    pq.write_table(history_keys(new, cfg), keys)
    return find_earlier([str(keys)], [Earlier("m-old", str(index))], cfg, str(tmp_path))


def test_the_index_holds_keys_and_places_and_no_text_or_ids(tmp_path):
    cfg = DedupConfig()
    records = docs(30, seed=1)
    records[0]["text"] = "Ayşe Yılmaz wrote: " + records[0]["text"]
    path = index_of(records, cfg, tmp_path)
    table = pq.read_table(path)
    assert table.schema.names == index_schema(cfg).names
    assert {n for n in table.schema.names if not n.startswith("band_")} == {
        "shard", "row", "exact_hi", "exact_lo", "near_mode", "signature"}
    assert table["shard"].to_pylist() == ["train/part-00000.parquet"] * 30
    assert table["row"].to_pylist() == list(range(30))
    raw = path.read_bytes() + pq.read_table(path).to_pandas().to_csv().encode()
    for word in ("Ayşe", "Yılmaz", *records[1]["text"].split()[:10]):
        assert word.encode() not in raw


def test_only_records_in_a_shard_get_a_row(tmp_path):
    cfg = DedupConfig()
    records = docs(10, seed=1)
    keys = tmp_path / "keys.parquet"
    pq.write_table(history_keys(records, cfg), keys)
    import pyarrow as pa

    written = {"train/part-00000.parquet": pa.array(["r1", "r3"]), "validation/part-00000.parquet": pa.array(["r5"])}
    rows = write_index([keys], written, cfg, tmp_path / "index.parquet")
    table = pq.read_table(tmp_path / "index.parquet")
    assert rows == 3
    assert list(zip(table["row"].to_pylist(), table["shard"].to_pylist())) == [
        (0, "train/part-00000.parquet"), (1, "train/part-00000.parquet"), (0, "validation/part-00000.parquet")]


def test_pseudonyms_collapse_to_their_type():
    from pipeline.data.pii.operators import Operators

    ops = Operators("pseudonym", {}, b"salt")
    text = f"{ops.pseudonym('PERSON', 'Ivan Petrov')} and {ops.pseudonym('TR_ID_NUMBER', '10000000146')} <EMAIL>"
    assert mask_text(text) == "<PERSON> and <TR_ID_NUMBER> <EMAIL>"
    rec = {"kind": "chat", "messages": [{"role": "user", "content": text}], "text": None, "id": "x"}
    assert masked_record(rec)["messages"][0]["content"] == "<PERSON> and <TR_ID_NUMBER> <EMAIL>"
    assert rec["messages"][0]["content"] == text  # the record itself is not changed


@pytest.mark.slow
def test_no_key_changes_when_only_the_pseudonym_salt_changes():
    from pipeline.data.pii import PiiStep

    rec = {"_order": 1, "id": "a", "kind": "chat", "source": {"file": "f", "line": 1}, "meta": {"lang": "en"},
           "messages": [{"role": "user", "content": "Hi, I am John Miller, mail me at john.miller@example.com."},
                        {"role": "assistant", "content": "Sure John Miller, I will write to john.miller@example.com "
                                                         "today about the order you placed last week."}]}
    cfg = DedupConfig()
    outs = [PiiStep(PiiConfig(operator="pseudonym"), salt=salt).process([copy.deepcopy(rec)])[0]
            for salt in (b"first salt", b"second salt")]
    assert outs[0]["messages"] != outs[1]["messages"]  # the pseudonyms differ ...
    a, b = (history_keys([o], cfg) for o in outs)
    assert a.equals(b)  # ... the keys do not
    raw = history_keys([rec], cfg)
    assert raw["exact_hi"].to_pylist() != a["exact_hi"].to_pylist()  # the unmasked text has other keys


def test_exact_and_near_copies_of_earlier_records_are_found_with_their_earlier_id_and_shard(tmp_path):
    cfg = DedupConfig()
    old = docs(200, seed=1)
    index = index_of(old, cfg, tmp_path)
    new = docs(50, seed=2, first=1000)
    new[3]["text"] = old[17]["text"]
    near = old[40]["text"].split()
    near[10] = "changed"
    new[9]["text"] = " ".join(near)
    far = old[41]["text"].split()
    far[::3] = ["changed"] * len(far[::3])  # a third of the words changed: not a near duplicate
    new[20]["text"] = " ".join(far)
    removed, report = lookup(new, index, cfg, tmp_path)
    rows = removed.to_pylist()
    assert [(r["id"], r["duplicate_of_row"]) for r in rows] == [("r1003", 17), ("r1009", 40)]
    assert {r["duplicate_of"] for r in rows} == {None}  # the index holds no record ids
    assert rows[0]["similarity"] == 1.0 and 0.8 <= rows[1]["similarity"] < 1.0
    assert {(r["reason"], r["duplicate_of_manifest"], r["duplicate_of_shard"]) for r in rows} == {
        ("earlier_duplicate", "m-old", "train/part-00000.parquet")}
    assert rows[0]["source_line"] == 4
    assert report["removed"] == 2 and report["by_earlier"] == {"m-old": 2}


def test_records_without_words_are_never_near_matches(tmp_path):
    cfg = DedupConfig()
    old = docs(5, seed=1) + [{"_order": 9, "id": "punct", "kind": "text", "text": "!!! ???",
                              "source": {"file": "f", "line": 9}}]
    index = index_of(old, cfg, tmp_path)
    new = [{"_order": 0, "id": "other", "kind": "text", "text": "... ---", "source": {"file": "g", "line": 1}}]
    removed, _ = lookup(new, index, cfg, tmp_path)
    assert removed.num_rows == 0


def test_an_index_of_other_settings_is_refused(tmp_path):
    index = index_of(docs(5, seed=1), DedupConfig(), tmp_path)
    with pytest.raises(ValueError, match="num_perm"):
        check_index(str(index), DedupConfig(num_perm=64))
    check_index(str(index), DedupConfig(keep="longest"))  # what only the in-run decision uses may differ


def test_the_lookup_does_not_depend_on_how_the_earlier_index_is_split(tmp_path):
    cfg = DedupConfig()
    old = docs(120, seed=1)
    new = docs(30, seed=2, first=500)
    for i in range(0, 30, 3):
        new[i]["text"] = old[4 * i]["text"]
    whole, _ = lookup(new, index_of(old, cfg, tmp_path, "whole"), cfg, tmp_path)
    parts = [Earlier("m-a", str(index_of(old[:60], cfg, tmp_path, "a"))),
             Earlier("m-b", str(index_of(old[60:], cfg, tmp_path, "b")))]
    keys = tmp_path / "new_keys.parquet"
    split, report = find_earlier([str(keys)], parts, cfg, str(tmp_path))
    assert whole["id"].to_pylist() == split["id"].to_pylist() == [f"r{500 + i}" for i in range(0, 30, 3)]
    assert whole["duplicate_of_row"].to_pylist() == [4 * i for i in range(0, 30, 3)]
    assert split["duplicate_of_row"].to_pylist() == [4 * i - 60 * (4 * i >= 60) for i in range(0, 30, 3)]
    assert report["by_earlier"] == {"m-a": 5, "m-b": 5}
    assert np.all(np.array(split["similarity"].to_pylist()) == 1.0)


def test_history_keys_taken_from_phase_one_rows_equal_the_keys_computed_anew(tmp_path):
    """EarlierKeys: a record the PII step left as it was takes its phase-1 row, a changed one (its text, its
    id, a pseudonym, tools) and one phase 1 never saw are keyed anew; the table is the one computed anew."""
    from pipeline.data.dedup.history import EarlierKeys
    from pipeline.data.dedup.keys import KeysStep, write_keys

    cfg = DedupConfig()
    phase1 = docs(60, seed=5)
    phase1[7]["tools"] = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    write_keys(KeysStep(cfg, None).keys(phase1), tmp_path / "keys.parquet")
    after = copy.deepcopy(phase1)[::-1]  # another order than the file's
    after[2]["text"] = after[2]["text"].replace(" ", " <PERSON_0123456789> ", 1)  # pseudonymized
    after[4]["text"] += " changed"
    after[5]["id"] = "another id"
    next(r for r in after if r.get("tools"))["tools"][0]["function"]["name"] = "g"  # tools are text too
    after.append({**docs(1, seed=6, first=500)[0]})  # no phase-1 row
    earlier = EarlierKeys(tmp_path / "keys.parquet", cfg)
    assert (earlier.rows(np.array([0, 59, 500])) == [0, 59, -1]).all()
    assert history_keys(after, cfg, earlier).equals(history_keys(after, cfg), check_metadata=True)
    for part in (after[5:30], after[6:30]):  # with a changed record, and every record unchanged
        assert history_keys(part, cfg, earlier).equals(history_keys(part, cfg), check_metadata=True)
