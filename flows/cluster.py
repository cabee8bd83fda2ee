"""A run on a Dask cluster (`prepare run --dask-address`): its progress, and a scheduler lost mid-run.

Progress goes through the scheduler: each worker process sends its shard counts as events of distributed's event
log (Worker.log_event), the scheduler passes them to the client that subscribed to the run's topic, and the
client's StageProgress sums them. Workers on other machines need no shared disk for it, and a late or lost event
costs a progress line, never the run. Counts only: a stage name, a shard index and a number; the topic is a
digest of the run's folder, whose path may name a person."""
from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
from pathlib import Path

from distributed import Client
from distributed.client import FutureCancelledError
from distributed.diagnostics.plugin import WorkerPlugin

from pipeline.core.errors import PrepareError
from pipeline.core.progress import CountFiles, send_counts_to

PLUGIN_NAME = "prepare-run-worker"


def count_topic(folder: str | Path) -> str:
    """The event topic of one run's counts: workers and client name the same absolute work folder."""
    return "prepare-progress-" + hashlib.sha256(str(Path(folder).absolute()).encode()).hexdigest()[:16]


class RunWorker(WorkerPlugin):
    """Set up in every worker process, those that join or restart later included (Client.register_plugin): the
    process's counts become events of its run's topic, and Prefect's outbound calls are off there too (a worker
    the nanny restarts after a kill never had check_workers' probe)."""

    def setup(self, worker) -> None:
        from flows import quiet_environment

        quiet_environment()

        def send(folder: str, stage: str, index: int, count: int) -> None:
            worker.log_event(count_topic(folder), {"stage": stage, "index": index, "count": count})

        send_counts_to(send)

    def teardown(self, worker) -> None:
        send_counts_to(None)


class ClusterCounts:
    """The client's view of a run's counts: the latest count of each (stage, shard) the workers sent, plus the
    files of this process's own work (the eval index is built here, not on a worker)."""

    def __init__(self, client: Client, folder: str | Path):
        self.files = CountFiles(folder)
        self.latest: dict[tuple[str, int], int] = {}
        self.lock = threading.Lock()  # events arrive on the client's event loop, totals are read by StageProgress
        client.register_plugin(RunWorker(), name=PLUGIN_NAME)
        client.subscribe_topic(count_topic(folder), self.receive)

    def receive(self, event: tuple[float, dict]) -> None:
        _, message = event
        with self.lock:
            self.latest[(message["stage"], message["index"])] = message["count"]

    def total(self, stage: str) -> int:
        with self.lock:
            sent = sum(count for (name, _), count in self.latest.items() if name == stage)
        return sent + self.files.total(stage)

    def clear(self, stage: str) -> None:
        self.files.clear(stage)
        with self.lock:
            for key in [key for key in self.latest if key[0] == stage]:
                del self.latest[key]


class SchedulerLost(PrepareError):
    """The scheduler went away mid-run: its futures are gone, and no worker can hand a result back."""


def scheduler_lost(exc: BaseException, address: str) -> SchedulerLost | None:
    """The run's one line when `exc` says the client lost the scheduler (distributed cancels every future)."""
    if isinstance(exc, FutureCancelledError) and exc.reason == "scheduler-connection-lost":
        return SchedulerLost(f"lost the Dask scheduler {address} mid-run; start a scheduler and its workers "
                             "again and rerun the same command: it resumes from the finished shards")
    return None


class ConsoleLinesTheCliReplaces(logging.Filter):
    """`prepare run --dask-address` ends a failed run with its reason in one line of its own, so the console
    (Prefect's handler, not the flow run's log on the server) leaves out: the flow's copy of that line
    (flows.prepare.log_failure), the engine's traceback of the same error, and the client's traceback of its
    reconnect to a lost scheduler, cut short when the run closes it."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if getattr(record, "prepare_failure", False) or isinstance(exc, PrepareError):
            return False
        return not (record.name == "distributed.client" and isinstance(exc, asyncio.CancelledError))


def one_line_failures() -> None:
    """ConsoleLinesTheCliReplaces on Prefect's console handlers (once)."""
    from prefect.logging.handlers import PrefectConsoleHandler

    for handler in logging.getLogger().handlers:
        if isinstance(handler, PrefectConsoleHandler) and not any(
                isinstance(f, ConsoleLinesTheCliReplaces) for f in handler.filters):
            handler.addFilter(ConsoleLinesTheCliReplaces())
