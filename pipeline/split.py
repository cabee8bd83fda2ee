"""Train/validation split: deterministic per record id and seed, so a re-run or another shard count
gives the same split, and exact duplicates (same id) always land on the same side."""
from __future__ import annotations

import hashlib

from .config import SplitConfig
from .step import Step


def split_of(record_id: str, cfg: SplitConfig) -> str:
    digest = hashlib.blake2b(f"{cfg.seed}:{record_id}".encode(), digest_size=8).digest()
    return "validation" if int.from_bytes(digest, "big") / 2**64 < cfg.validation_fraction else "train"


class SplitStep(Step):
    """Sets rec["_split"]. Records from user-given validation inputs ("_eval") go to validation whole;
    when such inputs are given, the random validation fraction is not taken from train."""

    name = "split"
    config_sections = ("split",)

    def __init__(self, cfg: SplitConfig, has_eval_inputs: bool):
        self.cfg, self.has_eval_inputs = cfg, has_eval_inputs

    def process(self, batch: list[dict]) -> list[dict]:
        for rec in batch:
            if rec.get("_eval"):
                rec["_split"] = "validation"
            elif self.has_eval_inputs:
                rec["_split"] = "train"
            else:
                rec["_split"] = split_of(rec["id"], self.cfg)
            self.stats.add(f"splits.{rec['_split']}")
        return batch
