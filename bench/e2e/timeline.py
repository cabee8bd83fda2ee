"""A bench-only timeline of a local run: when each shard task ran, in which worker, and how many cores were busy.

TimedExecutor is the LocalExecutor with every mapped task and every call timed (wall start/end and the
process's CPU time inside it). `summary()` says, per phase (a map or a call, in run order), its wall, the
core-seconds spent in tasks and the core-seconds left idle on `cores` cores, and the time before the first
task and between phases, when only the main process works.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

from pipeline.runner.executor import LocalExecutor


@dataclass
class Span:
    phase: str
    task: str
    worker: int
    start: float  # time.time(), comparable across processes
    end: float
    cpu: float


class Timed:
    """fn(item) in a worker, with its span: picklable (a module-level class holding a module-level function)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, item, **kwargs):
        t0, c0 = time.time(), time.process_time()
        result = self.fn(item, **kwargs)
        return result, (os.getpid(), t0, time.time(), time.process_time() - c0)


class TimedExecutor(LocalExecutor):
    def __init__(self, workers: int):
        super().__init__(workers, progress=False)
        self.spans: list[Span] = []
        self.phases: list[tuple[str, float, float]] = []  # (label, start, end) of each map or call
        self.t0 = time.time()

    def map(self, fn, items, label, **kwargs):
        start = time.time()
        pairs = super().map(Timed(fn), items, label, **kwargs)
        self.phases.append((label, start, time.time()))
        for item, (_result, (pid, t0, t1, cpu)) in zip(items, pairs):
            self.spans.append(Span(label, str(getattr(item, "index", "")), pid, t0, t1, cpu))
        return [result for result, _span in pairs]

    def call(self, fn, label, **kwargs):
        start, c0 = time.time(), time.process_time()
        result = fn(**kwargs)
        end = time.time()
        self.phases.append((label, start, end))
        self.spans.append(Span(label, "", os.getpid(), start, end, time.process_time() - c0))
        return result

    def summary(self, end: float, cores: int = 2) -> str:
        """Per phase and between phases: wall, busy core-seconds (task wall), idle core-seconds on `cores`."""
        lines = [f"{'phase':<22} {'start':>7} {'wall-s':>7} {'task-s':>7} {'task cpu-s':>10} {'idle core-s':>11} "
                 f"{'tail-s':>7}"]
        idle_total, last = 0.0, self.t0
        for label, start, stop in self.phases:
            if start - last > 0.05:
                idle_total += self._row(lines, "(main only)", last, start, [], cores)
            spans = [s for s in self.spans if s.phase == label and s.start >= start - 0.01 and s.end <= stop + 0.01]
            idle_total += self._row(lines, label, start, stop, spans, cores)
            last = stop
        if end - last > 0.05:
            idle_total += self._row(lines, "(main only)", last, end, [], cores)
        lines.append(f"idle core-seconds in all: {idle_total:,.1f} of {cores * (end - self.t0):,.1f} "
                     f"({idle_total / (cores * (end - self.t0)):.0%}); cores busy on average: "
                     f"{cores - idle_total / (end - self.t0):.2f} (tasks and the main process's work count as busy)")
        return "\n".join(lines)

    def _row(self, lines: list[str], label: str, start: float, stop: float, spans: list[Span], cores: int) -> float:
        wall = stop - start
        if not spans:  # the main process alone: one core busy
            busy, cpu, tail = wall, 0.0, 0.0
        else:
            busy = sum(s.end - s.start for s in spans)
            cpu = sum(s.cpu for s in spans)
            ends = sorted(s.end for s in spans)
            # the last task alone: from the second-last task's end (one worker free) to the phase's end
            tail = ends[-1] - ends[-2] if len(ends) > 1 else 0.0
        idle = max(0.0, cores * wall - busy) if spans and len(spans) > 1 else (cores - 1) * wall
        lines.append(f"{label:<22} {start - self.t0:>7.1f} {wall:>7.1f} {busy:>7.1f} {cpu:>10.1f} {idle:>11.1f} "
                     f"{tail:>7.1f}")
        return idle

    def detail(self) -> str:
        """Every task's span, in start order."""
        pids = {pid: i for i, pid in enumerate(sorted({s.worker for s in self.spans}))}
        return "\n".join(f"  {s.phase:<10} shard {s.task:>5} worker {pids[s.worker]} "
                         f"{s.start - self.t0:>7.1f} -> {s.end - self.t0:>7.1f}  cpu {s.cpu:6.1f}"
                         for s in sorted(self.spans, key=lambda s: s.start))


class MainParts:
    """The main process's named parts (functions looked up in their module at call time, e.g. finalize's), timed:
    wall and CPU per part, summed over calls."""

    def __init__(self):
        self.totals: dict[str, list[float]] = {}

    def wrap(self, module, names: list[str]) -> "MainParts":
        for name in names:
            setattr(module, name, self._timed(name, getattr(module, name)))
        return self

    def _timed(self, name: str, fn):
        def timed(*args, **kwargs):
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                total = self.totals.setdefault(name, [0.0, 0.0])
                total[0] += time.perf_counter() - t0
                total[1] += time.process_time() - c0
        return timed

    def report(self) -> str:
        return "\n".join(f"  {name:<24} wall {w:6.1f} s  cpu {c:6.1f} s" for name, (w, c) in self.totals.items())
