"""Progress of long work, on stderr: a live bar on a terminal, and otherwise one line every `interval`
seconds (logs, CI, Prefect workers), so a long step is never silent. Counts and rates only, never data."""
from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Protocol, TextIO


class Progress:
    """`update(n)` as work is done; `close()` prints the final count and rate. `log`, when given, receives
    the periodic lines instead of the stream (a Prefect logger's info, for instance)."""

    def __init__(self, label: str, unit: str = "records", total: int | None = None, *,
                 stream: TextIO | None = None, tty: bool | None = None, interval: float = 10.0,
                 log: Callable[[str], None] | None = None, enabled: bool = True):
        self.label, self.unit, self.total, self.interval = label, unit, total, interval
        self.stream = stream or sys.stderr
        self.log = log
        self.enabled = enabled
        self.done = 0
        self._start = self._last = time.monotonic()
        is_tty = self.stream.isatty() if tty is None else tty
        self._bar = None
        if enabled and is_tty and log is None:
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=label, unit=unit.rstrip("s") or unit, file=self.stream,
                             leave=False, unit_scale=True)

    def update(self, n: int = 1, quiet: bool = False) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
            return
        now = time.monotonic()
        if self.enabled and not quiet and now - self._last >= self.interval:
            self._last = now
            self._emit(self.line(now))

    def tick(self) -> None:
        """No new work, time passes: the periodic line still comes (a long step is never silent)."""
        self.update(0)

    def line(self, now: float | None = None) -> str:
        elapsed = max((now or time.monotonic()) - self._start, 1e-9)
        of = f" of {self.total:,}" if self.total is not None else ""
        return f"{self.label}: {self.done:,}{of} {self.unit} ({self.done / elapsed:,.0f}/s, {elapsed:.0f} s)"

    def _emit(self, text: str) -> None:
        if self.log is not None:
            self.log(text)
        else:
            print(text, file=self.stream, flush=True)

    def close(self, final: bool = True) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        if self.enabled and final:
            self._emit(self.line())

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close(final=exc[0] is None)


# --- stage progress across processes ----------------------------------------------------------------------
# A phase runs in worker processes (a process pool, Prefect tasks, a Dask cluster); each worker reports the
# running count of its shard per stage, and the main process sums them into one Progress per stage. By default
# a count is a small file in the run's work/progress, not a pipe or a queue: it works the same under every
# executor whose workers share the run directory's disk, and a worker never blocks on it. A process whose
# counts must travel another way (a Dask worker, through the scheduler: flows.cluster) sets a sink for them.

CountSink = Callable[[str, str, int, int], None]  # (progress folder, stage, shard index, count)
_sink: CountSink | None = None


def send_counts_to(sink: CountSink | None) -> None:
    """This process's ProgressFile counts go to `sink` instead of files from now on (None: files again)."""
    global _sink
    _sink = sink


def progress_interval(default: float = 10.0) -> float:
    """Seconds between two progress lines when not on a terminal (PREPARE_PROGRESS_INTERVAL overrides)."""
    try:
        return max(0.0, float(os.environ.get("PREPARE_PROGRESS_INTERVAL", default)))
    except ValueError:
        return default


class ProgressFile:
    """A worker's running count for one stage of one shard: `set(n)` rewrites `<folder>/<stage>-<index>` at most
    every `every` seconds (always with final=True), atomically, so the reader never sees half a number; or
    hands the count to this process's sink (send_counts_to), at the same pace."""

    def __init__(self, folder: str | os.PathLike, stage: str, index: int, every: float = 0.5):
        self.folder, self.stage, self.index = str(folder), stage, index
        self.path = Path(folder) / f"{stage}-{index:05d}"
        self.every, self._last, self._value = every, 0.0, None

    def set(self, n: int, final: bool = False) -> None:
        now = time.monotonic()
        if n == self._value or (not final and now - self._last < self.every):
            return
        self._last, self._value = now, n
        if _sink is not None:
            _sink(self.folder, self.stage, self.index, n)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        tmp.write_text(str(n))
        os.replace(tmp, self.path)


class StageCounts(Protocol):
    """Where the main process reads the workers' counts: `total(stage)` sums them, `clear(stage)` forgets them."""

    def total(self, stage: str) -> int: ...
    def clear(self, stage: str) -> None: ...


class CountFiles:
    """The counts ProgressFiles left in `folder`."""

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)

    def total(self, stage: str) -> int:
        total = 0
        try:
            entries = list(os.scandir(self.folder))
        except FileNotFoundError:
            return 0
        for entry in entries:
            if entry.name.startswith(f"{stage}-"):
                try:
                    total += int(Path(entry.path).read_text() or 0)
                except (OSError, ValueError):
                    pass  # replaced while read: the next poll sees it
        return total

    def clear(self, stage: str) -> None:
        for entry in (self.folder.glob(f"{stage}-*") if self.folder.is_dir() else ()):
            entry.unlink(missing_ok=True)


class StageProgress:
    """In the main process, while a phase runs: one Progress per stage, fed every `poll` seconds from the
    workers' counts. `stages`: name -> (label, unit, total or None). Stale counts of an earlier (killed) run or
    phase are cleared first. Closing prints each stage's final line (count and rate)."""

    def __init__(self, counts: StageCounts, stages: dict[str, tuple[str, str, int | None]], *,
                 enabled: bool = True, tty: bool = False, log: Callable[[str], None] | None = None,
                 poll: float = 0.5):
        self.counts, self.poll = counts, poll
        for name in stages:
            counts.clear(name)
        interval = progress_interval()
        self.bars = {name: Progress(label, unit, total, tty=tty, log=None if tty else log, interval=interval,
                                    enabled=enabled) for name, (label, unit, total) in stages.items()}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="prepare-progress", daemon=True)

    def _refresh(self, quiet: bool = False) -> None:
        for name, bar in self.bars.items():
            done = self.counts.total(name)
            if done > bar.done:
                bar.update(done - bar.done, quiet)
            elif not quiet:
                bar.tick()

    def _watch(self) -> None:
        while not self._stop.wait(self.poll):
            self._refresh()

    def __enter__(self) -> "StageProgress":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        if exc[0] is None:
            self._refresh(quiet=True)  # the final counts, in the closing line
        for bar in self.bars.values():
            bar.close(final=exc[0] is None)
