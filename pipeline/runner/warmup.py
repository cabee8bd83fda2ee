"""Phase 3's loads, made in the workers while they wait for phase 2.

Phase 2 (the global dedup, canned answers, the validation choice) runs in the main process; the workers idle
through it, then each pays the PII engine's imports and the tokenizer's load (~3-5 CPU-s) at its first phase-3
task, on both cores at once. `warm_process` makes those loads ahead, beside phase 2, which leaves one core idle.
At the workers' own priority: at the lowest, a warm-up starved by other processes on a shared machine (6 s for
3 CPU-s at load 2.4) held back the shard tasks queued behind it. Loads only: no text goes through a step, so no
cache a step counts (PII's text cache, the token-length cache) holds anything more after it.
"""
from __future__ import annotations

from pipeline.core.config import PrepareConfig
from pipeline.data.lengths.step import LengthStep


def phase3_loads(cfg: PrepareConfig) -> bool:
    """Whether phase 3 has a load worth making ahead (the PII engine, a tokenizer)."""
    return cfg.pii.enabled or cfg.lengths.enabled


def warm_process(cfg: PrepareConfig) -> None:
    """Load what phase 3's steps load once per process (the PII engine, the tokenizer). A load that fails is left
    to the shard task, which meets it and says so."""
    try:
        if cfg.pii.enabled:
            from pipeline.data.pii import PiiStep  # seconds to import: only when the step is on

            PiiStep(cfg.pii, salt=b"warm-up").detector  # noqa: B018 - the engine, cached per process
        if cfg.lengths.enabled:
            # no cache folder: the step's token-length cache is neither read nor written
            LengthStep(cfg.lengths, None, model=cfg.estimate.model).handle  # noqa: B018 - cached per process
    except Exception:  # noqa: BLE001, S110 - the shard task loads again and reports the failure as its own
        pass
