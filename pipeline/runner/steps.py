"""Each phase's step list, built from the config by one function per phase. The run builds its steps from
these lists, a shard's resume key is made of them (step.config_key), and a step that is off is simply not in
its list: no step looks at an `enabled` of its own (tests/runner/test_phases_contract.py runs each list as
built here).

    phase 1, per input file   read -> normalize -> clean -> quality -> language -> decontam
                                                                                       normalize_steps().files
             per shard        the global stages' keys: dedup, canned answers, split   normalize_steps().keys
    phase 2, once             dedup clustering -> canned answers -> validation choice  global_steps()
    phase 3, per shard        dedup -> canned cap -> pii residual probe -> pii -> history keys -> lengths -> split
                                                                                       process_steps()
    phase 4, once             write (finalize.write_shards, shards.WriteStep)
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

from pipeline.core.config import PrepareConfig
from pipeline.core.step import GlobalStep, Planned
from pipeline.data import dedup
from pipeline.data.decontam import DecontamStep, EvalIndex
from pipeline.data.decontam.index import INDEX_META
from pipeline.data.dedup.history import HistoryKeysStep
from pipeline.data.lang import LanguageStep
from pipeline.data.lengths.step import LengthStep
from pipeline.data.normalize import ORDER_SHIFT, front_steps
from pipeline.data.quality import CannedAnswers, CannedKeysStep, CannedStep
from pipeline.data.split import LanguageIdsStep, SplitStep, ValidationChoice
from pipeline.runner.work import work_paths

# --- phase 1 ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KeySinks:
    """Where phase 1's key steps of a shard write: its dedup keys, canned-answer keys and (id, language)."""
    keys: Callable
    canned: Callable
    langs: Callable


@dataclass(frozen=True)
class NormalizePlan:
    files: list[Planned]  # over each input file (built with a normalize.FileAt), its reader first
    keys: list[Planned]  # over the shard's records (built with KeySinks): what phase 2 decides from

    @property
    def steps(self) -> list[Planned]:
        return [*self.files, *self.keys]


def canned_on(cfg: PrepareConfig) -> bool:
    return cfg.quality.enabled and cfg.quality.canned != "off"


def normalize_steps(cfg: PrepareConfig, eval_index: str | None = None) -> NormalizePlan:
    """Phase 1. The language and decontam steps come last of a file's steps: a record dropped for its language
    or as an eval set's copy is no dedup candidate (nor PII work), and the split can be stratified by language
    once the duplicates are known. `eval_index`: the folder of the run's EvalIndex (run.build_eval_index),
    needed to build the decontam step, not to list it."""
    files = front_steps(cfg)
    if cfg.filters.detect_language:
        files.append(Planned(LanguageStep, lambda at: LanguageStep(cfg.filters)))
    if cfg.decontam.enabled:
        files.append(Planned(DecontamStep, lambda at: DecontamStep(load_eval_index(eval_index))))
    keys = []
    if cfg.dedup.enabled:
        keys.append(Planned(dedup.KeysStep, lambda sinks: dedup.KeysStep(cfg.dedup, sinks.keys)))
    if canned_on(cfg):
        keys.append(Planned(CannedKeysStep, lambda sinks: CannedKeysStep(sinks.canned)))
    if cfg.filters.detect_language:  # the split is stratified by language
        keys.append(Planned(LanguageIdsStep, lambda sinks: LanguageIdsStep(sinks.langs)))
    return NormalizePlan(files, keys)


def load_eval_index(folder: str | None) -> EvalIndex:
    """The run's eval index, loaded once per worker process for all its files (its arrays memory-mapped)."""
    if folder is None:
        raise ValueError("the decontam step needs the run's eval index (normalize_steps' eval_index)")
    stamp = os.stat(Path(folder) / INDEX_META).st_mtime_ns  # a later run in this process rebuilds it in place
    return _load_eval_index(folder, stamp)


@lru_cache(maxsize=1)
def _load_eval_index(folder: str, stamp: int) -> EvalIndex:
    return EvalIndex.load(folder)


# --- phase 2 ----------------------------------------------------------------------------------------------

def global_steps(cfg: PrepareConfig, run_dir: Path, work_dir: Path, results: list[dict],
                 has_eval: bool) -> list[GlobalStep]:
    """Phase 2, from phase 1's shard results (`results`): each step reads the shards' key files and writes the
    decision file (its `decision`) that its phase-3 step reads; a later one reads the earlier ones' too."""
    def key_files(kind: str) -> list[str]:
        return [str(work_paths(work_dir, r["index"])[kind]) for r in results if r[f"has_{kind}"]]

    steps: list[GlobalStep] = []
    removed = canned_drop = None
    if cfg.dedup.enabled:
        removed = str(run_dir / "dedup_removed.parquet")
        steps.append(dedup.DedupClusters(cfg.dedup, key_files("keys"), str(work_dir), removed))
    if canned_on(cfg):
        canned_drop = str(work_dir / "canned_drop.parquet")
        steps.append(CannedAnswers(cfg.quality, key_files("canned"), removed, canned_drop))
    if cfg.filters.detect_language and not has_eval:  # validation inputs: no random share is taken
        steps.append(ValidationChoice(cfg.split, key_files("langs"), [removed, canned_drop],
                                      str(work_dir / "validation_ids.parquet"), ORDER_SHIFT))
    return steps


# --- phase 3 ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ShardDecisions:
    """What phase 3's steps of a shard are built with: the global decisions as they concern it."""
    index: int
    has_eval: bool
    removed: dict[int, str]  # _order -> reason: the dedup audit's records of this shard
    canned_drop: str | None
    validation_ids: set[str] | None
    salt: bytes | None
    token_cache: str | None
    history_keys: Callable | None = None  # where the masked keys of the dataset's index go (dedup.history)
    phase1_keys: str | None = None  # the shard's phase-1 dedup key file: rows the history keys can reuse


def process_steps(cfg: PrepareConfig, residual_rate: float = 0.0) -> list[Planned]:
    """Phase 3; the residual-risk probe (pipeline/data/pii/residual.py) takes residual_rate copies per record
    of what the PII step gets, and is off at 0."""
    steps = []
    if cfg.dedup.enabled:
        steps.append(Planned(dedup.DedupFilter, lambda at: dedup.DedupFilter(at.removed)))
    if canned_on(cfg):
        steps.append(Planned(CannedStep, lambda at: CannedStep(at.canned_drop, at.index, ORDER_SHIFT)))
    if cfg.pii.enabled:  # PII routes each record by its meta.lang (phase 1's language step)
        from pipeline.data.pii import PiiStep  # seconds to import: only when the step is on
        from pipeline.data.pii.residual import ResidualProbe

        if residual_rate:
            steps.append(Planned(ResidualProbe,
                                 lambda at: ResidualProbe(cfg.pii, at.salt, cfg.split.seed, residual_rate)))
        steps.append(Planned(PiiStep, lambda at: PiiStep(cfg.pii, salt=at.salt)))
    if cfg.dedup.enabled:  # keys of the text as the PII step leaves it (dedup/history.py says why here)
        steps.append(Planned(HistoryKeysStep, lambda at: HistoryKeysStep(cfg.dedup, at.history_keys, at.phase1_keys)))
    if cfg.lengths.enabled:
        steps.append(Planned(LengthStep, lambda at: LengthStep(cfg.lengths, at.token_cache, model=cfg.estimate.model)))
    steps.append(Planned(SplitStep, lambda at: SplitStep(cfg.split, at.has_eval, at.validation_ids)))
    return steps


def stage_names(plan: list[Planned]) -> set[str]:
    return {p.cls.name for p in plan}
