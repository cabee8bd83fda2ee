"""The decontam section of the run configuration (DecontamConfig), in a module of its own until it joins
PrepareConfig in config.py."""
from __future__ import annotations

from pydantic import Field

from pipeline.core.config import Section


class DecontamConfig(Section):
    eval_sets: list[str] = Field(
        default_factory=list,
        description="Eval sets (files, folders, globs or s3:// URIs, any input format): training records that "
                    "share a word n-gram with one of their records, or are near duplicates of one, are removed. "
                    "They are only read.")
    ngram: int = Field(13, ge=5, le=50, description="Words in the n-gram a training record must share with an "
                                                    "eval record to be removed (eval_ngram).")
    near_threshold: float = Field(
        0.8, gt=0, lt=1, description="Estimated Jaccard similarity with an eval record (MinHash, as dedup) at which "
                                     "a training record is removed as its near duplicate (eval_near_dup).")

    @property
    def enabled(self) -> bool:
        """On when there is an eval set to check against: no switch of its own that could disagree."""
        return bool(self.eval_sets)
