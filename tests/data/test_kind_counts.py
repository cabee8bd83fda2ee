"""The manifest's per-kind counts (pipeline.data.kind_counts) and the packed sequences a trainer makes."""
from __future__ import annotations

import numpy as np
import pytest

from pipeline.data.kind_counts import KindCounts
from pipeline.data.lengths.packing import pack_bfd, packed_sequences_as_trainer, packing_as_trained, packing_summary


@pytest.mark.parametrize("seed", range(3))
def test_the_packed_sequences_are_trls_own_count(seed):
    """trl's SFTTrainer packs through pack_dataset in datasets' map batches of 1,000 rows: the count is trl's
    exactly, where one best-fit-decreasing pass over the whole set (what the plan counted) packs fewer."""
    pytest.importorskip("trl")
    from datasets import Dataset
    from trl.data_utils import pack_dataset

    rng = np.random.default_rng(seed)
    length = 512
    x = np.maximum(1, rng.lognormal(5.0, 0.9, 2600).astype(np.int64))
    x[::97] = 2 * length  # over-long records: trl's bfd cuts them, as the count does
    rows = {"input_ids": [[1] * int(n) for n in x]}
    rows["labels"] = rows["input_ids"]
    packed = pack_dataset(Dataset.from_dict(rows), length, "bfd")
    assert packed_sequences_as_trainer(x, length) == len(packed)
    assert int(pack_bfd(x, length).max()) + 1 < len(packed)


def test_counts_per_kind_and_split_from_records_and_from_tables():
    import pyarrow as pa

    def rec(split, text, tokens):
        return {"_split": split, "messages": None if text else [{"role": "user", "content": "x"}], "_tokens": tokens}

    records = [rec("train", False, 300), rec("train", True, 700), rec("train", False, 200),
               rec("validation", False, 100), rec("train", True, 50)]
    by_dicts = KindCounts()
    by_dicts.add_records(records)
    by_table = KindCounts()
    by_table.add_table(pa.table({"_split": [r["_split"] for r in records],
                                 "messages": [None if r["messages"] is None else "[]" for r in records],
                                 "_tokens": [r["_tokens"] for r in records]}))
    expected = {"chat": {"train": {"records": 2, "tokens": 500, "tokens_cut": 0, "packed_sequences": 1},
                         "validation": {"records": 1, "tokens": 100, "tokens_cut": 0}},
                "text": {"train": {"records": 2, "tokens": 750, "tokens_cut": 188, "packed_sequences": 2}}}
    assert by_dicts.summary(512) == by_table.summary(512) == expected
    # without the lengths step: records only
    unmeasured = KindCounts()
    unmeasured.add_records([{**r, "_tokens": None} for r in records])
    assert unmeasured.summary(None)["text"] == {"train": {"records": 2}}


def test_the_run_packing_is_each_kinds_as_trained():
    """The report's packing (what the plan times) is the kinds packed apart in the trainer's batches: steps per
    epoch are each kind's ceil added (trl trains each kind from its own config), not one whole-set packing."""
    rng = np.random.default_rng(0)
    chat, text = rng.integers(20, 300, 1500), rng.integers(100, 700, 90)
    whole = packing_summary(np.concatenate([chat, text]), 512, 8)
    kinds = {"chat": {"train": {"records": 1500, "tokens": int(chat.sum()), "tokens_cut": 0,
                                "packed_sequences": packed_sequences_as_trainer(chat, 512)}},
             "text": {"train": {"records": 90, "tokens": int(text.sum()),
                                "tokens_cut": int(np.maximum(text - 512, 0).sum()),
                                "packed_sequences": packed_sequences_as_trainer(text, 512)},
                      "validation": {"records": 5}}}
    packing = packing_as_trained(whole, kinds, 8)
    per_kind = [kinds[k]["train"]["packed_sequences"] for k in ("chat", "text")]
    assert packing["by_kind"] == {"chat": per_kind[0], "text": per_kind[1]}
    assert packing["packed_sequences"] == packing["sequences_per_epoch"] == sum(per_kind) > whole["packed_sequences"]
    assert packing["steps_per_epoch"] == -(-per_kind[0] // 8) + -(-per_kind[1] // 8)
    assert packing["one_stream_sequences"] == whole["packed_sequences"]
    kept = int(chat.sum()) + int(np.minimum(text, 512).sum())
    assert packing["tokens"] == kept and packing["tokens_per_epoch"] == sum(per_kind) * 512
    assert packing["packing_efficiency"] == round(kept / (sum(per_kind) * 512), 6)
    # a kind without the counts (lengths sampled, or no max length): the whole-set figures stay
    del kinds["text"]["train"]["packed_sequences"]
    assert packing_as_trained(whole, kinds, 8) is whole
