"""Trainer checkpoints to S3 and back: the GPU server's disk is deleted when it stops.

Layout under s3://bucket/prefix/:
    checkpoint-N/...                        the files of the trainer's checkpoint folder
    checkpoint-N/prepare-checkpoint.json    its manifest (files, sizes, sha256, trainer state), written LAST
    final/...  + final/prepare-checkpoint.json   the model the training ended with (the adapter, for PEFT)
    eval_report.json                        the evaluation history and the best checkpoint
    best.json                               the best checkpoint so far, kept across resumes and machines

A checkpoint is complete exactly when its manifest exists: the upload (pipeline.core.s3.upload_run: multipart,
per-request and per-object retries, objects with the same size and sha256 skipped) puts the manifest after
every file and deletes it first when files must change; pruning deletes the manifest before the files. So a
server that stops mid-upload leaves a checkpoint that `pull` never takes.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NamedTuple

from pipeline.core.files import atomic_write_text, sha256_file
from pipeline.core.s3 import S3Error, client, parse_uri, read_json, upload_run, with_retries

MANIFEST = "prepare-checkpoint.json"
EVAL_REPORT = "eval_report.json"
BEST = "best.json"
FINAL = "final"
_CKPT = re.compile(r"checkpoint-(\d+)")
# what a trainer writes at the top of output_dir when it saves the final model (trl's script: save_model)
FINAL_MODEL_FILES = ("adapter_model.safetensors", "adapter_model.bin", "model.safetensors",
                     "model.safetensors.index.json", "pytorch_model.bin")


def step_of(name: str) -> int | None:
    m = _CKPT.fullmatch(name)
    return int(m.group(1)) if m else None


class Listing(NamedTuple):
    files: list[str]   # the regular files, relative to the folder (the manifest left out)
    links: list[str]   # the symbolic links (to files or folders), never followed


def listing(folder: Path) -> Listing:
    """A checkpoint folder's own files. Links are never followed: an `optimizer.pt` linked to a file outside
    the folder (a key, /etc/shadow) would otherwise be read and uploaded with the trainer's rights."""
    files, links = [], []
    for top, dirs, names in os.walk(folder):  # followlinks=False: a linked folder is listed, never entered
        base = Path(top)
        links += [str((base / d).relative_to(folder)) for d in dirs if (base / d).is_symlink()]
        for name in names:
            path = base / name
            if path.is_symlink():
                links.append(str(path.relative_to(folder)))
            elif name != MANIFEST and path.is_file():   # not a socket or FIFO (reading one would block)
                files.append(str(path.relative_to(folder)))
    return Listing(sorted(files), sorted(links))


def _files(folder: Path) -> list[str]:
    return listing(folder).files


def trainer_state(folder: Path) -> dict:
    path = folder / "trainer_state.json"
    try:
        return json.loads(path.read_text()) if _regular(path) else {}
    except (OSError, ValueError):
        return {}


def _regular(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def write_manifest(folder: str | Path, name: str) -> Path:
    """The checkpoint's manifest, inside the folder (upload_run sends it last)."""
    folder = Path(folder)
    state = trainer_state(folder)
    manifest = {
        "name": name, "step": step_of(name),  # no timestamp: an unchanged checkpoint re-synced uploads nothing
        "files": [{"path": rel, "bytes": (folder / rel).stat().st_size, "sha256": sha256_file(folder / rel)}
                  for rel in _files(folder)],
        "global_step": state.get("global_step"), "best_model_checkpoint": best_of(state),
        "best_metric": state.get("best_metric"),
    }
    path = folder / MANIFEST
    atomic_write_text(path, json.dumps(manifest, indent=1) + "\n")
    return path


def _name(path: str | None) -> str | None:
    return Path(path).name if path else None


def upload_checkpoint(folder: str | Path, uri: str, name: str | None = None) -> list[str]:
    """Upload one checkpoint folder to uri/<name>/, manifest last; returns the files sent (unchanged ones are
    skipped)."""
    folder = Path(folder)
    name = name or folder.name
    write_manifest(folder, name)
    result = upload_run(folder, f"{uri.rstrip('/')}/{name}", _files(folder), manifest=MANIFEST)
    return result.uploaded


@dataclass
class Remote:
    name: str
    step: int | None
    complete: bool
    keys: list[str]


def list_remote(uri: str) -> dict[str, Remote]:
    """The checkpoint folders under the prefix (complete = has its manifest), by name."""
    bucket, prefix = parse_uri(uri.rstrip("/") + "/")
    s3 = client()

    def listing(_retry_flag) -> list[str]:
        keys = []
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            keys += [obj["Key"] for obj in page.get("Contents", [])]
        return keys

    found: dict[str, Remote] = {}
    for key in with_retries("listing", f"s3://{bucket}/{prefix}", listing):
        top, _, rest = key[len(prefix):].partition("/")
        if not rest or (step_of(top) is None and top != FINAL):
            continue
        entry = found.setdefault(top, Remote(top, step_of(top), False, []))
        entry.keys.append(key)
        entry.complete |= rest == MANIFEST
    return found


def delete_remote(uri: str, entry: Remote) -> None:
    """Manifest first: a checkpoint half deleted is never taken for a complete one."""
    bucket, _ = parse_uri(uri.rstrip("/") + "/")
    s3 = client()
    keys = sorted(entry.keys, key=lambda k: not k.endswith("/" + MANIFEST))
    for key in keys:
        with_retries("delete", f"s3://{bucket}/{key}", lambda _, key=key: s3.delete_object(Bucket=bucket, Key=key))


def prune(uri: str, keep: int, best: str | None, *, newest_step: int | None = None) -> list[str]:
    """Keep the last `keep` complete checkpoints and the best; delete the other checkpoints, complete or
    partial, up to newest_step (a newer one may still be uploading). Returns the names deleted."""
    remote = list_remote(uri)
    complete = sorted((e for e in remote.values() if e.complete and e.step is not None), key=lambda e: e.step)
    if newest_step is None:
        newest_step = complete[-1].step if complete else -1
    kept = {e.name for e in complete[-keep:]} if keep > 0 else set()
    if best:
        kept.add(best)
    deleted = []
    for entry in sorted(remote.values(), key=lambda e: e.step or 0):
        if entry.step is None or entry.name in kept or entry.step > newest_step:
            continue
        delete_remote(uri, entry)
        deleted.append(entry.name)
    return deleted


def best_of(state: dict) -> str | None:
    """The best checkpoint of a trainer state: checkpoint-<best_global_step>, which a resumed trainer carries on
    (it resets best_model_checkpoint when that folder is not on this machine, and compares new evaluations with
    the best_metric it kept), else the name of best_model_checkpoint."""
    step = state.get("best_global_step")
    return f"checkpoint-{step}" if step else _name(state.get("best_model_checkpoint"))


def read_best(uri: str) -> dict | None:
    """best.json of the prefix (None: no best recorded yet)."""
    try:
        return read_json(f"{uri.rstrip('/')}/{BEST}")
    except OSError:
        return None


def record_best(uri: str, state: dict) -> str | None:
    """The best checkpoint after a checkpoint of `state` is uploaded: the state's (written to best.json when it
    changed), else the one best.json recorded (a state without evaluations). Returns its name."""
    recorded = read_best(uri)
    best = best_of(state)
    saved = {name for name, entry in list_remote(uri).items() if entry.complete}
    if best not in saved:  # evaluated at a step that was not saved (eval_steps below save_steps): never name it,
        # or pruning would delete the best checkpoint there is; transformers' own best_model_checkpoint is one saved
        best = _name(state.get("best_model_checkpoint"))
        best = best if best in saved else None
    if best and (recorded or {}).get("checkpoint") != best:
        put_json(uri, BEST, {"checkpoint": best, "step": step_of(best), "best_metric": state.get("best_metric")})
        return best
    return best or (recorded or {}).get("checkpoint")


def eval_report(state: dict, best: str | None = None) -> dict:
    """The evaluation history of trainer_state.json and which checkpoint was best."""
    evals = [{k: v for k, v in e.items() if k.startswith("eval_") or k in ("step", "epoch")}
             for e in state.get("log_history", []) if any(k.startswith("eval_") for k in e)]
    return {"best_model_checkpoint": best or best_of(state), "best_metric": state.get("best_metric"),
            "global_step": state.get("global_step"), "evaluations": evals}


def put_json(uri: str, name: str, data: dict) -> str:
    bucket, prefix = parse_uri(uri.rstrip("/") + "/")
    s3 = client()
    body = (json.dumps(data, indent=1) + "\n").encode()
    with_retries("upload", f"s3://{bucket}/{prefix}{name}",
           lambda _: s3.put_object(Bucket=bucket, Key=prefix + name, Body=body, ContentType="application/json"))
    return f"s3://{bucket}/{prefix}{name}"


def finish(uri: str, state: dict, keep: int = 1, final_dir: str | Path | None = None) -> dict:
    """End of training: the final model as final/, the evaluation report, and only the best checkpoint (or the
    last, without evaluation) plus keep-1 more of the latest."""
    uploaded = upload_checkpoint(final_dir, uri, FINAL) if final_dir else []
    report = eval_report(state, record_best(uri, state))
    put_json(uri, EVAL_REPORT, report)
    best = report["best_model_checkpoint"]
    deleted = prune(uri, keep if not best else max(0, keep - 1), best)
    return {"final_uploaded": uploaded, "best": best, "deleted": deleted}


# ------------------------------------------------------------------------------------------------ pull

class UnsafeCheckpoint(S3Error):
    """A checkpoint pull refuses: a manifest entry or a path in DEST that would put files outside DEST."""


_SHA256 = re.compile(r"[0-9a-f]{64}")
_MAX_NAME_BYTES = 255      # one file name (NAME_MAX of Linux file systems)
_MAX_PATH_BYTES = 1024     # an S3 key is at most 1024 bytes


def _path_problem(path: object) -> str | None:
    """Why a manifest path is no safe relative path inside the checkpoint folder (None: it is one). Checked
    as text, before any file system call: nothing the bucket says may name a place outside DEST."""
    if not isinstance(path, str):
        return "the path is not a string"
    if not path:
        return "an empty path"
    try:
        size = len(path.encode("utf-8"))
    except UnicodeEncodeError:
        return "the path is not valid Unicode (a lone surrogate)"
    if size > _MAX_PATH_BYTES:
        return f"a path longer than {_MAX_PATH_BYTES} bytes"
    if any(ord(c) < 32 or ord(c) == 127 for c in path):
        return "a control character in the path"
    if "\\" in path:
        return "a backslash in the path (a separator on Windows)"
    if path.startswith("/"):
        return "an absolute path"
    parts = path.split("/")
    if ".." in parts:
        return "a '..' part (leaves the checkpoint folder)"
    if "." in parts:
        return "a '.' part"
    if "" in parts:
        return "an empty part ('//' or a trailing '/')"
    if any(len(part.encode("utf-8")) > _MAX_NAME_BYTES for part in parts):
        return f"a name longer than {_MAX_NAME_BYTES} bytes"
    if path == MANIFEST:
        return "the manifest's own name"
    return None


def _show(path: object) -> str:
    """A bucket-chosen path, quoted for a one-line message: escapes instead of control characters."""
    text = ascii(path)
    return text if len(text) <= 120 else text[:117] + "..."


def _checked_files(manifest: object, where: str) -> list[dict]:
    """The manifest's file entries once every one is safe to write under the checkpoint folder; else
    UnsafeCheckpoint naming the first bad entry."""
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, list):
        raise UnsafeCheckpoint(f"unsafe checkpoint manifest {where}: no 'files' list; nothing was written")
    paths: set[str] = set()
    folders: set[str] = set()
    for number, entry in enumerate(files, 1):
        path = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(entry, dict):
            problem = "the entry is not an object"
        elif (problem := _path_problem(path)) is None:
            parents = {"/".join(path.split("/")[:i]) for i in range(1, path.count("/") + 1)}
            size, digest = entry.get("bytes"), entry.get("sha256")
            if path in paths:
                problem = "listed twice"
            elif path in folders or parents & paths:
                problem = "both a file and the folder of another entry"
            elif isinstance(size, bool) or not isinstance(size, int) or size < 0:
                problem = "'bytes' is not a whole number >= 0"
            elif not isinstance(digest, str) or not _SHA256.fullmatch(digest):
                problem = "'sha256' is not 64 lowercase hex digits"
            paths.add(path)
            folders |= parents
        if problem:
            entry_name = f"file {number} {_show(path)}" if isinstance(entry, dict) else f"file {number}"
            raise UnsafeCheckpoint(f"unsafe checkpoint manifest {where}: {entry_name}: {problem}; nothing was written")
    return files


def _refuse_links(*paths: Path) -> None:
    for path in paths:
        if path.is_symlink():
            raise UnsafeCheckpoint(f"{path} is a symbolic link: pull never writes through a link inside DEST "
                                   f"(remove it); nothing was written")


def pull(uri: str, dest: str | Path, name: str | None = None) -> Path:
    """Download the latest complete checkpoint (or `name`) into dest/<name>, each file checked against the
    manifest's sha256; returns the folder, for resume_from_checkpoint. The bucket is not trusted: every path of
    the manifest is checked before anything is written (_checked_files), and no file is written through a link."""
    remote = list_remote(uri)
    complete = sorted((e for e in remote.values() if e.complete and e.step is not None), key=lambda e: e.step)
    if name is None:
        if not complete:
            raise S3Error(f"no complete checkpoint under {uri} (a checkpoint is complete once its {MANIFEST} is "
                          f"uploaded)")
        name = complete[-1].name
    elif name not in remote or not remote[name].complete:
        raise S3Error(f"no complete checkpoint {name} under {uri}")
    bucket, prefix = parse_uri(uri.rstrip("/") + "/")
    s3 = client()
    base = f"{prefix}{name}/"
    where = f"s3://{bucket}/{base}{MANIFEST}"
    body = with_retries("download", where, lambda _: s3.get_object(Bucket=bucket, Key=base + MANIFEST)["Body"].read())
    try:
        manifest = json.loads(body)
    except (ValueError, RecursionError):
        manifest = None
    if not isinstance(manifest, dict):
        raise UnsafeCheckpoint(f"unsafe checkpoint manifest {where}: not a JSON object; nothing was written")
    files = _checked_files(manifest, where)
    root = Path(dest).resolve()   # DEST itself may be a link the user made (onto a bigger disk): resolved once
    target = root / name          # name is checkpoint-N or final (list_remote): one plain part
    partial = target.with_name(target.name + ".partial")
    _refuse_links(target, partial)
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    for f in files:
        parts = f["path"].split("/")
        local = partial.joinpath(*parts)
        local.parent.mkdir(parents=True, exist_ok=True)
        # the folders were made here, under a fresh partial: a link among them would have been put by someone else
        if os.path.realpath(local.parent) != str(local.parent) or local.is_symlink():
            raise UnsafeCheckpoint(f"{local} is reached through a symbolic link: pull never writes through a link")

        def get(_retry_flag, f=f, local=local):
            s3.download_file(bucket, base + f["path"], str(local))
            if local.stat().st_size != f["bytes"] or sha256_file(local) != f["sha256"]:
                raise OSError(f"{f['path']} does not match its manifest")
        with_retries("download", f"s3://{bucket}/{base}{f['path']}", get)
    (partial / MANIFEST).write_bytes(body)
    if target.exists():
        shutil.rmtree(target)
    os.replace(partial, target)  # a pull cut short leaves only .partial, never a half checkpoint-N
    return Path(dest) / name


# ------------------------------------------------------------------------------------------------ watcher

def _signature(folder: Path) -> tuple:
    return tuple((rel, (folder / rel).stat().st_size, (folder / rel).stat().st_mtime_ns) for rel in _files(folder))


def _ready(folder: Path, stable_seconds: float, now: float) -> bool:
    """Saved and settled: trainer_state.json is the last file the HF Trainer writes into a checkpoint, and
    nothing changed for stable_seconds."""
    if not _regular(folder / "trainer_state.json"):
        return False
    newest = max(((folder / rel).stat().st_mtime for rel in _files(folder)), default=now)
    return now - newest >= stable_seconds


def _final_ready(out: Path, stable_seconds: float, now: float, since: float) -> bool:
    files = [out / n for n in FINAL_MODEL_FILES if _regular(out / n)]
    return bool(files) and all(since <= f.stat().st_mtime <= now - stable_seconds for f in files)


def _final_folder(out: Path, log: Callable[[str], None]) -> Path:
    """The top-level files of output_dir (the saved final model), hard-linked apart from the checkpoints."""
    stage = out / ".prepare-final"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir()
    for p in out.iterdir():
        if p.is_symlink():
            if not p.is_dir():   # folders are no part of the final model (a linked checkpoint-N is named above)
                _skipped(log, p.name)
        elif p.is_file():
            link_or_copy(p, stage / p.name)
    return stage


def _skipped(log: Callable[[str], None], name: str) -> None:
    log(f"{name}: a symbolic link, not uploaded (sync never follows links)")


def link_or_copy(src: Path, dst: Path) -> None:
    """A hard link is instant and survives the trainer deleting the original (save_total_limit); a copy where
    the file system cannot link. A link stays a link (never its target's content): listing() skips it."""
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError:
        shutil.copy2(src, dst, follow_symlinks=False)


def wait_for_folder(out: Path, wait_seconds: float, poll_seconds: float, log: Callable[[str], None]) -> None:
    """Sync is started beside the trainer, often before the trainer makes its output_dir: wait for it, saying
    so, up to wait_seconds."""
    waited = 0.0
    while not out.is_dir():
        if waited >= wait_seconds:
            raise FileNotFoundError(f"no such folder: {out}" + (f" (waited {wait_seconds:g} s for the trainer to "
                                                                 f"make it)" if wait_seconds else ""))
        log(f"waiting for {out} (the trainer's output_dir) to appear: {waited:g} of {wait_seconds:g} s")
        time.sleep(poll_seconds)
        waited += poll_seconds


def sync(out_dir: str | Path, uri: str, *, keep: int = 2, keep_final: int = 1, once: bool = False,
         poll_seconds: float = 30.0, stable_seconds: float = 10.0, log: Callable[[str], None] = print,
         max_polls: int | None = None, wait_seconds: float = 0.0) -> dict:
    """The watcher for trainers without callbacks: upload each settled checkpoint-N of out_dir, keep the last
    `keep` and the best on S3; when the final model appears at the top of out_dir (or with once=True, after
    one pass), upload it as final/, the evaluation report, and prune to the best (`keep_final` in all)."""
    out = Path(out_dir)
    wait_for_folder(out, wait_seconds, poll_seconds, log)
    started = time.time()
    done: dict[str, tuple] = {}
    linked: set[str] = set()   # linked checkpoint folders, named once
    polls = 0
    while True:
        now = time.time()
        folders = sorted((p for p in out.iterdir() if p.is_dir() and step_of(p.name) is not None),
                         key=lambda p: step_of(p.name))
        for folder in folders:
            if folder.is_symlink():
                if folder.name not in linked:
                    linked.add(folder.name)
                    _skipped(log, folder.name)
                continue
            if not _ready(folder, 0 if once else stable_seconds, now):
                continue
            sig = _signature(folder)
            if done.get(folder.name) == sig:
                continue
            for rel in listing(folder).links:
                _skipped(log, f"{folder.name}/{rel}")
            sent = upload_checkpoint(folder, uri)
            done[folder.name] = sig
            deleted = prune(uri, keep, record_best(uri, trainer_state(folder)), newest_step=step_of(folder.name))
            log(f"{folder.name}: {len(sent)} file(s) uploaded" + (f", pruned {', '.join(deleted)}" if deleted else ""))
        polls += 1
        final = _final_ready(out, 0 if once else stable_seconds, time.time(), 0 if once else started)
        if final or once or (max_polls is not None and polls >= max_polls):
            break
        time.sleep(poll_seconds)
    if not (final or once) or (not done and not final):  # stopped while training goes on: no end pruning
        return {"checkpoints": sorted(done, key=step_of), "best": None, "deleted": []}
    states = [trainer_state(out / n) for n in done] + [trainer_state(out)]
    state = max(states, key=lambda s: s.get("global_step") or -1)
    result = finish(uri, state, keep_final, _final_folder(out, log) if final else None)
    if final:
        shutil.rmtree(out / ".prepare-final", ignore_errors=True)
    log(f"final: best {result['best'] or '-'}" + (f", pruned {', '.join(result['deleted'])}" if result["deleted"] else ""))
    return {"checkpoints": sorted(done, key=step_of), **result}
