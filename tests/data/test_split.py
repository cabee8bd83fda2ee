"""The validation split's choice (pipeline/data/split.py): stratified by language from (id, language) chunks, and by
each record's hash without languages."""
from collections import Counter

import numpy as np
import pyarrow.parquet as pq

from pipeline.core.config import SplitConfig
from pipeline.data.split import LangIdFiles, SplitStep, lang_ids, split_of, stratified_validation

LANGS = {"tr": 600, "ru": 300, "en": 80, "kk": 20}
ITEMS = [(f"{lang}-{i}", lang) for lang, n in LANGS.items() for i in range(n)]


def chunked(items, size):
    return [([rid for rid, _ in items[i:i + size]], [lang for _, lang in items[i:i + size]])
            for i in range(0, len(items), size)]


def test_validation_split_is_stratified_by_language():
    chosen, per_lang = stratified_validation(chunked(ITEMS, 1000), 0.05, seed=3)
    assert Counter(rid.split("-")[0] for rid in chosen) == {"tr": 30, "ru": 15, "en": 4, "kk": 1}
    assert per_lang["kk"] == {"records": 20, "validation": 1}
    # the same split in another order and chunking (another shard count), another one under another seed
    assert stratified_validation(chunked(ITEMS[::-1], 37), 0.05, seed=3)[0] == chosen
    assert stratified_validation(chunked(ITEMS, 1000), 0.05, seed=4)[0] != chosen


def test_the_choice_is_the_lowest_hashes_as_split_of_orders_them():
    from pipeline.data.split import id_hash

    chosen, _ = stratified_validation(chunked(ITEMS, 50), 0.05, seed=3)
    tr = sorted((rid for rid, lang in ITEMS if lang == "tr"), key=lambda r: id_hash(r, 3))
    assert {r for r in chosen if r.startswith("tr-")} == set(tr[:30])


def test_copies_of_an_id_go_to_one_side_and_a_fraction_of_zero_chooses_none():
    items = ITEMS + [(rid, lang) for rid, lang in ITEMS[:100]]  # dedup off: exact copies, same id
    chosen, _ = stratified_validation(chunked(items, 64), 0.1, seed=1)
    step = SplitStep(SplitConfig(), False, chosen)
    recs = step([{"id": rid} for rid, _ in items])
    sides = {}
    for rec in recs:
        assert sides.setdefault(rec["id"], rec["_split"]) == rec["_split"]
    assert stratified_validation(chunked(items, 64), 0.0)[0] == set()


def test_lang_id_files_leave_out_what_dedup_removed(tmp_path):
    import pyarrow as pa

    recs = [{"_order": (2 << 32) + i, "id": f"r{i}", "_lang": "tr" if i % 2 else "ru"} for i in range(10)]
    pq.write_table(lang_ids(recs), tmp_path / "langs.parquet")
    pq.write_table(pa.table({"_order": pa.array([(2 << 32) + 3, (1 << 32) + 3], pa.int64())}), tmp_path / "rm.parquet")
    chunks = list(LangIdFiles([str(tmp_path / "langs.parquet")], [str(tmp_path / "rm.parquet"), None], 32))
    assert chunks == [([f"r{i}" for i in range(10) if i != 3], ["tr" if i % 2 else "ru" for i in range(10) if i != 3])]


def test_without_languages_each_record_goes_by_its_own_hash_and_eval_records_go_whole():
    cfg = SplitConfig(validation_fraction=0.2, seed=9)
    recs = SplitStep(cfg, False)([{"id": rid} for rid, _ in ITEMS])
    assert all(r["_split"] == split_of(r["id"], cfg) for r in recs)
    assert 0.15 < sum(r["_split"] == "validation" for r in recs) / len(recs) < 0.25
    recs = SplitStep(cfg, True, {"tr-1"})([{"id": "tr-1"}, {"id": "x", "_eval": True}])
    assert [r["_split"] for r in recs] == ["train", "validation"]


def test_id_hashes_are_each_ids_hash_at_once():
    from pipeline.data.split import id_hash, id_hashes

    ids = ["r1", "şifre-2", "заказ", "", "x" * 300]
    assert id_hashes(ids, 7).tolist() == [id_hash(r, 7) for r in ids]
    assert id_hashes([], 7).dtype == np.uint64 and not len(id_hashes([], 7))
