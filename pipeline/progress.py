"""Progress of long work, on stderr: a live bar on a terminal, and otherwise one line every `interval`
seconds (logs, CI, Prefect workers), so a long step is never silent. Counts and rates only, never data."""
from __future__ import annotations

import sys
import time
from typing import Callable, TextIO


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

    def update(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
            return
        now = time.monotonic()
        if self.enabled and now - self._last >= self.interval:
            self._last = now
            self._emit(self.line(now))

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
