"""The phase functions the executor maps over shards (or calls once). Each takes and returns small,
picklable values (paths, counts), never records; a shard's work is the list of steps it runs."""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from pipeline.core.config import PrepareConfig
from pipeline.core.errors import PrepareError
from pipeline.core.files import sha256_file
from pipeline.core.progress import ProgressFile
from pipeline.core.records import to_table
from pipeline.core.s3 import upload_run
from pipeline.core.stats import StageStats, merge_all
from pipeline.core.step import GlobalStep, Planned, Step, build_steps, config_key, run_steps
from pipeline.core.textnorm import content_chars
from pipeline.data import dedup
from pipeline.data.decontam import DecontamStep
from pipeline.data.formats import check_input
from pipeline.data.lang import record_lang
from pipeline.data.normalize import ORDER_SHIFT, Normalizer
from pipeline.data.readers import FileReader, InputFile, UnreadableInput, expand_inputs, split_ranges
from pipeline.data.split import read_validation_ids
from pipeline.runner import resume
from pipeline.runner.preflight import disk_full, unsupported_files
from pipeline.runner.rundir import is_inside, read_salt
from pipeline.runner.steps import KeySinks, ShardDecisions, normalize_steps, process_steps, stage_names
from pipeline.runner.work import (
    NORMALIZED_COLUMNS,
    PROCESSED_COLUMNS,
    LazyFile,
    WorkWriter,
    eval_index_dir,
    progress_dir,
    read_work,
    work_paths,
)


@dataclass(frozen=True)
class ShardTask:
    index: int
    files: tuple[InputFile, ...]  # one file, one byte range of a large file, or small files read one after another
    eval: bool

    @property
    def weight(self) -> int:
        """The shard's bytes on disk (0 where unknown: S3, a file that cannot be read), to run large shards first."""
        total = 0
        for f in self.files:
            size = _local_size(f)
            if size is not None:
                total += (f.end if f.end is not None else size) - f.start
        return total

    @property
    def label(self) -> str:
        f = self.files[0]
        first = f.name if not f.start and f.end is None else f"{f.name}@{f.first_line}"
        more = len(self.files) - 1
        return f"{first} (+{more} file{'s' if more > 1 else ''})" if more else first


def shard_errors(phase: str):
    """Name the failing shard and phase in the error; no exception text (it may quote record content)."""
    def wrap(fn):
        @functools.wraps(fn)
        def run(task: ShardTask, *args, **kwargs):
            try:
                return fn(task, *args, **kwargs)
            except (PrepareError, UnreadableInput):
                raise  # one line for the user already (a policy refusal among them)
            except Exception as exc:
                if disk_full(exc):  # the disk, not the data
                    raise PrepareError(f"no space left on device writing {kwargs.get('work_dir')}") from None
                if os.environ.get("PREPARE_DEBUG") == "1":
                    raise  # the full error, for debugging on data you may see
                where = getattr(exc, "input_file", None) or task.label  # the file of a shard of several
                raise PrepareError(f"{where}: {phase} failed ({type(exc).__name__})") from None
        return run
    return wrap


# --- before the run: the shards -----------------------------------------------------------------------

def plan_shards(cfg: PrepareConfig, log=None) -> tuple[list[ShardTask], list[dict]]:
    """Expand the inputs; an unreadable one stops the run before any output, unless skip_unreadable. A file
    named more than once (the same path, or a folder and a file in it) is read once; `log` says so."""
    tasks, unreadable, repeated = [], [], 0
    for is_eval, items in ((False, cfg.inputs), (True, cfg.validation_inputs)):
        seen: set[str] = set()
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
            unique = []
            for f in files:
                identity = f.uri if f.is_s3 else os.path.realpath(f.uri)
                if identity in seen:
                    repeated += 1
                    continue
                seen.add(identity)
                unique.append(f)
            for group in group_files(unique, cfg):
                tasks.append(ShardTask(len(tasks), group, is_eval))
    unreadable += [{"file": name, "reason": "unsupported file type (skipped)"}  # reported, not skipped silently
                   for name in unsupported_files([*cfg.inputs, *cfg.validation_inputs], cfg)]
    if not tasks and not unreadable:
        raise PrepareError("no input files (give files, folders, globs or s3:// URIs)")
    if repeated and log is not None:
        log(f"prepare: {repeated} input file(s) named more than once are read once")
    return tasks, unreadable


def group_files(files: list[InputFile], cfg: PrepareConfig) -> list[tuple[InputFile, ...]]:
    """The files of one input as shards, in order: a large .jsonl/.txt as byte ranges of about
    read.shard_bytes; consecutive small local files together, up to about read.shard_bytes (their size on
    disk) and read.files_per_shard files (a shard each, 200,000 one-line files read at 100 files/s); an
    S3 object, a file that cannot be read and a large file alone."""
    groups: list[tuple[InputFile, ...]] = []
    small: list[InputFile] = []
    small_bytes = 0
    for f in files:
        size = _local_size(f)
        if size is not None and size < cfg.read.shard_bytes:
            if small and (small_bytes + size > cfg.read.shard_bytes or len(small) >= cfg.read.files_per_shard):
                groups.append(tuple(small))
                small, small_bytes = [], 0
            small.append(f)
            small_bytes += size
            continue
        if small:
            groups.append(tuple(small))
            small, small_bytes = [], 0
        # a blank-line-separated block must not be cut in two: block-mode text stays one shard
        splittable = f.splittable and not (f.file_format == "txt" and cfg.read.txt_mode == "block")
        groups += [(part,) for part in (split_ranges(f, cfg.read.shard_bytes) if splittable else [f])]
    if small:
        groups.append(tuple(small))
    return groups


def _local_size(f: InputFile) -> int | None:
    if f.is_s3 or f.problem:
        return None
    try:
        return os.path.getsize(f.uri)
    except OSError:
        return None  # FileReader says why, alone in its shard


def check_readable(task: ShardTask, cfg: PrepareConfig) -> tuple[ShardTask | None, list[dict]]:
    """Open each input once before any output is written (archive headers, Parquet footers); the first rows
    of each file too, so that a preference file (DPO, KTO) is refused before the run directory is touched.
    Returns the task without the files that cannot be read (None if none is left) and, under
    skip_unreadable, their problems."""
    readable, problems = [], []
    for f in task.files:
        try:
            FileReader(f, cfg.read)
            if f.start == 0:  # later byte ranges of a file are the same file
                check_input(f, cfg)
        except UnreadableInput as exc:
            if not cfg.read.skip_unreadable:
                raise
            problems.append({"file": exc.uri, "reason": exc.reason})
            continue
        readable.append(f)
    if len(readable) == len(task.files):
        return task, problems
    return (replace(task, files=tuple(readable)) if readable else None), problems


# --- phase 1, per shard: read -> normalize -> clean -> quality -> language -> dedup keys --------------------

def _eval_index(cfg: PrepareConfig, work_dir: str) -> str | None:
    """The run's eval index (run.build_eval_index) when decontam is on."""
    return str(eval_index_dir(work_dir)) if cfg.decontam.enabled else None


def _normalize_key(task: ShardTask, cfg: PrepareConfig, work_dir: str) -> str:
    # the eval files' fingerprints too: an edited eval set removes other records, so phase 1's work is redone
    eval_index = _eval_index(cfg, work_dir)
    evals = [resume.eval_fingerprints(eval_index)] if eval_index else []
    return resume.key(resume.code_version(), [resume.input_fingerprint(f) for f in task.files], task.index,
                      task.eval, config_key(cfg, normalize_steps(cfg).steps), *evals)


@shard_errors("normalize")
def normalize_shard(task: ShardTask, cfg: PrepareConfig, run_dir: str, work_dir: str) -> dict:
    """Read the shard's inputs, convert every row to a canonical record or a counted quarantine/drop reason, judge
    its language, write the records, their dedup keys, canned-answer keys and (id, language) to the work folder.
    Quarantine files hold references (file, line, reason), never content. The stats and what the reader found
    (format, encoding, warnings) are kept per file, under "files". A shard finished by an earlier (killed) run
    is reused. With decontam on, the run has built its eval index in work_dir first."""
    key = _normalize_key(task, cfg, work_dir)
    quarantine_path = Path(run_dir) / "quarantine" / f"{task.index:05d}.jsonl"
    cached = resume.cached(work_dir, f"normalize-{task.index:05d}", key)
    counter = ProgressFile(progress_dir(work_dir), "read", task.index)
    if cached is not None and (quarantine_path.exists() or not cached.get("quarantined_rows")):
        counter.set(cached["stages"]["read"]["records_in"], final=True)
        return cached
    paths = work_paths(work_dir, task.index)
    for p in paths.values():
        p.parent.mkdir(parents=True, exist_ok=True)
    quarantine_path.parent.mkdir(parents=True, exist_ok=True)  # the folder is always there, maybe empty
    quarantine_path.unlink(missing_ok=True)  # an earlier run's; a shard without rejected rows writes none
    plan = normalize_steps(cfg, _eval_index(cfg, work_dir))
    out = _NormalizedOutput(paths, cfg, plan.keys)
    files, offset, rows_read = [], 0, 0
    with LazyFile(quarantine_path) as quarantine:
        for f in task.files:
            with _naming(f.name):
                part = _normalize_file(f, task, cfg, offset, plan.files, out, quarantine,
                                       lambda n, final=False, before=rows_read: counter.set(before + n, final))
            rows_read += part["stages"]["read"]["records_in"]
            offset = part.pop("last_order") - (task.index << ORDER_SHIFT)
            files.append(part)
        with _naming(out.pending_file() or task.label):
            out.close()
    counter.set(rows_read, final=True)
    written = out.writers
    return resume.save(work_dir, f"normalize-{task.index:05d}", key, {
        "index": task.index, "eval": task.eval, "files": files,
        "stages": merged_stages([*(p["stages"] for p in files), *({s.name: s.stats.to_dict()} for s in out.steps)]),
        "records": out.records, "has_records": written["normalized"].written,
        "has_keys": written["keys"].written, "has_canned": written["canned"].written,
        "has_langs": written["langs"].written, "has_decontam": written["decontam"].written,
        "quarantined_rows": quarantine.lines,
    })


class _NormalizedOutput:
    """Phase 1's work files of a shard: the records, their dedup keys, canned-answer keys and (id, language).
    The records of small files are gathered into batches of about read.batch_size rows or batch_bytes of
    content first: a row group and a keys call per one-line file made a shard of 1,000 files take seconds."""

    def __init__(self, paths: dict, cfg: PrepareConfig, key_steps: list[Planned]):
        self.cfg, self.records = cfg, 0
        self.writers = {name: WorkWriter(paths[name])
                        for name in ("normalized", "keys", "canned", "langs", "decontam")}
        self.steps = build_steps(key_steps, KeySinks(*(self.writers[n].append for n in ("keys", "canned", "langs"))))
        self.pending: list[dict] = []
        self.pending_chars = 0

    def add(self, records: list[dict]) -> None:
        self.pending += records
        self.pending_chars += sum(map(content_chars, records))
        self.records += len(records)
        if len(self.pending) >= self.cfg.read.batch_size or self.pending_chars >= self.cfg.read.batch_bytes:
            self._flush()

    def _flush(self) -> None:
        records, self.pending, self.pending_chars = self.pending, [], 0
        if not records:
            return
        self.writers["normalized"].append(to_table(records, NORMALIZED_COLUMNS))
        for _passed in run_steps(self.steps, [records]):  # the key steps write; the records pass unchanged
            pass

    def pending_file(self) -> str | None:
        """The one file the records not yet written come from; None when several (or none)."""
        names = {rec["source"]["file"] for rec in self.pending}
        return names.pop() if len(names) == 1 else None

    def close(self) -> None:
        self._flush()
        for w in self.writers.values():
            w.close()
            if not w.written:  # outputs of an earlier run that this one did not produce
                w.path.unlink(missing_ok=True)


@contextlib.contextmanager
def _naming(name: str):
    """An error while this file is read is said of it (shard_errors), not of its shard."""
    try:
        yield
    except Exception as exc:
        if getattr(exc, "input_file", None) is None:
            exc.input_file = name
        raise


class _Progress:
    """A ProgressFile seen through a function: the shard's count goes on across its files."""

    def __init__(self, set_count):
        self.set = set_count


def _normalize_file(f: InputFile, task: ShardTask, cfg: PrepareConfig, offset: int, plan: list[Planned],
                    out: _NormalizedOutput, quarantine: LazyFile, set_progress) -> dict:
    """One file of a shard through phase 1's file steps (`plan`) into the shard's work files; its stats and what
    its reader found. Its rows take the orders after `offset` (last_order: the highest it could use)."""
    def reject(line: int, reason: str) -> None:
        quarantine.write(json.dumps({"file": f.name, "line": line, "reason": reason}) + "\n")

    normalizer = Normalizer(f, cfg, task.index, task.eval, reject, offset, plan)
    normalizer.read_step.progress = _Progress(set_progress)
    for records in normalizer.batches():
        out.add(records)
    for step in normalizer.steps:
        if isinstance(step, DecontamStep) and step.removed:  # the audit, by reference: ids, files, lines
            out.writers["decontam"].append(step.audit_table())
    reader = normalizer.reader
    stages = {s.name: s.stats.to_dict() for s in normalizer.steps}
    base = (task.index << ORDER_SHIFT) + offset
    return {"file": f.name, "format": normalizer.format, "encoding": reader.encoding,
            "encoding_guessed": reader.encoding_guessed, "warnings": reader.warnings, "unread": reader.unread,
            "truncated": reader.truncated, "stages": stages,
            "first_order": base + 1, "last_order": base + normalizer.read_step.last_line}


def file_of_order(files: list[dict], orders) -> np.ndarray:
    """The position in a shard result's "files" of each _order (an array): the last file starting at or before it."""
    return np.searchsorted([part["first_order"] for part in files], orders, side="right") - 1


# --- phase 2, once: the global duplicate, canned-answer and validation decisions --------------------------

PROGRESS_GLOBAL = ("dedup",)  # phase 2's steps with a progress line of their own, counted in records


def run_global(step: GlobalStep, work_dir: str) -> dict:
    """One step of phase 2 (steps.global_steps); returns its report section."""
    report = step.run()
    if step.name in PROGRESS_GLOBAL:
        ProgressFile(progress_dir(work_dir), step.name, 0).set(report.get("records", 0), final=True)
    return report


# --- phase 3, per shard: dedup filter -> canned -> pii -> lengths -> split ---------------------------------

def run_salt(cfg: PrepareConfig, work_dir: str) -> bytes:
    """The user's salt (pii.salt_env), else the run's own from work/ (rundir.ensure_salt)."""
    value = os.environ.get(cfg.pii.salt_env)
    if value:
        return value.encode()
    salt = read_salt(work_dir)
    if not salt:
        raise PrepareError(f"{cfg.pii.salt_env} is not set and the run's salt is not in {work_dir}; "
                           "pseudonyms need one salt per run")
    return salt


PROGRESS_STAGES = ("pii", "lengths")  # phase 3's stages with a progress line of their own


@shard_errors("process")
def process_shard(task: ShardTask, cfg: PrepareConfig, work_dir: str, removed_path: str | None,
                  has_eval: bool, token_cache: str | None, canned_drop: str | None = None,
                  validation_path: str | None = None, residual_rate: float = 0.0,
                  against: tuple[str, ...] = ()) -> dict:
    """Drop the records the global dedup and the canned-answer cap removed, strip personal data (with the
    residual-risk probe at residual_rate copies per record), count tokens, assign the split (from the
    stratified validation ids when validation_path is given). `against`: the sha256 of the earlier datasets'
    indexes (--against), for the resume key: their filter (history.filter_against_shard) changes the output."""
    def file_hash(path: str | None) -> str | None:  # a global decision's file: part of the resume key
        return sha256_file(path) if path and os.path.exists(path) else None

    plan = process_steps(cfg, residual_rate)
    salt = run_salt(cfg, work_dir) if "pii" in stage_names(plan) else None
    salt_digest = hashlib.blake2b(salt, key=b"cache-key", digest_size=8).hexdigest() if salt else None
    key = resume.key(_normalize_key(task, cfg, work_dir), config_key(cfg, plan), has_eval,
                     file_hash(removed_path), salt_digest, file_hash(canned_drop), file_hash(validation_path),
                     residual_rate, *against)
    cached = resume.cached(work_dir, f"process-{task.index:05d}", key)
    counters = {name: ProgressFile(progress_dir(work_dir), name, task.index) for name in PROGRESS_STAGES}
    if cached is not None:
        for name, counter in counters.items():
            counter.set(cached["stages"].get(name, {}).get("records_in", 0), final=True)
        return cached
    validation_ids = read_validation_ids(validation_path) if validation_path else None
    paths = work_paths(work_dir, task.index)
    for name in ("processed", "unfiltered", "history"):
        paths[name].parent.mkdir(parents=True, exist_ok=True)
        paths[name].unlink(missing_ok=True)
    out, history = WorkWriter(paths["processed"]), WorkWriter(paths["history"])
    steps = build_steps(plan, ShardDecisions(task.index, has_eval, dedup.removed_reasons(removed_path, task.index),
                                             canned_drop, validation_ids, salt, token_cache, history.append,
                                             str(paths["keys"])))
    for step in steps:
        step.progress = counters.get(step.name)
    normalized = resume.cached(work_dir, f"normalize-{task.index:05d}", _normalize_key(task, cfg, work_dir))
    files = normalized["files"]
    per_file = StatsByFile(steps, len(files))
    if paths["normalized"].exists():
        for batch in read_work(paths["normalized"], cfg.read):
            for position, records in runs_by_file(files, batch):
                per_file.at(position)
                with _naming(files[position]["file"]):
                    for records in run_steps(steps, [records]):
                        for rec in records:
                            rec.setdefault("_tokens", None)
                            rec.setdefault("_trainable", None)
                            rec["_lang"] = record_lang(rec)
                        out.append(to_table(records, PROCESSED_COLUMNS))
    out.close()
    history.close()
    files_stages = per_file.take()
    for name, counter in counters.items():
        counter.set(next((s.total_in for s in steps if s.name == name), 0), final=True)
    tokenizer_name = next((getattr(s, "tokenizer_name", None) for s in steps if s.name == "lengths"), None)
    return resume.save(work_dir, f"process-{task.index:05d}", key, {
        "index": task.index, "has_records": out.written, "tokenizer": tokenizer_name,
        "stages": merged_stages(files_stages), "files_stages": files_stages,
    })


class StatsByFile:
    """The stats of steps that run over the records of several files, per file: at(position) before each
    run of one file's records; take() the stats of each file (every step named in each)."""

    def __init__(self, steps: list[Step], files: int):
        self.steps, self.current = steps, 0
        self.stats: list[dict[str, StageStats]] = [{} for _ in range(files)]

    def at(self, position: int) -> None:
        if position != self.current:
            self._harvest()
            self.current = position

    def _harvest(self) -> None:
        into = self.stats[self.current]
        for step in self.steps:
            st = step.take_stats()
            into[step.name] = into[step.name].merge(st) if step.name in into else st

    def take(self) -> list[dict]:
        self._harvest()
        return [{step.name: part.get(step.name, StageStats(step.name)).to_dict() for step in self.steps}
                for part in self.stats]


def merged_stages(parts: list[dict]) -> dict:
    """Stage dicts (name -> StageStats dict) summed."""
    totals = merge_all([StageStats.from_dict(n, d) for n, d in part.items()] for part in parts)
    return {name: st.to_dict() for name, st in totals.items()}


def runs_by_file(files: list[dict], batch):
    """(position in `files`, the rows of that file) for each run of consecutive rows of one file in `batch`
    (records or an Arrow table in _order order), by their _order (the normalize result's first_order)."""
    if len(files) == 1:
        yield 0, batch
        return
    orders = batch.column("_order").to_numpy() if hasattr(batch, "column") else [r["_order"] for r in batch]
    positions = file_of_order(files, orders)
    cuts = [0, *(np.flatnonzero(np.diff(positions)) + 1).tolist(), len(positions)]
    for start, end in zip(cuts, cuts[1:]):
        if end > start:
            yield int(positions[start]), (batch.slice(start, end - start) if hasattr(batch, "slice")
                                          else batch[start:end])


# --- phase 5, once: the upload ----------------------------------------------------------------------------

def upload(cfg: PrepareConfig, run_dir: str, work_dir: str | None = None) -> dict:
    """Shards first, the manifest last; unchanged objects are skipped."""
    start = time.perf_counter()
    manifest = json.loads((Path(run_dir) / "manifest.json").read_text())
    # a shard with a `base` is an earlier version's (--append-to), where it already is
    files = [s["path"] for s in manifest["shards"] if "base" not in s] + [r["path"] for r in manifest.get("reports", [])]
    if manifest.get("dedup_index"):  # the index a later run's --against reads
        files.append(manifest["dedup_index"]["path"])
    counter, done = ProgressFile(progress_dir(work_dir or Path(run_dir) / "work"), "upload", 0), [0]

    def uploaded(_rel: str) -> None:
        done[0] += 1
        counter.set(done[0])

    result = upload_run(run_dir, cfg.s3, files, progress=uploaded, overwrite=cfg.s3_overwrite)
    counter.set(done[0], final=True)
    return {"manifest_uri": result.manifest_uri, "uploaded": result.uploaded, "skipped": result.skipped,
            "removed": result.removed, "seconds": round(time.perf_counter() - start, 3)}
