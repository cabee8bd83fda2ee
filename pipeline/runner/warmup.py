"""Phase 3's loads, made in the workers while they wait for phase 2.

Phase 2 (the global dedup, canned answers, the validation choice) runs in the main process; the workers idle
through it, then each pays the PII engine's imports and the tokenizer's load (~3-5 CPU-s) at its first phase-3
task, on both cores at once. `warm_process` makes those loads ahead, in a thread at the lowest priority, so that
they take what the main process leaves of the cores instead of slowing phase 2. Loads only: no text goes through
a step, so no cache a step counts (PII's text cache, the token-length cache) holds anything more after it.
"""
from __future__ import annotations

import os
import sys
import threading

from pipeline.core.config import PrepareConfig
from pipeline.data.lengths.step import LengthStep

LOWEST_PRIORITY = 19  # nice: the thread runs only where no other process wants the core


def phase3_loads(cfg: PrepareConfig) -> bool:
    """Whether phase 3 has a load worth making ahead (the PII engine, a tokenizer)."""
    return cfg.pii.enabled or cfg.lengths.enabled


def warm_process(cfg: PrepareConfig) -> None:
    """Load what phase 3's steps load once per process (the PII engine, the tokenizer), at the lowest priority;
    the calling thread keeps its own. A load that fails is left to the shard task, which meets it and says so."""
    thread = threading.Thread(target=_load, args=(cfg,), name="prepare-warm-up", daemon=True)
    thread.start()
    thread.join()


def _load(cfg: PrepareConfig) -> None:
    if sys.platform == "linux":  # a thread id as the "process" of setpriority: this thread alone, on Linux only
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), LOWEST_PRIORITY)
    try:
        if cfg.pii.enabled:
            from pipeline.data.pii import PiiStep  # seconds to import: only when the step is on

            PiiStep(cfg.pii, salt=b"warm-up").detector  # noqa: B018 - the engine, cached per process
        if cfg.lengths.enabled:
            # no cache folder: the step's token-length cache is neither read nor written
            LengthStep(cfg.lengths, None, model=cfg.estimate.model).handle  # noqa: B018 - cached per process
    except Exception:  # noqa: BLE001, S110 - the shard task loads again and reports the failure as its own
        pass
