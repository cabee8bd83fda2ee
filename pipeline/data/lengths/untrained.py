"""Untrainable records: chat and instruction records whose trainable (assistant) tokens all lie past the chosen
max length, or that have none, train on nothing - the trainer's labels for them are all -100 (a micro-batch of
only such records gives a NaN loss). Found after the max length is chosen and before a shard is written, and
handled by lengths.untrained: drop (the default: counted as the drop reason `untrained`), fail, or keep.

What the overflow policy does to a record decides whether it counts:
  keep          the trainer cuts the record at max_seq_len: a record over it is rendered and tokenized again
                (pipeline.data.show.view_record, the counts' own rendering) to see whether a trainable token lies
                before the cut; only the records over the max length are rendered;
  truncate_*    the truncated record keeps part of its answer (truncate_response keeps at least one piece of
                it, truncate_prompt keeps it whole), so only records without a trainable token count;
  drop          records over the max length are dropped as too_long, not written: only the others count.
Plain-text records train on every token and never count.

`prepare run` (count_untrained over the work files, then drop_untrained while writing) and `prepare precheck`
(UntrainedCheck over its sample) use the same check and say it in the same line (untrained_line).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from pipeline.core.records import from_table
from pipeline.data.lengths.step import LengthStep
from pipeline.data.show import ShowError, view_record

EXAMPLES = 5


class UntrainedCheck:
    """check(rec) -> whether a measured record (with "_tokens" and "_trainable") trains on nothing at max_len
    under the overflow policy. The tokenizer is loaded only when a record over the length must be rendered."""

    def __init__(self, cfg, max_len: int | None, token_cache: str | None):
        self.cfg, self.max_len, self.token_cache = cfg, max_len, token_cache
        self.policy = cfg.lengths.overflow
        self._handle = None

    @property
    def handle(self):
        if self._handle is None:
            self._handle = LengthStep(self.cfg.lengths, self.token_cache, model=self.cfg.estimate.model).handle
        return self._handle

    def __call__(self, rec: dict) -> bool:
        tokens, trainable = rec.get("_tokens"), rec.get("_trainable")
        if rec.get("kind") == "text" or tokens is None:
            return False
        over = bool(self.max_len) and tokens > self.max_len
        if over and self.policy == "drop":
            return False
        if not trainable:
            return True
        return (over and self.policy == "keep" and not prompt_fits(tokens, trainable, self.max_len)
                and _trainable_before_cut(self.handle, rec, self.max_len) == 0)


def prompt_fits(tokens, trainable, max_len: int):
    """Whether the record's untrained tokens are fewer than max_len (numbers or arrays): then one of its first
    max_len tokens is trainable whatever their order, and the record trains at the cut without being rendered
    (rendering needs the tokenizer, seconds to load in the process that checks)."""
    return tokens - trainable < max_len


def count_untrained(processed: list[Path], cfg, max_len: int | None, token_cache: str | None) -> dict:
    """untrained_summary over the processed work files: the cheap columns first; only records over the max
    length with trainable tokens (under overflow keep) are read whole and rendered."""
    check = UntrainedCheck(cfg, max_len, token_cache)
    total, ids = 0, []
    for path in processed:
        table = pq.read_table(path, columns=["id", "kind", "_tokens", "_trainable"])
        chat = np.asarray(table.column("kind").to_pylist(), dtype=object) != "text"
        tokens = table.column("_tokens").to_numpy(zero_copy_only=False).astype(float)
        trainable = table.column("_trainable").to_numpy(zero_copy_only=False).astype(float)
        measured = ~np.isnan(tokens)
        tokens, trainable = np.nan_to_num(tokens), np.nan_to_num(trainable)
        over = measured & (tokens > max_len) if max_len else np.zeros(len(tokens), bool)
        zero = chat & measured & (trainable == 0)
        if check.policy == "drop":
            zero &= ~over
        total += int(np.count_nonzero(zero))
        ids += [table.column("id")[int(i)].as_py() for i in np.flatnonzero(zero)[:EXAMPLES - len(ids)]]
        if check.policy == "keep" and (chat & over & (trainable > 0) & ~prompt_fits(tokens, trainable, max_len)).any():
            for rec in _over_records(path, max_len):
                if rec.get("kind") != "text" and rec.get("_trainable") and check(rec):
                    total += 1
                    ids += [rec["id"]][:EXAMPLES - len(ids)]
    return untrained_summary(total, ids, max_len, cfg.lengths.untrained)


def untrained_summary(records: int, example_ids: list[str], max_len: int | None, policy: str, **extra) -> dict:
    """report.json `lengths.untrained` (and precheck's `untrained`)."""
    return {"records": records, "example_ids": list(example_ids)[:EXAMPLES], "max_seq_len": max_len,
            "policy": policy, **extra}


def drop_untrained(records: list[dict], check: UntrainedCheck, stats) -> list[dict]:
    """The records that train on something; the others are dropped as `untrained` (lengths.untrained: drop)."""
    kept = [rec for rec in records if not check(rec)]
    if len(kept) < len(records):
        stats.drop("untrained", len(records) - len(kept))
    return kept


def _over_records(path: Path, max_len: int) -> list[dict]:
    table = pq.read_table(path, filters=[("_tokens", ">", max_len)])
    return from_table(table) if table.num_rows else []


def _trainable_before_cut(handle, rec: dict, max_len: int) -> int:
    """Trainable tokens among the first max_len, from the record's marked tokens; where the tokenizer cannot
    mark them (no offsets), as if the trainable tokens were the record's last ones (its answer ends it)."""
    try:
        return view_record(handle, rec).trainable_within(max_len)
    except ShowError:
        return max(rec["_trainable"] - (rec["_tokens"] - max_len), 0)


ACTION = {"drop": "dropped (lengths.untrained: drop)",
          "keep": "written anyway, labels all -100 (lengths.untrained: keep, --allow-untrained)",
          "fail": "`prepare run` fails before writing (lengths.untrained: fail, --strict-untrained)"}


def untrained_line(found: dict) -> str | None:
    """One line for the terminal of `prepare run` and `prepare precheck`: how many, at which length, what the
    policy does with them; None when there are none."""
    n = found["records"]
    if not n:
        return None
    about = "~" if found.get("sampled") else ""
    ids = f"; e.g. ids {', '.join(found['example_ids'][:3])}" if found["example_ids"] else ""
    return (f"untrained: {about}{n} chat/instruction record(s) have no trainable token at max_seq_len "
            f"{found['max_seq_len']}: {ACTION[found['policy']]}{ids}")


def untrained_message(found: dict) -> str:
    n, max_len = found["records"], found["max_seq_len"]
    return (f"{n} chat/instruction record(s) have no trainable token after templating and truncation at "
            f"max_seq_len {max_len} (e.g. ids {', '.join(found['example_ids'])}): their labels would all be -100 "
            f"and they train nothing; raise lengths.max_seq_len, set lengths.overflow: truncate_prompt, shorten "
            f"the prompts, set lengths.untrained: drop to drop them, or pass --allow-untrained "
            f"(lengths.untrained: keep) to write them anyway")
