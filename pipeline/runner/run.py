"""`run_prepare`: the whole run, in the order it happens. One orchestration serves every front end: it takes
an Executor (a local process pool by default; the Prefect flow passes one whose map() runs Prefect tasks)."""
from __future__ import annotations

import functools
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.core.config import PrepareConfig
from pipeline.core.env import set_defaults, steady_heap
from pipeline.core.progress import ProgressFile, StageProgress
from pipeline.core.stats import StageStats, merge_all
from pipeline.data.decontam import EvalIndex, read_eval_records
from pipeline.data.dedup import REMOVED_SCHEMA
from pipeline.data.readers import InputFile, expand_inputs, guessed_encoding_note, save_names
from pipeline.runner.append import check_append, read_previous, version_config
from pipeline.runner.executor import Executor, LocalExecutor
from pipeline.runner.finalize import finalize
from pipeline.runner.history import against_key, filter_against_shard, find_against, resolve_against
from pipeline.runner.phases import (
    PROGRESS_GLOBAL,
    PROGRESS_STAGES,
    ShardTask,
    check_readable,
    normalize_shard,
    plan_shards,
    process_shard,
    run_global,
    upload,
)
from pipeline.runner.preflight import refuse_empty_run
from pipeline.runner.resume import save_eval_fingerprints
from pipeline.runner.rundir import DECONTAM_REMOVED, RunDir, check_out, ensure_salt
from pipeline.runner.steps import global_steps, process_steps, stage_names
from pipeline.runner.warmup import phase3_loads, warm_process
from pipeline.runner.work import eval_index_dir, progress_dir, work_paths


@dataclass
class RunResult:
    report: dict
    run_dir: Path
    manifest_uri: str | None
    upload: dict | None = None
    reused_shards: int = 0  # shard results taken from an earlier, interrupted run


def _to_stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_prepare(cfg: PrepareConfig, executor: Executor | None = None, progress: bool = True,
                log: Callable[[str], None] = _to_stderr) -> RunResult:
    """The whole run. `log` takes the one-line messages and, with `progress`, each stage's progress: a live bar
    when the messages go to stderr and it is a terminal, else a line with count and rate every
    PREPARE_PROGRESS_INTERVAL seconds (10) and at the end of each stage (a Prefect logger, a log file)."""
    set_defaults()
    steady_heap()  # this process runs the one-worker path's batches and the global dedup
    # A refused --out, a busy run directory or an unreadable input is reported before the run directory
    # is created or touched.
    check_out(cfg.out, [*cfg.inputs, *cfg.validation_inputs])
    previous = read_previous(cfg)  # --append-to: the earlier version (runner/append.py)
    if previous is not None:
        check_append(cfg, previous, log)
        cfg = version_config(cfg, previous)
    tasks, unreadable = plan_shards(cfg, log)
    readable = []
    for task in tasks:
        task, problems = check_readable(task, cfg)
        unreadable += problems
        if task is not None:
            readable.append(task)
    eval_files = expand_inputs(cfg.decontam.eval_sets, cfg)  # an eval set that cannot be read, before any output
    with RunDir(cfg.out) as rundir:
        save_names(cfg.out)  # the map of file-name labels, only with the lock held (readers.NameMap)
        rundir.wait_for_stale_workers()
        if "pii" in stage_names(process_steps(cfg)) and not os.environ.get(cfg.pii.salt_env):
            ensure_salt(rundir.work)  # read by the workers from work/; the user's own salt is never written
        own_executor = executor is None
        executor = executor or LocalExecutor(cfg.workers, progress, str(rundir.workers_lock()))
        try:
            tty = progress and log is _to_stderr and sys.stderr.isatty()
            counts = executor.counts(progress_dir(rundir.work))
            return _run(cfg, executor, rundir, readable, eval_files, unreadable, log,
                        functools.partial(StageProgress, counts, enabled=progress, tty=tty, log=log), previous)
        finally:
            if own_executor:
                executor.close()


def _merge_stage_dicts(first: dict, second: dict) -> dict:
    merged = merge_all([[StageStats.from_dict(n, d) for n, d in part.items()] for part in (first, second)])
    return {name: st.to_dict() for name, st in merged.items()}


def _shard_result(normalized: dict, processed: dict) -> dict:
    """A shard's phase 1 and phase 3 results as one, the stats summed per shard and per file."""
    files = [{**part, "stages": _merge_stage_dicts(part["stages"], stages)}
             for part, stages in zip(normalized["files"], processed["files_stages"])]
    merged = {**normalized, **processed, "files": files,
              "stages": _merge_stage_dicts(normalized["stages"], processed["stages"])}
    del merged["files_stages"]
    return merged


EVAL_INDEX = "eval_index"  # the progress counter of the index build


def build_eval_index(cfg: PrepareConfig, work_dir: Path, files: list[InputFile] | None = None) -> Path:
    """The index of the eval sets (decontam; `files`: their expanded inputs), built once and saved for the
    workers: a folder in work/."""
    folder = eval_index_dir(work_dir)
    shutil.rmtree(folder, ignore_errors=True)  # a worker of this process may still map the last run's arrays
    counter = ProgressFile(progress_dir(work_dir), EVAL_INDEX, 0)

    def counted(records):
        n = 0
        for n, record in enumerate(records, 1):
            counter.set(n)
            yield record
        counter.set(n, final=True)

    files = expand_inputs(cfg.decontam.eval_sets, cfg) if files is None else files
    index = EvalIndex.from_records(counted(read_eval_records(files, cfg)), cfg.decontam.ngram,
                                   cfg.decontam.near_threshold)
    index.save(folder)
    save_eval_fingerprints(folder, files)  # part of phase 1's resume key
    return folder


def gather_decontam_audit(cfg: PrepareConfig, run_dir: Path, work_dir: Path, results: list[dict]) -> None:
    """decontam_removed.parquet: the shards' decontam removals (ids, files and lines; no text) in shard order,
    written whenever decontam is on; an earlier run's is removed when it is off."""
    path = run_dir / DECONTAM_REMOVED
    if not cfg.decontam.enabled:
        path.unlink(missing_ok=True)
        return
    tables = [pq.read_table(work_paths(work_dir, r["index"])["decontam"]) for r in results if r.get("has_decontam")]
    pq.write_table(pa.concat_tables(tables) if tables else REMOVED_SCHEMA.empty_table(), path, compression="zstd")


GUESSES_SHOWN = 10


def guessed_encodings(results: list[dict]) -> list[str]:
    """One line per file whose encoding was guessed (not UTF-8, not given by read.encoding); the first
    GUESSES_SHOWN, then a count: the report lists each file's encoding."""
    guessed = [(part["file"], part["encoding"]) for r in results for part in r["files"] if part["encoding_guessed"]]
    lines = [guessed_encoding_note(name, encoding) for name, encoding in guessed[:GUESSES_SHOWN]]
    if len(guessed) > GUESSES_SHOWN:
        lines.append(f"prepare: {len(guessed) - GUESSES_SHOWN} more file(s) not UTF-8 (report.json: files.*.encoding)")
    return lines


def _run(cfg: PrepareConfig, executor: Executor, rundir: RunDir, readable: list[ShardTask],
         eval_files: list[InputFile], unreadable: list[dict], log: Callable[[str], None],
         stages: Callable[..., StageProgress], previous: dict | None = None) -> RunResult:
    run_dir, work_dir = rundir.path, rundir.work
    # The old manifest goes first: from here until the new one is written, no manifest points at
    # shards that are being rewritten. Work of a killed run stays in work/ and is reused by key.
    earlier = resolve_against(cfg, work_dir)  # an unusable earlier dataset, before any output is touched
    (run_dir / "manifest.json").unlink(missing_ok=True)
    rundir.remove_stale_quarantine({f"{t.index:05d}" for t in readable})
    rundir.claim([f"quarantine/{t.index:05d}.jsonl" for t in readable])  # the workers may write these
    files = len({f.uri for t in readable for f in t.files})  # a large file is read as several byte-range shards
    log(f"prepare: {files} input file(s)" + (f" in {len(readable)} shards" if len(readable) != files else "")
        + f" -> {run_dir}")

    # 0. once, when decontam is on: the eval sets' index, which every shard of phase 1 loads
    if cfg.decontam.enabled:
        with stages({EVAL_INDEX: ("eval index", "records", None)}):
            build_eval_index(cfg, work_dir, eval_files)

    # 1. per shard: read -> normalize -> clean -> quality -> language -> decontam -> dedup, canned, language keys
    with stages({"read": ("read", "records", None)}):
        results = executor.map(normalize_shard, readable, "normalize", cfg=cfg, run_dir=str(run_dir),
                               work_dir=str(work_dir))
    gather_decontam_audit(cfg, run_dir, work_dir, results)
    candidates = sum(r["records"] for r in results)  # records that reach dedup
    for line in guessed_encodings(results):
        log(line)

    # 2. once: exact, near and leakage duplicates, canned answers, the stratified validation ids; meanwhile this
    # machine's workers load what phase 3 needs (a cluster's workers are left alone: their cores are not ours)
    if isinstance(executor, LocalExecutor) and phase3_loads(cfg):
        executor.warm(warm_process, cfg=cfg)
    has_eval = any(t.eval for t in readable)
    decisions, reports = {}, {}
    for step in global_steps(cfg, run_dir, work_dir, results, has_eval):
        with stages({step.name: (step.name, "records", candidates)} if step.name in PROGRESS_GLOBAL else {}):
            reports[step.name] = executor.call(run_global, step.name, step=step, work_dir=str(work_dir))
        decisions[step.name] = step.decision
    dedup_report, canned_report = reports.get("dedup"), reports.get("canned")

    # 3. per shard: dedup filter -> canned cap -> pii -> lengths -> split
    # absolute: workers of a cluster run in folders of their own
    token_cache = str(Path(os.environ.get("PREPARE_CACHE", ".cache/prepare")).absolute() / "tokens")
    kept = candidates - (dedup_report or {}).get("counts", {}).get("total", 0) - (canned_report or {}).get("capped", 0)
    pii_on = "pii" in stage_names(process_steps(cfg))
    residual_rate = cfg.pii.residual_sample / kept if pii_on and kept else 0.0  # probe copies per record
    on = stage_names(process_steps(cfg, residual_rate))
    with stages({name: (name, "records", kept) for name in PROGRESS_STAGES if name in on}):
        processed = executor.map(process_shard, readable, "process", cfg=cfg, work_dir=str(work_dir),
                                 removed_path=decisions.get("dedup"), has_eval=has_eval, token_cache=token_cache,
                                 canned_drop=decisions.get("canned"), validation_path=decisions.get("split"),
                                 residual_rate=residual_rate, against=tuple(against_key(earlier)))
    against_report = None
    if earlier:  # the records that duplicate an earlier dataset's, by their masked keys (runner/history.py)
        against_report = find_against(executor, cfg, str(run_dir), str(work_dir), processed, earlier)
        processed = executor.map(filter_against_shard, readable, "against", cfg=cfg, work_dir=str(work_dir),
                                 normalized=results, processed=processed)
    if against_report is not None and dedup_report is not None:
        dedup_report["against"] = against_report
    shard_results = [_shard_result(a, b) for a, b in zip(results, processed)]
    if pii_on:  # kvkk: strict on the measured residual risk, before any shard is written
        from pipeline.data.pii.residual import check_residual, measured_residual  # loads Presidio

        check_residual(cfg.pii, measured_residual(cfg.pii, shard_results))
    tokenizer_name = next((r["tokenizer"] for r in processed if r.get("tokenizer")), None)

    # 4. once: lengths summary, the zero-trainable check, shards, plan, report, manifest last
    to_write = sum(r["stages"]["split"]["records_out"] for r in processed)
    with stages({"write": ("write", "records", to_write)}):
        rep = executor.call(finalize, "finalize", cfg=cfg, run_dir=str(run_dir), work_dir=str(work_dir),
                            shard_results=shard_results, dedup_report=dedup_report,
                            tokenizer_name=tokenizer_name, token_cache=token_cache, unreadable=unreadable,
                            canned=canned_report, split=reports.get("split"), previous=previous)
    reused = sum(bool(r.get("reused")) for r in results + processed)
    if reused:
        log(f"prepare: reused {reused} shard result(s) finished by an earlier run")
    refuse_empty_run(cfg, run_dir, rep)  # before the upload: no record kept fails the run unless allow_empty

    # 5. optional: the upload, shards first and the manifest last
    uploaded = None
    if cfg.s3:
        with stages({"upload": ("upload", "files", None)}):
            uploaded = executor.call(upload, "upload", cfg=cfg, run_dir=str(run_dir), work_dir=str(work_dir))
    if uploaded:
        log(f"prepare: uploaded {len(uploaded['uploaded'])} object(s), {len(uploaded['skipped'])} unchanged"
            + (f", {len(uploaded['removed'])} stale shard(s) of an earlier run removed" if uploaded["removed"] else ""))
    rundir.remove_work()  # with the run's salt in it
    return RunResult(rep, run_dir, uploaded and uploaded["manifest_uri"], uploaded, reused)
