"""The phase functions the executor maps over shards (or calls once). Each takes and returns small,
picklable values (paths, counts), never records; a shard's work is the list of steps it runs."""
from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from .. import dedup
from ..config import PrepareConfig
from ..lang import record_lang
from ..normalize import ORDER_SHIFT, Normalizer
from ..preflight import disk_full, unsupported_files
from ..progress import ProgressFile
from ..readers import FileReader, InputFile, UnreadableInput, expand_inputs, split_ranges
from ..records import to_table
from ..rundir import PrepareError, is_inside, read_salt
from ..shards import sha256_file
from ..split import SplitStep, lang_ids, read_validation_ids
from ..step import Step, config_key, run_steps
from . import resume
from .work import INTERNAL_COLUMNS, PROCESSED_COLUMNS, LazyFile, WorkWriter, progress_dir, read_work, work_paths


@dataclass(frozen=True)
class ShardTask:
    index: int
    file: InputFile
    eval: bool

    @property
    def label(self) -> str:
        f = self.file
        return f.name if not f.start and f.end is None else f"{f.name}@{f.first_line}"


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
                raise PrepareError(f"{task.label}: {phase} failed ({type(exc).__name__})") from None
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
            for f in files:
                identity = f.uri if f.is_s3 else os.path.realpath(f.uri)
                if identity in seen:
                    repeated += 1
                    continue
                seen.add(identity)
                # a blank-line-separated block must not be cut in two: block-mode text stays one shard
                splittable = f.splittable and not (f.file_format == "txt" and cfg.read.txt_mode == "block")
                for part in split_ranges(f, cfg.read.shard_bytes) if splittable else [f]:
                    tasks.append(ShardTask(len(tasks), part, is_eval))
    unreadable += [{"file": name, "reason": "unsupported file type (skipped)"}  # reported, not skipped silently
                   for name in unsupported_files([*cfg.inputs, *cfg.validation_inputs], cfg)]
    if not tasks and not unreadable:
        raise PrepareError("no input files (give files, folders, globs or s3:// URIs)")
    if repeated and log is not None:
        log(f"prepare: {repeated} input file(s) named more than once are read once")
    return tasks, unreadable


def check_readable(task: ShardTask, cfg: PrepareConfig) -> dict | None:
    """Open each input once before any output is written (archive headers, Parquet footers); the first rows
    of each file too, so that a preference file (DPO, KTO) is refused before the run directory is touched."""
    from ..formats import check_input

    try:
        FileReader(task.file, cfg.read)
        if task.file.start == 0:  # later byte ranges of a file are the same file
            check_input(task.file, cfg)
    except UnreadableInput as exc:
        if not cfg.read.skip_unreadable:
            raise
        return {"file": exc.uri, "reason": exc.reason}
    return None


# --- phase 1, per shard: read -> normalize -> clean -> quality -> language -> dedup keys --------------------

def canned_on(cfg: PrepareConfig) -> bool:
    return cfg.quality.enabled and cfg.quality.canned != "off"


def language_steps(cfg: PrepareConfig) -> list[Step]:
    """Phase 1's steps after the normalizer's (read, normalize, clean, quality): the language step, so that a
    record dropped for its language is no dedup candidate and the split can be stratified by language once
    the duplicates are known."""
    from ..lang import LanguageStep

    return [LanguageStep(cfg.filters)] if cfg.filters.detect_language else []


def normalize_steps(normalizer: Normalizer, cfg: PrepareConfig, keys: WorkWriter) -> list[Step]:
    """Every step of phase 1: the last one (dedup keys) only reads the records the others leave."""
    return [*normalizer.steps, *language_steps(cfg), dedup.KeysStep(cfg.dedup, keys.append)]


def _normalize_key(task: ShardTask, cfg: PrepareConfig) -> str:
    from ..clean import CleanStep
    from ..normalize import NormalizeStep, ReadStep

    from ..quality import QualityStep

    steps = [ReadStep, NormalizeStep, CleanStep, QualityStep, *map(type, language_steps(cfg)), dedup.KeysStep]
    return resume.key(resume.code_version(), resume.input_fingerprint(task.file), task.index, task.eval,
                      config_key(cfg, steps))


@shard_errors("normalize")
def normalize_shard(task: ShardTask, cfg: PrepareConfig, run_dir: str, work_dir: str) -> dict:
    """Read one input, convert every row to a canonical record or a counted quarantine/drop reason, judge its
    language, write the records, their dedup keys, canned-answer keys and (id, language) to the work folder.
    Quarantine files hold references (file, line, reason), never content. A shard finished by an earlier
    (killed) run is reused."""
    from ..quality import canned_keys

    key = _normalize_key(task, cfg)
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
    writers = {name: WorkWriter(paths[name]) for name in ("normalized", "keys", "canned", "langs")}
    written = 0
    with LazyFile(quarantine_path) as quarantine:
        def reject(line: int, reason: str) -> None:
            quarantine.write(json.dumps({"file": task.file.name, "line": line, "reason": reason}) + "\n")

        normalizer = Normalizer(task.file, cfg, task.index, task.eval, reject)
        normalizer.read_step.progress = counter
        steps = normalize_steps(normalizer, cfg, writers["keys"])
        shaping, keys_step = steps[len(normalizer.steps):-1], steps[-1]
        for records in normalizer.batches():
            for step in shaping:
                records = step(records)
            if not records:
                continue
            written += len(records)
            writers["normalized"].append(to_table(records, INTERNAL_COLUMNS))
            keys_step(records)
            if canned_on(cfg):
                writers["canned"].append(canned_keys(records))
            if shaping:  # the language step ran: the split is stratified by it
                writers["langs"].append(lang_ids(records))
    normalizer.read_step.finish()
    for w in writers.values():
        w.close()
        if not w.written:  # outputs of an earlier run that this one did not produce
            w.path.unlink(missing_ok=True)
    reader = normalizer.reader
    return resume.save(work_dir, f"normalize-{task.index:05d}", key, {
        "index": task.index, "file": task.file.name, "eval": task.eval, "format": normalizer.format,
        "encoding": reader.encoding, "warnings": reader.warnings, "unread": reader.unread,
        "truncated": reader.truncated, "stages": {s.name: s.stats.to_dict() for s in steps},
        "records": written, "has_records": writers["normalized"].written, "has_keys": writers["keys"].written,
        "has_canned": writers["canned"].written, "has_langs": writers["langs"].written,
        "quarantined_rows": quarantine.lines,
    })


# --- phase 2, once: the global duplicate, canned-answer and validation decisions --------------------------

def run_dedup(key_paths: list[str], cfg: PrepareConfig, work_dir: str, removed_path: str) -> dict:
    """Global duplicate decisions from the per-shard key files; the audit file lists every removal."""
    result = dedup.find_duplicates(key_paths, cfg.dedup, work_dir)
    dedup.write_audit(result, removed_path)
    ProgressFile(progress_dir(work_dir), "dedup", 0).set(result.report.get("records", 0), final=True)
    return result.report


def run_canned(key_paths: list[str], cfg: PrepareConfig, removed_path: str | None, drop_path: str) -> dict:
    """The canned answers of the whole run, from the shards' canned key files (what dedup removed is not
    counted); drop_path lists the records past the cap for phase 3's CannedStep. Returns report.quality.canned."""
    from ..quality import find_canned

    return find_canned(key_paths, cfg.quality, removed_path, drop_path)


def run_split(lang_paths: list[str], cfg: PrepareConfig, removed_paths: list[str], ids_path: str) -> dict:
    """The stratified validation ids of the whole run (split.choose_validation); returns report.split."""
    from ..split import choose_validation

    return choose_validation(lang_paths, removed_paths, cfg.split, ids_path, ORDER_SHIFT)


# --- phase 3, per shard: dedup filter -> canned -> pii -> lengths -> split ---------------------------------

def process_steps(cfg: PrepareConfig, removed: dict[int, str], has_eval: bool, salt: bytes | None,
                  token_cache: str | None, shard_index: int = 0, canned_drop: str | None = None,
                  validation_ids: set[str] | None = None, residual_rate: float = 0.0) -> list[Step]:
    steps: list[Step] = [dedup.DedupFilter(removed)]
    if canned_on(cfg):
        from ..quality import CannedStep

        steps.append(CannedStep(canned_drop, shard_index, ORDER_SHIFT))
    if cfg.pii.enabled:  # PII routes each record by its meta.lang (phase 1's language step)
        from ..pii import PiiStep

        if residual_rate:  # on copies of the records the PII step gets (pipeline/pii/residual.py)
            from ..pii.residual import ResidualProbe

            steps.append(ResidualProbe(cfg.pii, salt, cfg.split.seed, residual_rate))
        steps.append(PiiStep(cfg.pii, salt=salt))
    if cfg.lengths.enabled:
        from ..lengths.step import LengthStep

        steps.append(LengthStep(cfg.lengths, token_cache, model=cfg.estimate.model))
    steps.append(SplitStep(cfg.split, has_eval, validation_ids))
    return steps


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
                  validation_path: str | None = None, residual_rate: float = 0.0) -> dict:
    """Drop the records the global dedup and the canned-answer cap removed, strip personal data (with the
    residual-risk probe at residual_rate copies per record), count tokens, assign the split (from the
    stratified validation ids when validation_path is given)."""
    def file_hash(path: str | None) -> str | None:  # a global decision's file: part of the resume key
        return sha256_file(path) if path and os.path.exists(path) else None

    salt = run_salt(cfg, work_dir) if cfg.pii.enabled else None
    salt_digest = hashlib.blake2b(salt, key=b"cache-key", digest_size=8).hexdigest() if salt else None
    validation_ids = read_validation_ids(validation_path) if validation_path else None
    steps = process_steps(cfg, dedup.removed_reasons(removed_path, task.index), has_eval, salt, token_cache,
                          task.index, canned_drop, validation_ids, residual_rate)
    key = resume.key(_normalize_key(task, cfg), config_key(cfg, steps), has_eval, file_hash(removed_path),
                     salt_digest, file_hash(canned_drop), file_hash(validation_path), residual_rate)
    cached = resume.cached(work_dir, f"process-{task.index:05d}", key)
    counters = {name: ProgressFile(progress_dir(work_dir), name, task.index) for name in PROGRESS_STAGES}
    if cached is not None:
        for name, counter in counters.items():
            counter.set(cached["stages"].get(name, {}).get("records_in", 0), final=True)
        return cached
    for step in steps:
        step.progress = counters.get(step.name)
    paths = work_paths(work_dir, task.index)
    paths["processed"].unlink(missing_ok=True)
    out = WorkWriter(paths["processed"])
    if paths["normalized"].exists():
        for records in run_steps(steps, read_work(paths["normalized"], cfg.read)):
            for rec in records:
                rec.setdefault("_tokens", None)
                rec.setdefault("_trainable", None)
                rec["_lang"] = record_lang(rec)
            out.append(to_table(records, PROCESSED_COLUMNS))
    out.close()
    for name, counter in counters.items():
        counter.set(next((s.stats.records_in for s in steps if s.name == name), 0), final=True)
    tokenizer_name = next((getattr(s, "tokenizer_name", None) for s in steps if s.name == "lengths"), None)
    return resume.save(work_dir, f"process-{task.index:05d}", key, {
        "index": task.index, "has_records": out.written, "tokenizer": tokenizer_name,
        "stages": {s.name: s.stats.to_dict() for s in steps},
    })


# --- phase 5, once: the upload ----------------------------------------------------------------------------

def upload(cfg: PrepareConfig, run_dir: str, work_dir: str | None = None) -> dict:
    """Shards first, the manifest last; unchanged objects are skipped."""
    from ..s3 import upload_run

    start = time.perf_counter()
    manifest = json.loads((Path(run_dir) / "manifest.json").read_text())
    files = [s["path"] for s in manifest["shards"]] + [r["path"] for r in manifest.get("reports", [])]
    counter, done = ProgressFile(progress_dir(work_dir or Path(run_dir) / "work"), "upload", 0), [0]

    def uploaded(_rel: str) -> None:
        done[0] += 1
        counter.set(done[0])

    result = upload_run(run_dir, cfg.s3, files, progress=uploaded, overwrite=cfg.s3_overwrite)
    counter.set(done[0], final=True)
    return {"manifest_uri": result.manifest_uri, "uploaded": result.uploaded, "skipped": result.skipped,
            "removed": result.removed, "seconds": round(time.perf_counter() - start, 3)}
