"""DecontamStep: training records that share a word n-gram with an eval record, or are near duplicates of one,
are dropped (eval_ngram, eval_near_dup) and listed for the audit by reference: ids, files and lines, no text."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from pipeline.core.step import Step
from pipeline.data.decontam.index import EvalIndex, content_text
from pipeline.data.decontam.tokens import fold
from pipeline.data.dedup import REMOVED_SCHEMA


class DecontamStep(Step):
    """Checks the training records of each batch against an EvalIndex. Validation records (`_eval`: the run's
    own validation inputs) pass unchecked: they are not trained on. A record that matches both ways is counted
    once, as eval_ngram (checked first: the cheaper and the more specific test)."""

    name = "decontam"
    config_sections = ("decontam",)

    def __init__(self, index: EvalIndex):
        self.index = index
        self.removed: list[dict] = []  # audit rows, REMOVED_SCHEMA's columns

    def process(self, batch: list[dict]) -> list[dict]:
        train = [i for i, r in enumerate(batch) if not r.get("_eval")]
        texts = [fold(content_text(batch[i])) for i in train]
        match = self.index.ngram_match(texts)
        similarity = np.full(len(train), np.nan, dtype=np.float32)
        rest = np.flatnonzero(match < 0)
        near, sim = self.index.near.match([texts[i] for i in rest])
        found = near >= 0
        match[rest[found]], similarity[rest[found]] = near[found], sim[found]
        gone = set()
        for pos in np.flatnonzero(match >= 0).tolist():
            reason = "eval_ngram" if np.isnan(similarity[pos]) else "eval_near_dup"
            self.drop(reason)
            self._audit(batch[train[pos]], reason, int(match[pos]), float(similarity[pos]))
            gone.add(train[pos])
        return [r for i, r in enumerate(batch) if i not in gone] if gone else batch

    def _audit(self, record: dict, reason: str, eval_pos: int, similarity: float) -> None:
        ref = self.index.refs[eval_pos]
        source = record.get("source") or {}
        self.removed.append({
            "_order": record.get("_order"), "id": record.get("id"), "reason": reason,
            "duplicate_of": ref.id, "duplicate_of_order": None,
            "similarity": None if np.isnan(similarity) else similarity,
            "source_file": source.get("file"), "source_line": source.get("line"),
            "duplicate_of_file": ref.file, "duplicate_of_line": ref.line,
        })

    def audit_table(self) -> pa.Table:
        """The removals so far, in the dedup audit's schema (duplicate_of: the eval record's id; its file and
        line; similarity: the estimated Jaccard of a near duplicate, null for an n-gram match)."""
        return pa.Table.from_pylist(self.removed, schema=REMOVED_SCHEMA)
