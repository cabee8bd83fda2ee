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
import os
import threading
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from distributed import Client
from distributed.client import FutureCancelledError
from distributed.diagnostics.plugin import WorkerPlugin

from pipeline.core.env import steady_heap
from pipeline.core.errors import PrepareError
from pipeline.core.progress import CountFiles, send_counts_to

PLUGIN_NAME = "prepare-run-worker"


def count_topic(folder: str | Path) -> str:
    """The event topic of one run's counts: workers and client name the same absolute work folder."""
    return "prepare-progress-" + hashlib.sha256(str(Path(folder).absolute()).encode()).hexdigest()[:16]


class RunWorker(WorkerPlugin):
    """Set up in every worker process, those that join or restart later included (Client.register_plugin): the
    process's counts become events of its run's topic, and Prefect's outbound calls are off there too (a worker
    the nanny restarts after a kill never had check_workers' probe). `api_url`, the flow's Prefect API, is the
    process's PREFECT_API_URL unless it has one: each task's settings carry it too, but what Prefect reads from
    the environment alone (a worker's first import of it) then finds the flow's server, not a server of its own."""

    def __init__(self, api_url: str | None = None):
        self.api_url = api_url

    def setup(self, worker) -> None:
        from flows import quiet_environment

        quiet_environment()
        steady_heap()  # the nanny's MALLOC_TRIM_THRESHOLD_ cost numpy-heavy steps 1.4x their CPU
        if self.api_url:
            os.environ.setdefault("PREFECT_API_URL", self.api_url)

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
        client.register_plugin(RunWorker(flow_api_url()), name=PLUGIN_NAME)
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


def flow_api_url() -> str | None:
    """The Prefect API of the flow run in this process (its settings), None outside one."""
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value() or None


@contextmanager
def one_prefect_api() -> Iterator[str]:
    """The Prefect API that the flow and every task on the workers use: the user's PREFECT_API_URL, else a
    temporary server started here (what the flow would start itself), set as PREFECT_API_URL of the settings
    around the run. Without it the flow's settings named no API, each task carried none to its worker, and every
    worker process started a temporary server of its own: tens of CPU-seconds per process, again after a
    restart, its task runs seen on no server. The temporary server listens on 127.0.0.1: workers on other
    machines need a PREFECT_API_URL that they reach (check_api)."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    if PREFECT_API_URL.value():
        yield PREFECT_API_URL.value()
        return
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()  # Prefect's own temporary server, stopped when this process exits
    server.start()
    with temporary_settings({PREFECT_API_URL: server.api_url}):
        yield server.api_url


def api_reachable(api_url: str) -> str | None:
    """Run in a worker: None when the Prefect API answers, else the error's type."""
    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=10):
            return None
    except Exception as exc:
        return type(exc).__name__


def check_api(dask_address: str, api_url: str) -> None:
    """One line for the first worker that cannot reach the flow's Prefect API (before any task)."""
    with Client(dask_address, timeout=20, set_as_default=False) as client:
        problems = client.run(api_reachable, api_url)
    parts = urllib.parse.urlsplit(api_url)
    shown = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()  # never a user:password in it
    for worker, problem in sorted(problems.items()):
        if problem:
            raise PrepareError(f"the Dask worker {worker} cannot reach the Prefect API {shown} ({problem}); "
                               "set PREFECT_API_URL to a Prefect server that this machine and every worker reach")


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
