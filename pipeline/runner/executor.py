"""Where the phases run: an Executor maps a phase function over shards. `LocalExecutor` is a process pool on
this machine; the Prefect flow passes one whose map() runs Prefect tasks."""
from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Callable, Protocol

from pipeline.core.progress import CountFiles, StageCounts
from pipeline.runner.rundir import worker_init


class Executor(Protocol):
    def map(self, fn: Callable, items: list, label: str, **kwargs) -> list: ...
    def call(self, fn: Callable, label: str, **kwargs) -> Any: ...
    def counts(self, folder: Path) -> StageCounts: ...


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
        # the largest first: the small shards (a file's last byte range) fill the end of the phase, where one
        # worker would otherwise run a whole shard alone while the other waits; results stay in item order
        order = sorted(range(len(items)), key=lambda i: -getattr(items[i], "weight", 0))
        futures = {self._pool.submit(fn, items[i], **kwargs): i for i in order}
        results: list[Any] = [None] * len(items)
        for future in as_completed(futures):
            results[futures[future]] = future.result()
        return results

    def warm(self, fn: Callable, **kwargs) -> None:
        """fn(**kwargs) once per worker, not waited for: loads the next map needs, made while the workers would
        idle (phase 2 runs in this process). The next map's tasks queue behind these calls. Best effort: each
        idle worker takes one call off the queue, and a failed call is dropped (the map's own task meets it)."""
        if self._pool is None:  # inline: nothing idles
            return
        for _ in range(self.workers):
            self._pool.submit(fn, **kwargs)

    def call(self, fn: Callable, label: str, **kwargs) -> Any:
        return fn(**kwargs)

    def counts(self, folder: Path) -> StageCounts:
        """Where the workers' progress counts are read: files in `folder`, on this machine's disk."""
        return CountFiles(folder)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
