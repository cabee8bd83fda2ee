"""The records and tokens of each kind (chat: records with messages, text: without) and split of what the write
step wrote, for the manifest: trainers take chat and text records as separate datasets, so the hand-off
(pipeline.train) needs each kind's counts and the packed sequences a trainer makes of it, also where the shards
hold both kinds."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.data.lengths.packing import packed_sequences_as_trainer

KINDS = ("chat", "text")
SPLITS = ("train", "validation")


class KindCounts:
    """Token counts (None where unmeasured) per (split, kind), in the order the records were written."""

    def __init__(self):
        self._tokens: dict[tuple[str, str], list] = {}

    def add_records(self, records: list[dict]) -> None:
        for r in records:
            kind = "text" if r.get("messages") is None else "chat"
            self._tokens.setdefault((r["_split"], kind), []).append(r.get("_tokens"))

    def add_table(self, table: pa.Table) -> None:
        """Rows with the work file's _split, messages and _tokens columns."""
        is_text = pc.is_null(table.column("messages")).to_numpy(zero_copy_only=False)
        splits = table.column("_split").to_numpy(zero_copy_only=False)
        tokens = table.column("_tokens").to_pylist() if "_tokens" in table.column_names else [None] * len(table)
        for split in SPLITS:
            for kind, mask in (("chat", ~is_text), ("text", is_text)):
                rows = np.flatnonzero((splits == split) & mask)
                if rows.size:
                    self._tokens.setdefault((split, kind), []).extend(tokens[i] for i in rows)

    def summary(self, max_len: int | None) -> dict:
        """kind -> split -> {records, tokens?, tokens_cut?, packed_sequences?}, for the kinds written. Tokens
        where every record was measured; at max_len, the tokens the trainer cuts from over-long records and, for
        train, the packed sequences it makes (pipeline.data.lengths.packing.packed_sequences_as_trainer)."""
        out: dict = {}
        for kind in KINDS:
            for split in SPLITS:
                values = self._tokens.get((split, kind))
                if not values:
                    continue
                entry = {"records": len(values)}
                if all(v is not None for v in values):
                    x = np.asarray(values, dtype=np.int64)
                    entry["tokens"] = int(x.sum())
                    if max_len:
                        entry["tokens_cut"] = int(np.maximum(x - max_len, 0).sum())
                        if split == "train":
                            entry["packed_sequences"] = packed_sequences_as_trainer(x, max_len)
                out.setdefault(kind, {})[split] = entry
        return out
