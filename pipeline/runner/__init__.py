"""The whole prepare path, in phases that map over input shards:

    1. normalize_shard  (per input shard, parallel): read -> normalize -> clean -> quality -> language ->
                        dedup keys, canned-answer keys, (id, language)
    2. run_global       (global, from the small key files, once per step): exact + near + leakage duplicates,
                        canned answers past the cap, the validation ids stratified by language
    3. process_shard    (per input shard, parallel): dedup filter -> canned cap -> pii -> lengths -> split
    4. finalize         (global): lengths summary, max length, zero-trainable check, overflow policy, Parquet
                        shards (write step), GPU plan, report, manifest (last, atomic)
    5. upload           (optional): shards, then the manifest

Modules: run (run_prepare, the outline in run order), steps (each phase's list of steps, built from the config
by one function per phase), phases (the phase functions), finalize (phase 4 in named parts), executor (where
phases run), resume (the shard result cache and its keys), work (the work folder's files), history (--against
and the dedup index), append (--append-to: a new version of an earlier dataset). Steps themselves are
pipeline.core.step.Step (and GlobalStep) subclasses.
"""
from pipeline.core.errors import PrepareError
from pipeline.runner.executor import Executor, LocalExecutor
from pipeline.runner.finalize import finalize
from pipeline.runner.phases import (
    ShardTask,
    check_readable,
    normalize_shard,
    plan_shards,
    process_shard,
    run_global,
    upload,
)
from pipeline.runner.resume import code_version
from pipeline.runner.run import RunResult, run_prepare
from pipeline.runner.work import INTERNAL_COLUMNS, PROCESSED_COLUMNS, progress_dir, work_paths

__all__ = ["Executor", "INTERNAL_COLUMNS", "LocalExecutor", "PROCESSED_COLUMNS", "PrepareError", "RunResult",
           "ShardTask", "check_readable", "code_version", "finalize", "normalize_shard", "plan_shards",
           "process_shard", "progress_dir", "run_global", "run_prepare", "upload", "work_paths"]
