"""The zero-trainable check of `prepare run`: chat and instruction records whose trainable (assistant) tokens
all lie past the chosen max length, or that have none, train on nothing - the trainer's labels for them are all
-100 (a micro-batch of only such records gives a NaN loss). Counted after the max length is chosen and before
a shard is written.

What the overflow policy does to a record decides whether it counts:
  keep, split   the trainer cuts the record at max_seq_len (split leaves chat records whole): a record over it
                is rendered and tokenized again (pipeline.show.view_record, the counts' own rendering) to see
                whether a trainable token lies before the cut; only the records over the max length are read;
  truncate_*    the truncated record keeps part of its answer (truncate_response keeps at least one piece of
                it, truncate_prompt keeps it whole), so only records without a trainable token count;
  drop          records over the max length are dropped, not written: only the others count.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

EXAMPLES = 5


def count_untrained(processed: list[Path], cfg, max_len: int | None, token_cache: str | None) -> dict:
    """{"records": n, "example_ids": [up to 5], "max_seq_len": max_len} over the processed work files."""
    policy = cfg.lengths.overflow
    total, ids = 0, []
    handle = None

    def add(rid: str) -> None:
        nonlocal total
        total += 1
        if len(ids) < EXAMPLES:
            ids.append(rid)

    for path in processed:
        table = pq.read_table(path, columns=["id", "kind", "_tokens", "_trainable"])
        chat = np.asarray(table.column("kind").to_pylist(), dtype=object) != "text"
        tokens = table.column("_tokens").to_numpy(zero_copy_only=False)
        trainable = table.column("_trainable").to_numpy(zero_copy_only=False)
        measured = ~np.isnan(tokens.astype(float))
        tokens, trainable = np.nan_to_num(tokens.astype(float)), np.nan_to_num(trainable.astype(float))
        over = measured & (tokens > max_len) if max_len else np.zeros(len(tokens), bool)
        zero = chat & measured & (trainable == 0)
        if policy == "drop":
            zero &= ~over
        for rid in np.asarray(table.column("id").to_pylist(), dtype=object)[zero]:
            add(rid)
        if policy in ("keep", "split") and (chat & over & (trainable > 0)).any():
            if handle is None:
                from .step import LengthStep

                handle = LengthStep(cfg.lengths, token_cache, model=cfg.estimate.model).handle
            for rec in _over_records(path, max_len):
                if rec.get("kind") != "text" and (rec.get("_trainable") or 0) > 0 and \
                        _trainable_before_cut(handle, rec, max_len) == 0:
                    add(rec["id"])
    return {"records": total, "example_ids": ids, "max_seq_len": max_len}


def _over_records(path: Path, max_len: int) -> list[dict]:
    from pipeline.records import from_table

    table = pq.read_table(path, filters=[("_tokens", ">", max_len)])
    return from_table(table) if table.num_rows else []


def _trainable_before_cut(handle, rec: dict, max_len: int) -> int:
    """Trainable tokens among the first max_len, from the record's marked tokens; where the tokenizer cannot
    mark them (no offsets), as if the trainable tokens were the record's last ones (its answer ends it)."""
    from pipeline.show import ShowError, view_record

    try:
        return view_record(handle, rec).trainable_within(max_len)
    except ShowError:
        return max(rec["_trainable"] - (rec["_tokens"] - max_len), 0)


def untrained_message(found: dict, max_len: int | None) -> str:
    n = found["records"]
    return (f"{n} chat/instruction record(s) have no trainable token after templating and truncation at "
            f"max_seq_len {max_len} (e.g. ids {', '.join(found['example_ids'])}): their labels would all be -100 "
            f"and they train nothing; raise lengths.max_seq_len, set lengths.overflow: truncate_prompt, shorten "
            f"the prompts, or pass --allow-untrained (lengths.allow_untrained) to write them anyway")
