"""The whole prepare path, in phases that map over input shards:

    1. normalize_shard  (per input file, parallel): read -> normalize -> clean -> dedup keys
    2. find_duplicates  (global, from the small key files): exact + near + leakage decisions
    3. process_shard    (per input file, parallel): drop duplicates -> pii -> lengths -> split
    4. finalize         (global): length histogram, max length, overflow policy, Parquet shards,
                        report, GPU plan, manifest (last, atomic)
    5. upload           (optional): shards, then the manifest

One orchestration serves every front end: `run_prepare` takes an Executor, a local process pool by
default; the Prefect flow passes one whose map() runs Prefect tasks. Phase functions take and return
small, picklable values (paths, counts), never records.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from . import report
from .config import PrepareConfig
from .normalize import ORDER_SHIFT, Normalizer
from .progress import ProgressFile, StageProgress
from .preflight import disk_full, refuse_empty_run, unsupported_files
from .readers import (FileReader, InputFile, UnreadableInput, expand_inputs, parquet_batch_rows, save_names,
                      shown_config, split_ranges)
from .records import from_table, to_table
from .rundir import PrepareError, RunDir, check_out, ensure_salt, is_inside, read_salt, worker_init
from .shards import ShardWriter, atomic_write_text, build_manifest, sha256_file, write_manifest
from .split import SplitStep
from .stats import StageStats, merge_all

INTERNAL_COLUMNS = {"_order": pa.int64(), "_eval": pa.bool_()}
PROCESSED_COLUMNS = {**INTERNAL_COLUMNS, "_split": pa.string(), "_tokens": pa.int32(), "_trainable": pa.int32()}


@dataclass(frozen=True)
class ShardTask:
    index: int
    file: InputFile
    eval: bool

    @property
    def label(self) -> str:
        f = self.file
        return f.name if not f.start and f.end is None else f"{f.name}@{f.first_line}"


class Executor(Protocol):
    def map(self, fn: Callable, items: list, label: str, **kwargs) -> list: ...
    def call(self, fn: Callable, label: str, **kwargs) -> Any: ...


class LocalExecutor:
    """Worker processes on this machine; inline when there is one worker or one item. The workers die
    with this process and hold a shared lock on `workers_lock` while alive (rundir.worker_init)."""

    def __init__(self, workers: int, progress: bool = True, workers_lock: str | None = None):
        self.workers, self.progress, self.workers_lock = workers, progress, workers_lock
        self._pool: ProcessPoolExecutor | None = None

    def map(self, fn: Callable, items: list, label: str, **kwargs) -> list:
        # progress is per stage and in records (progress.StageProgress around each phase), not per shard here
        if self.workers <= 1 or len(items) <= 1:
            return [fn(item, **kwargs) for item in items]
        if self._pool is None:
            import multiprocessing

            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=worker_init,
                                             initargs=(os.getpid(), self.workers_lock))
        futures = {self._pool.submit(fn, item, **kwargs): i for i, item in enumerate(items)}
        results: list[Any] = [None] * len(items)
        for future in as_completed(futures):
            results[futures[future]] = future.result()
        return results

    def call(self, fn: Callable, label: str, **kwargs) -> Any:
        return fn(**kwargs)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None


# --- phase 1 ----------------------------------------------------------------------------------------

def work_paths(work_dir: str | Path, index: int) -> dict[str, Path]:
    work = Path(work_dir)
    return {name: work / name / f"{index:05d}.parquet" for name in ("normalized", "keys", "processed")}


def progress_dir(work_dir: str | Path) -> Path:
    """Where workers leave their running record counts (progress.ProgressFile) for the main process."""
    return Path(work_dir) / "progress"


# --- resume: a finished shard's result is saved with a key of everything it depends on -------------

@lru_cache(maxsize=1)
def code_version() -> str:
    """Hash of the pipeline's code and data files: cached shard work is reused only by the same code."""
    digest = hashlib.blake2b(digest_size=16)
    root = Path(__file__).parent
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _fingerprint(f: InputFile) -> dict:
    if f.is_s3:
        from .s3 import head

        return {"uri": f.uri, **head(f.uri)}
    st = os.stat(f.uri)
    return {"uri": os.path.abspath(f.uri), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "start": f.start,
            "end": f.end}


def _key(*parts) -> str:
    return hashlib.blake2b(json.dumps(parts, sort_keys=True, default=str).encode(), digest_size=16).hexdigest()


def _cached(work_dir: str, name: str, key: str) -> dict | None:
    path = Path(work_dir) / "results" / f"{name}.json"
    if path.exists():
        saved = json.loads(path.read_text())
        if saved.get("key") == key:
            return {**saved["result"], "reused": True}
    return None


def _save(work_dir: str, name: str, key: str, result: dict) -> dict:
    atomic_write_text(Path(work_dir) / "results" / f"{name}.json", json.dumps({"key": key, "result": result}))
    return result


def _shard_errors(phase: str):
    """Name the failing shard and phase in the error; no exception text (it may quote record content)."""
    def wrap(fn):
        @functools.wraps(fn)
        def run(task: ShardTask, *args, **kwargs):
            try:
                return fn(task, *args, **kwargs)
            except (PrepareError, UnreadableInput):
                raise
            except Exception as exc:
                if disk_full(exc):  # the disk, not the data: "normalize failed (OSError)" hid it
                    raise PrepareError(f"no space left on device writing {kwargs.get('work_dir')}") from None
                if type(exc).__name__ == "PiiPolicyError" or os.environ.get("PREPARE_DEBUG") == "1":
                    raise  # PREPARE_DEBUG=1: the full error, for debugging on data you may see
                raise PrepareError(f"{task.label}: {phase} failed ({type(exc).__name__})") from None
        return run
    return wrap


def _normalize_key(task: ShardTask, cfg: PrepareConfig) -> str:
    return _key(code_version(), _fingerprint(task.file), task.index, task.eval,
                cfg.model_dump(include={"read", "formats", "clean", "dedup"}, mode="json"))


@_shard_errors("normalize")
def normalize_shard(task: ShardTask, cfg: PrepareConfig, run_dir: str, work_dir: str) -> dict:
    """Read one input, convert every row to a canonical record or a counted quarantine/drop reason,
    write the records and their dedup keys to the work folder. Quarantine files hold references
    (file, line, reason), never content. A shard finished by an earlier (killed) run is reused."""
    key = _normalize_key(task, cfg)
    quarantine_path = Path(run_dir) / "quarantine" / f"{task.index:05d}.jsonl"
    cached = _cached(work_dir, f"normalize-{task.index:05d}", key)
    counter = ProgressFile(progress_dir(work_dir), "read", task.index)
    if cached is not None and (quarantine_path.exists() or not cached.get("quarantined_rows")):
        counter.set(cached["stages"]["read"]["records_in"], final=True)
        return cached
    paths = work_paths(work_dir, task.index)
    for p in paths.values():
        p.parent.mkdir(parents=True, exist_ok=True)
    quarantine_path.parent.mkdir(parents=True, exist_ok=True)  # the folder is always there, maybe empty
    quarantine_path.unlink(missing_ok=True)  # an earlier run's; a shard without rejected rows writes none
    writers: dict[str, pq.ParquetWriter] = {}
    keys_stats = StageStats("dedup")  # time of the per-shard dedup keys; records are counted in process_shard
    with _LazyFile(quarantine_path) as quarantine:
        def reject(line: int, reason: str) -> None:
            quarantine.write(json.dumps({"file": task.file.name, "line": line, "reason": reason}) + "\n")

        normalizer = Normalizer(task.file, cfg, task.index, task.eval, reject)
        for records in normalizer.batches():
            counter.set(normalizer.read.records_in)
            _append(writers, "normalized", paths["normalized"], to_table(records, INTERNAL_COLUMNS))
            if cfg.dedup.enabled:
                from . import dedup

                with keys_stats.timer():
                    _append(writers, "keys", paths["keys"], dedup.compute_keys(records, cfg.dedup))
    counter.set(normalizer.read.records_in, final=True)
    for w in writers.values():
        w.close()
    for name, path in paths.items():  # outputs of an earlier run that this one did not produce
        if name not in writers and name != "processed":
            path.unlink(missing_ok=True)
    reader = normalizer.reader
    _slow_for_tests()
    return _save(work_dir, f"normalize-{task.index:05d}", key, {
        "index": task.index, "file": task.file.name, "eval": task.eval, "format": normalizer.format,
        "encoding": reader.encoding, "warnings": reader.warnings, "unread": reader.unread,
        "truncated": reader.truncated,
        "stages": {s.name: s.to_dict() for s in (*normalizer.stats, keys_stats)},
        "has_records": "normalized" in writers, "has_keys": "keys" in writers, "quarantined_rows": quarantine.lines,
    })


class _LazyFile:
    """A text file created on the first write: no empty quarantine files."""

    def __init__(self, path: Path):
        self.path, self.lines, self._fh = path, 0, None

    def write(self, text: str) -> None:
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "w", encoding="utf-8")
        self._fh.write(text)
        self.lines += 1

    def __enter__(self) -> "_LazyFile":
        return self

    def __exit__(self, *exc) -> None:
        if self._fh is not None:
            self._fh.close()


def _slow_for_tests() -> None:
    if os.environ.get("PREPARE_SLOW_SHARDS"):  # tests: time to interrupt a run between shards
        import time

        time.sleep(float(os.environ["PREPARE_SLOW_SHARDS"]))


def _open_work(path: Path) -> pq.ParquetFile:
    """A work file, read back batch by batch. pre_buffer (pyarrow's default) reads all the column chunks of a
    row group into memory ahead of decoding; a row group of a work file is a whole batch of records, so it
    held one more batch's worth of compressed data in memory per worker, for no gain on a local disk."""
    return pq.ParquetFile(path, pre_buffer=False)


def _append(writers: dict, name: str, path: Path, table: pa.Table) -> None:
    if name not in writers:
        writers[name] = pq.ParquetWriter(path, table.schema, compression="zstd")
    writers[name].write_table(table)


# --- phase 3 ----------------------------------------------------------------------------------------

@_shard_errors("process")
def process_shard(task: ShardTask, cfg: PrepareConfig, work_dir: str, removed_path: str | None,
                  has_eval: bool, token_cache: str | None) -> dict:
    """Drop the records the global dedup removed, strip personal data, count tokens, assign the split."""
    removed_hash = sha256_file(removed_path) if removed_path and os.path.exists(removed_path) else None
    salt = _salt(cfg, work_dir) if cfg.pii.enabled else None
    salt_digest = hashlib.blake2b(salt, key=b"cache-key", digest_size=8).hexdigest() if salt else None
    key = _key(_normalize_key(task, cfg), cfg.model_dump(include={"pii", "lengths", "split", "estimate"}, mode="json"),
               has_eval, removed_hash, salt_digest)
    cached = _cached(work_dir, f"process-{task.index:05d}", key)
    counters = {name: ProgressFile(progress_dir(work_dir), name, task.index) for name in ("pii", "lengths")}
    if cached is not None:
        for name, counter in counters.items():
            counter.set(cached["stages"].get(name, {}).get("records_in", 0), final=True)
        return cached
    paths = work_paths(work_dir, task.index)
    paths["processed"].unlink(missing_ok=True)
    dedup_stats = StageStats("dedup")
    steps = []
    if cfg.pii.enabled:
        from .pii import PiiStep

        steps.append(PiiStep(cfg.pii, salt=salt))
    if cfg.lengths.enabled:
        from pipeline.lengths.step import LengthStep

        steps.append(LengthStep(cfg.lengths, token_cache, model=cfg.estimate.model))
    steps.append(SplitStep(cfg.split, has_eval))
    stats = {s.name: StageStats(s.name) for s in steps}
    removed = _removed_for_shard(removed_path, task.index)
    writer = None
    if paths["normalized"].exists():
        source = _open_work(paths["normalized"])
        for arrow_batch in source.iter_batches(batch_size=parquet_batch_rows(source, cfg.read)):
            records = from_table(pa.Table.from_batches([arrow_batch]))
            with dedup_stats.timer():
                dedup_stats.records_in += len(records)
                if removed:
                    kept = []
                    for rec in records:
                        reason = removed.get(rec["_order"])
                        if reason:
                            dedup_stats.drop(reason)
                        else:
                            kept.append(rec)
                    records = kept
                dedup_stats.records_out += len(records)
            for step in steps:
                st = stats[step.name]
                with st.timer():
                    st.records_in += len(records)
                    records = step.process(records, st) if records else records
                    st.records_out += len(records)
                if step.name in counters:
                    counters[step.name].set(st.records_in)
            if records:
                for rec in records:
                    rec.setdefault("_tokens", None)
                    rec.setdefault("_trainable", None)
                table = to_table(records, PROCESSED_COLUMNS)
                if writer is None:
                    writer = pq.ParquetWriter(paths["processed"], table.schema, compression="zstd")
                writer.write_table(table)
    if writer is not None:
        writer.close()
    for name, counter in counters.items():
        counter.set(stats[name].records_in if name in stats else 0, final=True)
    tokenizer_name = next((getattr(s, "tokenizer_name", None) for s in steps if s.name == "lengths"), None)
    _slow_for_tests()
    return _save(work_dir, f"process-{task.index:05d}", key, {
        "index": task.index, "has_records": writer is not None, "tokenizer": tokenizer_name,
        "stages": {s.name: s.to_dict() for s in (dedup_stats, *stats.values())},
    })


def _salt(cfg: PrepareConfig, work_dir: str) -> bytes:
    """The user's salt (pii.salt_env), else the run's own from work/ (rundir.ensure_salt)."""
    value = os.environ.get(cfg.pii.salt_env)
    if value:
        return value.encode()
    salt = read_salt(work_dir)
    if not salt:
        raise PrepareError(f"{cfg.pii.salt_env} is not set and the run's salt is not in {work_dir}; "
                           "pseudonyms need one salt per run")
    return salt


def _removed_for_shard(removed_path: str | None, index: int) -> dict[int, str]:
    if not removed_path or not os.path.exists(removed_path):
        return {}
    low, high = index << ORDER_SHIFT, (index + 1) << ORDER_SHIFT
    table = pq.read_table(removed_path, columns=["_order", "reason"],
                          filters=[("_order", ">=", low), ("_order", "<", high)])
    return dict(zip(table.column("_order").to_pylist(), table.column("reason").to_pylist()))


# --- phase 4 ----------------------------------------------------------------------------------------

def _length_groups(processed: list[Path], inputs: dict[int, str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    columns = {"_tokens": [], "_trainable": [], "_split": [], "_order": []}
    for path in processed:
        table = pq.read_table(path, columns=list(columns))
        for name in columns:
            columns[name].append(table.column(name).to_numpy(zero_copy_only=False))
    if not processed:
        return {}
    tokens = np.concatenate(columns["_tokens"]).astype(np.int64)
    trainable = np.concatenate(columns["_trainable"]).astype(np.int64)
    splits = np.concatenate(columns["_split"])
    files = np.concatenate(columns["_order"]) >> ORDER_SHIFT
    groups = {"all": (tokens, trainable)}
    for split in ("train", "validation"):
        mask = splits == split
        if mask.any():
            groups[f"split:{split}"] = (tokens[mask], trainable[mask])
    for name in sorted(set(inputs.values())):
        mask = np.isin(files, [i for i, n in inputs.items() if n == name])
        if mask.any():
            groups[f"file:{name}"] = (tokens[mask], trainable[mask])
    return groups


def finalize(cfg: PrepareConfig, run_dir: str, work_dir: str, shard_results: list[dict],
             dedup_report: dict | None, tokenizer_name: str | None, token_cache: str | None,
             unreadable: list[dict]) -> dict:
    """Choose the max length, apply the overflow policy, write the Parquet shards, the report and,
    last, the manifest. Returns the report."""
    run = Path(run_dir)
    processed = [work_paths(work_dir, r["index"])["processed"] for r in shard_results if r["has_records"]]
    inputs = {r["index"]: r["file"] for r in shard_results}
    lengths_summary = None
    max_len = None
    step = None
    if cfg.lengths.enabled:
        from pipeline.lengths.histogram import plot_lengths_png, summarize_lengths
        from pipeline.lengths.step import LengthStep, apply_overflow

        groups = _length_groups(processed, inputs)
        if groups:
            lengths_summary = summarize_lengths(groups, cfg.lengths, _max_positions(cfg))
            lengths_summary["tokenizer"] = tokenizer_name
            max_len = lengths_summary.get("max_seq_len")
            plot_lengths_png(lengths_summary, run / "lengths.png")
            if cfg.lengths.overflow != "keep":
                step = LengthStep(cfg.lengths, token_cache, model=cfg.estimate.model)
    for split in ("train", "validation"):
        RunDir(run).remove_shards(split)
    # write.split_by_kind: chat and plain-text records in separate shard sets (no null messages/text columns)
    kinds = ("chat", "text") if cfg.write.split_by_kind else (None,)
    writers = {(split, kind): ShardWriter(run, split, cfg.write, kind) for split in ("train", "validation")
               for kind in kinds}
    written = ProgressFile(progress_dir(work_dir), "write", 0)
    written_before = 0
    for result in shard_results:  # in input order, so shards are the same for the same inputs
        write_stats = StageStats("write")
        result["stages"]["write"] = write_stats
        path = work_paths(work_dir, result["index"])["processed"]
        if not result["has_records"]:
            continue
        with write_stats.timer():
            source = _open_work(path)
            for arrow_batch in source.iter_batches(batch_size=parquet_batch_rows(source, cfg.read)):
                records = from_table(pa.Table.from_batches([arrow_batch]))
                write_stats.records_in += len(records)
                if step is not None and max_len:
                    records = apply_overflow(records, max_len, step, write_stats)
                for (split, kind), writer in writers.items():
                    part = [r for r in records if r["_split"] == split and _kind_set(r, kind)]
                    writer.write(part)
                    write_stats.records_out += len(part)
                written.set(written_before + write_stats.records_in)
        written_before += write_stats.records_in
    shards = [s for w in writers.values() for s in w.close()]
    written.set(written_before, final=True)
    for result in shard_results:
        result["stages"]["write"] = result["stages"]["write"].to_dict()
    plan = None
    if cfg.estimate.enabled and lengths_summary and max_len:
        plan = _plan(cfg, lengths_summary)
    stage_stats = merge_all(
        [StageStats.from_dict(name, d) for name, d in r["stages"].items()] for r in shard_results
    )
    if dedup_report and "dedup" in stage_stats:  # the global clustering step belongs to the dedup stage too
        stage_stats["dedup"].seconds += dedup_report.get("seconds", {}).get("total", 0.0)
    rep = report.build_report(cfg, shard_results, stage_stats, shards, dedup_report, lengths_summary, plan,
                              unreadable)
    report.write_reports(run, rep)
    from .report_html import write_run_html  # report.html beside report.md, listed in the manifest, uploaded

    html_entry = write_run_html(run, rep)
    run_id = hashlib.blake2b(
        json.dumps([cfg.model_dump(mode="json"), [s["sha256"] for s in shards]], sort_keys=True).encode(),
        digest_size=8).hexdigest()
    manifest = build_manifest(run_id, shown_config(cfg.model_dump(mode="json"), cfg.out), rep["counts"], shards,
                              {"max_seq_len": max_len, "tokenizer": tokenizer_name, "reports": [html_entry]})
    write_manifest(run, manifest)
    rep["run_id"] = run_id
    return rep


def _kind_set(record: dict, kind: str | None) -> bool:
    """Whether the record belongs to the shard set `kind` (None: the one set of all records)."""
    return kind is None or (kind == "text") == (record.get("messages") is None)


def _max_positions(cfg: PrepareConfig) -> int | None:
    try:
        from pipeline.plan.models import load_model_spec

        return load_model_spec(cfg.estimate.model).get("max_position_embeddings")
    except Exception:
        return None


def _plan(cfg: PrepareConfig, lengths_summary: dict) -> dict | None:
    from pipeline.plan.gpus import plan_training
    from pipeline.plan.precheck import plan_options

    packing = lengths_summary.get("packing", {})
    return plan_training(
        cfg.estimate.model, cfg.estimate.method, seq_len=lengths_summary["max_seq_len"],
        tokens_per_epoch=packing.get("tokens_per_epoch", 0),
        sequences_per_epoch=packing.get("sequences_per_epoch", 0), epochs=cfg.estimate.epochs,
        **plan_options(cfg))


def _merge_stage_dicts(first: dict, second: dict) -> dict:
    merged = merge_all([[StageStats.from_dict(n, d) for n, d in part.items()] for part in (first, second)])
    return {name: st.to_dict() for name, st in merged.items()}


def run_dedup(key_paths: list[str], cfg: PrepareConfig, work_dir: str, removed_path: str) -> dict:
    """Global duplicate decisions from the per-shard key files; the audit file lists every removal."""
    from . import dedup

    result = dedup.find_duplicates(key_paths, cfg.dedup, work_dir)
    pq.write_table(result.removed, removed_path, compression="zstd")
    ProgressFile(progress_dir(work_dir), "dedup", 0).set(result.report.get("records", 0), final=True)
    return result.report


def upload(cfg: PrepareConfig, run_dir: str, work_dir: str | None = None) -> dict:
    """Shards first, the manifest last; unchanged objects are skipped."""
    import time

    from .s3 import upload_run

    start = time.perf_counter()
    manifest = json.loads((Path(run_dir) / "manifest.json").read_text())
    files = [s["path"] for s in manifest["shards"]] + [r["path"] for r in manifest.get("reports", [])]
    counter, done = ProgressFile(progress_dir(work_dir or Path(run_dir) / "work"), "upload", 0), [0]

    def uploaded(_rel: str) -> None:
        done[0] += 1
        counter.set(done[0])

    result = upload_run(run_dir, cfg.s3, files, progress=uploaded)
    counter.set(done[0], final=True)
    return {"manifest_uri": result.manifest_uri, "uploaded": result.uploaded, "skipped": result.skipped,
            "removed": result.removed, "seconds": round(time.perf_counter() - start, 3)}


# --- the whole run ----------------------------------------------------------------------------------

def plan_shards(cfg: PrepareConfig) -> tuple[list[ShardTask], list[dict]]:
    """Expand the inputs; an unreadable one stops the run before any output, unless skip_unreadable."""
    tasks, unreadable = [], []
    for is_eval, items in ((False, cfg.inputs), (True, cfg.validation_inputs)):
        for item in items:
            try:
                files = expand_inputs([item], cfg)
            except UnreadableInput as exc:
                if not cfg.read.skip_unreadable:
                    raise
                unreadable.append({"file": exc.uri, "reason": exc.reason})
                continue
            # the run directory is never an input: a glob over it took in the last run's shards
            files = [f for f in files if f.is_s3 or not is_inside(f.uri, cfg.out)]
            for f in files:
                # a blank-line-separated block must not be cut in two: block-mode text stays one shard
                splittable = f.splittable and not (f.file_format == "txt" and cfg.read.txt_mode == "block")
                for part in split_ranges(f, cfg.read.shard_bytes) if splittable else [f]:
                    tasks.append(ShardTask(len(tasks), part, is_eval))
    unreadable += [{"file": name, "reason": "unsupported file type (skipped)"}  # reported, not skipped silently
                   for name in unsupported_files([*cfg.inputs, *cfg.validation_inputs], cfg)]
    if not tasks and not unreadable:
        raise PrepareError("no input files (give files, folders, globs or s3:// URIs)")
    return tasks, unreadable


def check_readable(task: ShardTask, cfg: PrepareConfig) -> dict | None:
    """Open each input once before any output is written (archive headers, Parquet footers); the first rows
    of each file too, so that a preference file (DPO, KTO) is refused before the run directory is touched."""
    from .formats import check_input

    try:
        FileReader(task.file, cfg.read)
        if task.file.start == 0:  # later byte ranges of a file are the same file
            check_input(task.file, cfg)
    except UnreadableInput as exc:
        if not cfg.read.skip_unreadable:
            raise
        return {"file": exc.uri, "reason": exc.reason}
    return None


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
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")  # "PyTorch was not found": torch is not needed
    # A refused --out, a busy run directory or an unreadable input is reported before the run directory
    # is created or touched.
    check_out(cfg.out, [*cfg.inputs, *cfg.validation_inputs])
    tasks, unreadable = plan_shards(cfg)
    readable = []
    for task in tasks:
        problem = check_readable(task, cfg)
        (unreadable.append(problem) if problem else readable.append(task))
    with RunDir(cfg.out) as rundir:
        save_names(cfg.out)  # the map of file-name labels, only with the lock held (readers.NameMap)
        rundir.wait_for_stale_workers()
        if cfg.pii.enabled and not os.environ.get(cfg.pii.salt_env):
            ensure_salt(rundir.work)  # read by the workers from work/; the user's own salt is never written
        own_executor = executor is None
        executor = executor or LocalExecutor(cfg.workers, progress, str(rundir.workers_lock()))
        try:
            tty = progress and log is _to_stderr and sys.stderr.isatty()
            return _run(cfg, executor, rundir, readable, unreadable, log,
                        functools.partial(StageProgress, progress_dir(rundir.work), enabled=progress, tty=tty,
                                          log=log))
        finally:
            if own_executor:
                executor.close()


def _run(cfg: PrepareConfig, executor: Executor, rundir: RunDir, readable: list[ShardTask],
         unreadable: list[dict], log: Callable[[str], None], stages: Callable[..., StageProgress]) -> RunResult:
    run_dir, work_dir = rundir.path, rundir.work
    # The old manifest goes first: from here until the new one is written, no manifest points at
    # shards that are being rewritten. Work of a killed run stays in work/ and is reused by key.
    (run_dir / "manifest.json").unlink(missing_ok=True)
    rundir.remove_stale_quarantine({f"{t.index:05d}" for t in readable})
    files = len({t.file.uri for t in readable})  # a large file is read as several byte-range shards
    log(f"prepare: {files} input file(s)" + (f" in {len(readable)} shards" if len(readable) != files else "")
        + f" -> {run_dir}")
    with stages({"read": ("read", "records", None)}):  # read, normalize and clean: one pass per shard
        results = executor.map(normalize_shard, readable, "normalize", cfg=cfg, run_dir=str(run_dir),
                               work_dir=str(work_dir))
    candidates = sum(r["stages"]["clean"]["records_out"] for r in results)  # records that reach dedup
    removed_path, dedup_report = None, None
    if cfg.dedup.enabled:
        key_paths = [str(work_paths(work_dir, r["index"])["keys"]) for r in results if r["has_keys"]]
        removed_path = str(run_dir / "dedup_removed.parquet")
        with stages({"dedup": ("dedup", "records", candidates)}):
            dedup_report = executor.call(run_dedup, "dedup", key_paths=key_paths, cfg=cfg,
                                         work_dir=str(work_dir), removed_path=removed_path)
    has_eval = any(t.eval for t in readable)
    token_cache = str(Path(os.environ.get("PREPARE_CACHE", ".cache/prepare")) / "tokens")
    kept = candidates - (dedup_report or {}).get("counts", {}).get("total", 0)
    steps = {name: (name, "records", kept) for name, on in (("pii", cfg.pii.enabled), ("lengths", cfg.lengths.enabled))
             if on}
    with stages(steps):  # PII and lengths run batch by batch in one pass per shard
        processed = executor.map(process_shard, readable, "process", cfg=cfg, work_dir=str(work_dir),
                                 removed_path=removed_path, has_eval=has_eval, token_cache=token_cache)
    shard_results = [{**a, **b, "stages": _merge_stage_dicts(a["stages"], b["stages"])}
                     for a, b in zip(results, processed)]
    tokenizer_name = next((r["tokenizer"] for r in processed if r.get("tokenizer")), None)
    to_write = sum(r["stages"]["split"]["records_out"] for r in processed)
    with stages({"write": ("write", "records", to_write)}):
        rep = executor.call(finalize, "finalize", cfg=cfg, run_dir=str(run_dir), work_dir=str(work_dir),
                            shard_results=shard_results, dedup_report=dedup_report,
                            tokenizer_name=tokenizer_name, token_cache=token_cache, unreadable=unreadable)
    reused = sum(bool(r.get("reused")) for r in results + processed)
    if reused:
        log(f"prepare: reused {reused} shard result(s) finished by an earlier run")
    refuse_empty_run(cfg, run_dir, rep)  # before the upload: no record kept fails the run unless allow_empty
    uploaded = None
    if cfg.s3:
        with stages({"upload": ("upload", "files", None)}):
            uploaded = executor.call(upload, "upload", cfg=cfg, run_dir=str(run_dir), work_dir=str(work_dir))
    if uploaded:
        log(f"prepare: uploaded {len(uploaded['uploaded'])} object(s), {len(uploaded['skipped'])} unchanged"
            + (f", {len(uploaded['removed'])} stale shard(s) of an earlier run removed" if uploaded["removed"] else ""))
    shutil.rmtree(work_dir, ignore_errors=True)  # with the run's salt in it
    return RunResult(rep, run_dir, uploaded and uploaded["manifest_uri"], uploaded, reused)
