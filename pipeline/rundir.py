"""The run directory: which folder a run may write into, which files it may delete, one run at a time,
and worker processes that die with the run.

- A run directory is a folder prepare made: it holds the marker file MARKER. A missing or empty folder
  is created (adopted) and marked; an empty --out, a non-empty folder without the marker, a folder that
  is an input, holds one, or lies inside an input folder are refused before anything is written.
- Only names prepare itself writes are deleted (its shard names, quarantine files, work/), never other
  files a user keeps in the folder.
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
import fcntl
import glob
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path

MARKER = ".prepare-run"
WORKERS_LOCK = ".workers-lock"
SALT_FILE = "pii-salt"
MARKER_TEXT = "This folder is a prepare run directory. prepare deletes only the files it writes here.\n"
SHARD_NAME = re.compile(r"part-\d{5}\.parquet(\.tmp)?")
QUARANTINE_NAME = re.compile(r"\d{5}\.jsonl")
STALE_WORKERS_WAIT_S = 60.0
BUSY = "{run}: another prepare run is using this run directory; wait for it to end or choose another --out"


class PrepareError(Exception):
    """A run that cannot go on; str() is one line for the user (no personal data, no credentials)."""


def _real(path: str | Path) -> Path:
    return Path(os.path.realpath(path))


def _local_items(inputs: list[str]) -> list[str]:
    return [i for i in inputs if not i.startswith("s3://") and not glob.has_magic(i)]


def check_out(out: str, inputs: list[str]) -> None:
    """Refuse an --out the run must not write into. Reads only: called before anything is written.
    Messages name the run directory, never an input (file names may be personal data)."""
    if not out or not out.strip():
        raise PrepareError("--out is empty: name a run directory (an empty path would be the current folder)")
    run = Path(out)
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
    if (run / MARKER).is_file():
        _fail_if_busy(run)
    elif run.is_dir():
        try:
            with os.scandir(run) as entries:
                empty = next(entries, None) is None
        except OSError as exc:
            raise PrepareError(f"{out}: cannot read the run directory ({exc.strerror})") from None
        if not empty:
            raise PrepareError(f"{out}: --out is a folder that is not empty and was not made by prepare "
                               f"(no {MARKER}); choose a new or empty folder")


def _fail_if_busy(run: Path) -> None:
    """Fail before reading any input when another run holds the folder (RunDir.open takes the lock)."""
    try:
        fd = os.open(run / MARKER, os.O_RDONLY | os.O_CLOEXEC)
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
        self._fd: int | None = None

    def open(self) -> RunDir:
        marker = self.path / MARKER
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            fd = os.open(marker, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise PrepareError(f"{self.path}: cannot create the run directory ({exc.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise PrepareError(BUSY.format(run=self.path)) from None
        if os.fstat(fd).st_size == 0:
            os.write(fd, MARKER_TEXT.encode())
        self._fd = fd
        return self

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the only descriptor releases the flock
            self._fd = None

    def __enter__(self) -> RunDir:
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()

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
        """Delete this split's shard files (part-NNNNN.parquet and their temporaries), nothing else."""
        for folder in (self.path / split, self.path / split / "chat", self.path / split / "text"):  # split_by_kind
            if folder.is_dir() and not folder.is_symlink():
                for entry in os.scandir(folder):
                    if SHARD_NAME.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                        os.unlink(entry.path)

    def remove_stale_quarantine(self, keep: set[str]) -> None:
        """Delete quarantine files (NNNNN.jsonl) of shards this run does not have."""
        folder = self.path / "quarantine"
        if folder.is_dir():
            for entry in os.scandir(folder):
                if (QUARANTINE_NAME.fullmatch(entry.name) and entry.name[:-len(".jsonl")] not in keep
                        and entry.is_file(follow_symlinks=False)):
                    os.unlink(entry.path)


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
