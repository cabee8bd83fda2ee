"""The run directory: which folder a run may write into, which files it may delete, one run at a time,
and worker processes that die with the run.

- A run directory is a folder prepare made: its marker file MARKER is a JSON-lines ledger that prepare wrote,
  a header with a random run-directory id (recorded in manifest.json too) followed by the names of the files
  prepare wrote or is about to write. A name is not proof: an empty or foreign .prepare-run, a symlinked one,
  or one that is a hard link, marks nothing. A missing or empty folder is created (adopted) and marked; an
  empty --out, a non-empty folder without a marker, a folder that is an input, holds one, or lies inside an
  input folder are refused before anything is written.
- Only files listed in the ledger are replaced or deleted. A file at a name prepare writes (a shard, a
  quarantine file, a report, work/) that the ledger does not list stops the run, naming it; so does a
  symlink anywhere prepare writes, which would be written through.
- The marker is also the lock: the run's main process holds an exclusive flock on it for the whole run
  (released by the kernel when that process dies, even by SIGKILL); a second run into the same folder
  fails at once. Worker processes never hold it (spawned, they do not inherit the descriptor), so a stale
  worker cannot keep a folder locked.
- Workers die with the main process (PR_SET_PDEATHSIG on Linux, a parent-pid watchdog elsewhere) and hold
  a shared flock on work/WORKERS_LOCK while alive; a resumed run waits for that lock to be free, so it
  never works beside the workers of the run that was killed.
"""
from __future__ import annotations

import ctypes
import errno
import fcntl
import glob
import json
import os
import re
import shutil
import signal
import stat
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from pipeline.core.env import steady_heap
from pipeline.core.errors import PrepareError
from pipeline.data.readers.files import printable_name

MARKER = ".prepare-run"
MARKER_KIND = "prepare run directory"
MARKER_NOTE = "prepare replaces and deletes only the files listed in this file."
MARKER_MAX_BYTES = 64 << 20  # a ledger line per shard: far more than any run directory needs
WORKERS_LOCK = ".workers-lock"
SALT_FILE = "pii-salt"
SHARD_NAME = re.compile(r"part-\d{5}\.parquet(\.tmp)?")
QUARANTINE_NAME = re.compile(r"\d{5}\.jsonl")
RUN_ID = re.compile(r"[0-9a-f]{32}")
WORK = "work/"
DECONTAM_REMOVED = "decontam_removed.parquet"  # the audit of records removed as copies of eval set items
OWN_FILES = ("manifest.json", "report.json", "report.md", "report.html", "lengths.png", "dedup_removed.parquet",
             DECONTAM_REMOVED)
SPLIT_FOLDERS = ("train", "validation", "train/chat", "train/text", "validation/chat", "validation/text")
STALE_WORKERS_WAIT_S = 60.0
BUSY = "{run}: another prepare run is using this run directory; wait for it to end or choose another --out"



def _real(path: str | Path) -> Path:
    return Path(os.path.realpath(path))


def _local_items(inputs: list[str]) -> list[str]:
    return [i for i in inputs if not i.startswith("s3://") and not glob.has_magic(i)]


# --- the marker: a ledger of the files prepare wrote ------------------------------------------------------

@dataclass
class Ledger:
    id: str
    files: set[str]  # paths relative to the run directory; "work/" for the work folder


def _parse_ledger(data: bytes) -> Ledger | None:
    """The header and the claims of a marker; None when prepare did not write it. A torn last line (a run
    killed while appending) is skipped: appends start on a new line, so it never merges with the next."""
    lines = [line for line in data.split(b"\n") if line.strip()]
    try:
        header = json.loads(lines[0]) if lines else None
    except ValueError:
        return None
    if not (isinstance(header, dict) and header.get("kind") == MARKER_KIND
            and isinstance(header.get("id"), str) and RUN_ID.fullmatch(header["id"])):
        return None
    files: set[str] = set()
    for line in lines[1:]:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            files |= {n for n in entry.get("wrote", []) if isinstance(n, str)}
            files -= {n for n in entry.get("deleted", []) if isinstance(n, str)}
    return Ledger(header["id"], files)


def _open_marker(run: Path, flags: int) -> int:
    """The marker, never through a symlink, and only a plain file of its own (a hard link to a user's file
    would have the ledger appended to it)."""
    path = run / MARKER
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PrepareError(f"{path}: is a symlink, not a marker prepare wrote; choose a new or empty "
                               "folder") from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        raise PrepareError(f"{path}: is not a marker prepare wrote (not a plain file); choose a new or empty folder")
    return fd


def _read_ledger_fd(fd: int, run: Path) -> Ledger:
    size = os.fstat(fd).st_size
    ledger = _parse_ledger(os.pread(fd, min(size, MARKER_MAX_BYTES), 0)) if size <= MARKER_MAX_BYTES else None
    if ledger is None:
        raise PrepareError(f"{run}: --out holds a {MARKER} that prepare did not write (or an older version "
                           "did); choose a new or empty folder")
    return ledger


def read_ledger(run: str | Path) -> Ledger:
    """The ledger of a run directory; PrepareError when its marker is missing or not prepare's."""
    run = Path(run)
    try:
        fd = _open_marker(run, os.O_RDONLY)
    except FileNotFoundError:
        raise PrepareError(f"{run}: no {MARKER}: not a run directory") from None
    try:
        return _read_ledger_fd(fd, run)
    finally:
        os.close(fd)


def _append(run: Path, entry: dict) -> None:
    fd = _open_marker(run, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, b"\n" + json.dumps(entry).encode() + b"\n")
    finally:
        os.close(fd)


def claim(run: str | Path, names: list[str]) -> None:
    """Record in the ledger, before writing them, the files prepare is about to write: a run killed between
    the two leaves a name without a file, never a file of its own it may not delete."""
    if names:
        _append(Path(run), {"wrote": sorted(names)})


def release(run: str | Path, names: list[str]) -> None:
    """Record that prepare deleted these files: the names may hold someone else's files later."""
    if names:
        _append(Path(run), {"deleted": sorted(names)})


def _create_marker(run: Path) -> None:
    """A new marker with its header, appearing whole (link() fails if another run made one meanwhile)."""
    header = {"kind": MARKER_KIND, "id": os.urandom(16).hex(), "note": MARKER_NOTE}
    tmp = run / f".prepare-run.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, json.dumps(header).encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, run / MARKER)
    except FileExistsError:
        pass  # another run's marker: the flock decides
    finally:
        os.unlink(tmp)


# --- what prepare may write and delete ---------------------------------------------------------------------

def _own_entries(run: Path) -> list[tuple[str, os.stat_result]]:
    """(relative name, lstat) of every existing entry at a name prepare writes or deletes."""
    found = []
    for rel in (*OWN_FILES, WORK.rstrip("/"), *SPLIT_FOLDERS, "quarantine"):
        try:
            found.append((rel, os.lstat(run / rel)))
        except FileNotFoundError:
            pass
    for folder, pattern in [*((f, SHARD_NAME) for f in SPLIT_FOLDERS), ("quarantine", QUARANTINE_NAME)]:
        if not (run / folder).is_dir() or (run / folder).is_symlink():
            continue
        with os.scandir(run / folder) as entries:
            found += [(f"{folder}/{e.name}", e.stat(follow_symlinks=False))
                      for e in entries if pattern.fullmatch(e.name)]
    return found


def _claim_name(rel: str) -> str:
    """The ledger name of an entry: a shard's temporary goes with its shard, work/ is one name."""
    return WORK if rel == WORK.rstrip("/") else rel.removesuffix(".tmp")


def check_own_entries(run: str | Path, ledger: Ledger) -> None:
    """Refuse, naming it, a symlink where prepare writes (it would write through it) and a file at a name
    prepare replaces or deletes that its ledger does not list (someone else's)."""
    run = Path(run)
    for rel, st in _own_entries(run):
        if stat.S_ISLNK(st.st_mode):
            raise PrepareError(f"{run / rel}: is a symlink where prepare writes (it would write through it); "
                               "remove it or choose a new folder")
        is_folder = rel in SPLIT_FOLDERS or rel in ("quarantine", WORK.rstrip("/"))
        if is_folder != stat.S_ISDIR(st.st_mode):
            raise PrepareError(f"{run / rel}: is not a {'folder' if is_folder else 'plain file'} where prepare "
                               "writes one; move it away or choose a new folder")
        if (rel not in SPLIT_FOLDERS and rel != "quarantine") and _claim_name(rel) not in ledger.files:
            raise PrepareError(f"{run / rel}: not written by prepare into this run directory (prepare replaces "
                               f"and deletes only the files its {MARKER} lists); move it away and run again")


def check_out(out: str, inputs: list[str]) -> None:
    """Refuse an --out the run must not write into. Reads only: called before anything is written.
    Messages name the run directory, never an input (file names may be personal data)."""
    if not out or not out.strip():
        raise PrepareError("--out is empty: name a run directory (an empty path would be the current folder)")
    run = Path(out)
    try:
        os.path.abspath(out).encode("utf-8")
    except UnicodeEncodeError:  # pyarrow takes paths as UTF-8 only
        raise PrepareError(f"{printable_name(os.path.abspath(out))}: --out is not a UTF-8 path; choose a folder "
                           "whose name is UTF-8 text") from None
    if run.exists() and not run.is_dir():
        raise PrepareError(f"{out}: --out exists and is not a folder")
    real = _real(out)
    for item in _local_items(inputs):
        path = _real(item)
        if path == real:
            raise PrepareError(f"{out}: --out is one of the inputs; choose a folder outside the inputs")
        if path.is_relative_to(real):
            raise PrepareError(f"{out}: --out holds an input; choose a folder outside the inputs")
        if os.path.isdir(path) and real.is_relative_to(path):
            raise PrepareError(f"{out}: --out is inside an input folder (its outputs would become inputs); "
                               "choose a folder outside the inputs")
    if os.path.lexists(run / MARKER):
        ledger = read_ledger(run)
        _fail_if_busy(run)
        check_own_entries(run, ledger)
    elif run.is_dir() and not _is_empty(run):
        raise PrepareError(f"{out}: --out is a folder that is not empty and was not made by prepare "
                           f"(no {MARKER}); choose a new or empty folder")


def _is_empty(run: Path) -> bool:
    try:
        with os.scandir(run) as entries:
            return next(entries, None) is None
    except OSError as exc:
        raise PrepareError(f"{run}: cannot read the run directory ({exc.strerror})") from None


def _fail_if_busy(run: Path) -> None:
    """Fail before reading any input when another run holds the folder (RunDir.open takes the lock)."""
    try:
        fd = _open_marker(run, os.O_RDONLY)
    except OSError:
        return  # RunDir.open says why
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise PrepareError(BUSY.format(run=run)) from None
    finally:
        os.close(fd)


def is_inside(path: str, run_dir: str | Path) -> bool:
    """Whether a local input file lies in the run directory (through symlinks too)."""
    return _real(path).is_relative_to(_real(run_dir))


class RunDir:
    """Create or adopt the run directory, mark it and hold its lock until close()."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.work = self.path / "work"
        self.id: str | None = None
        self._fd: int | None = None

    def open(self) -> RunDir:
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            if not os.path.lexists(self.path / MARKER):
                if not _is_empty(self.path):  # filled since check_out looked
                    raise PrepareError(f"{self.path}: --out is a folder that is not empty and was not made by "
                                       f"prepare (no {MARKER}); choose a new or empty folder")
                _create_marker(self.path)
            fd = _open_marker(self.path, os.O_RDWR | os.O_APPEND)
        except OSError as exc:
            raise PrepareError(f"{self.path}: cannot create the run directory ({exc.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise PrepareError(BUSY.format(run=self.path)) from None
        try:
            ledger = _read_ledger_fd(fd, self.path)
            check_own_entries(self.path, ledger)  # again, with the lock held
        except PrepareError:
            os.close(fd)
            raise
        self._fd, self.id = fd, ledger.id
        claim(self.path, [n for n in (*OWN_FILES, WORK) if n not in ledger.files])
        return self

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the only descriptor releases the flock
            self._fd = None

    def __enter__(self) -> RunDir:
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()

    def claim(self, names: list[str]) -> None:
        claim(self.path, names)

    # --- workers of a killed run ----------------------------------------------------------------------

    def workers_lock(self) -> Path:
        return self.work / WORKERS_LOCK

    def wait_for_stale_workers(self, timeout: float | None = None) -> None:
        """Block until no worker of an earlier run holds work/WORKERS_LOCK, so a resumed run never
        races a killed run's workers (they die with their parent within a second)."""
        timeout = STALE_WORKERS_WAIT_S if timeout is None else timeout
        try:
            self.work.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.workers_lock(), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise PrepareError(f"{self.path}: cannot write the work folder ({exc.strerror})") from None
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise PrepareError(f"{self.path}: worker processes of an earlier run are still "
                                           "alive and writing into work/; end them and run again") from None
                    time.sleep(0.1)
        finally:
            os.close(fd)

    # --- deleting only what prepare wrote -------------------------------------------------------------

    def remove_shards(self, split: str) -> None:
        """Delete this split's shard files (part-NNNNN.parquet and their temporaries, in the split_by_kind
        folders too) that the ledger lists, nothing else."""
        self._remove([rel for rel, _ in _own_entries(self.path)
                      if rel.split("/")[0] == split and SHARD_NAME.fullmatch(rel.rsplit("/", 1)[-1])])

    def remove_stale_quarantine(self, keep: set[str]) -> None:
        """Delete the listed quarantine files (NNNNN.jsonl) of shards this run does not have."""
        self._remove([rel for rel, _ in _own_entries(self.path) if rel.startswith("quarantine/")
                      and QUARANTINE_NAME.fullmatch(rel[len("quarantine/"):])
                      and rel[len("quarantine/"):-len(".jsonl")] not in keep])

    def remove_work(self) -> None:
        """Delete work/ (the run's salt is in it) when the ledger lists it and it is a folder, not a link."""
        if WORK in read_ledger(self.path).files and self.work.is_dir() and not self.work.is_symlink():
            shutil.rmtree(self.work, ignore_errors=True)
            release(self.path, [WORK])

    def _remove(self, rels: list[str]) -> None:
        listed = read_ledger(self.path).files
        for rel in rels:
            if _claim_name(rel) in listed and stat.S_ISREG(os.lstat(self.path / rel).st_mode):
                os.unlink(self.path / rel)
        release(self.path, sorted({_claim_name(r) for r in rels if _claim_name(r) in listed
                                   and not os.path.lexists(self.path / _claim_name(r))}))


# --- the pseudonym salt of a run ---------------------------------------------------------------------

def ensure_salt(work_dir: str | Path) -> None:
    """A random salt for this run, kept in work/ (mode 0600, outside the outputs) so that a resumed run
    pseudonymizes as the killed one did and reuses its finished shards; removed with work/ at success."""
    path = Path(work_dir) / SALT_FILE
    if path.is_file() and path.stat().st_size:
        return
    tmp = path.with_name(f".{SALT_FILE}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, os.urandom(16).hex().encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def read_salt(work_dir: str | Path) -> bytes | None:
    try:
        return (Path(work_dir) / SALT_FILE).read_bytes() or None
    except FileNotFoundError:
        return None


# --- worker processes die with the run -------------------------------------------------------------

_held: list[int] = []  # the worker's descriptor of work/WORKERS_LOCK, open (and locked) for its life


def worker_init(parent_pid: int, workers_lock: str | None) -> None:
    """Pool initializer. A spawned worker otherwise outlives a SIGKILLed parent, blocked on its task
    queue or still writing into work/ while the next run resumes there."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: the kernel kills us when it dies
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # it died before prctl took effect
        os._exit(1)
    steady_heap()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group; the parent handles it (cli.py)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="prepare-parent-watch", daemon=True).start()
    if workers_lock:
        fd = os.open(workers_lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_SH)
        _held.append(fd)


def _watch_parent(parent_pid: int) -> None:
    """Fallback where PR_SET_PDEATHSIG is missing: a dead parent's children get another parent."""
    while True:
        time.sleep(0.25)
        if os.getppid() != parent_pid:
            os._exit(1)
