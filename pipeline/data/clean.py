"""The clean step: records below the configured length floors are dropped and counted."""
from __future__ import annotations

from pipeline.core.step import Step
from pipeline.core.textnorm import answer_chars, content_chars


class CleanStep(Step):
    """Drops records below the length floors (too_short / empty_response)."""

    name = "clean"
    config_sections = ("clean",)

    def __init__(self, cfg):
        self.cfg = cfg

    def process(self, batch: list[dict]) -> list[dict]:
        kept = []
        for rec in batch:
            if content_chars(rec) < self.cfg.min_chars:
                self.drop("too_short")
            elif rec["kind"] != "text" and answer_chars(rec) < self.cfg.min_assistant_chars:
                self.drop("empty_response")
            else:
                kept.append(rec)
        return kept
