"""The manifest's per-kind counts (pipeline.data.kind_counts) and the packed sequences a trainer makes."""
from __future__ import annotations

import numpy as np
import pytest

from pipeline.data.kind_counts import KindCounts
from pipeline.data.lengths.packing import pack_bfd, packed_sequences_as_trainer


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
