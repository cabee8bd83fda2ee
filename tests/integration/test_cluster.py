"""A Dask cluster as a user starts it: `dask scheduler` and `dask worker` processes of their own, started in
another folder than the run's, reached over TCP on 127.0.0.1 (issue 35). Every process is killed at teardown,
every wait is bounded."""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
from slowshards import slow_shards
from test_resilience import make_inputs

from flows.services import BIN, free_port, stop_process

ROOT = Path(__file__).resolve().parents[2]
SALT = "PREPARE_PII_SALT"
OUTBOUND_SETTINGS = ("DO_NOT_TRACK", "PREFECT_SERVER_ANALYTICS_ENABLED", "PREFECT_SERVER_UI_SHOW_PROMOTIONAL_CONTENT",
                     "PREFECT_CLOUD_ENABLE_ORCHESTRATION_TELEMETRY")


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"dask scheduler exited with code {proc.returncode}"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"the scheduler on port {port} did not answer within {timeout:.0f} s")


def without_prefect_and_salt() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (SALT, "PREFECT_API_URL")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


@contextmanager
def dask_cluster(home: Path, env: dict[str, str], workers: int = 1) -> Iterator[tuple[str, list[subprocess.Popen]]]:
    """`dask scheduler` and `dask worker --nworkers N` started in `home` with `env`, as a user types them; yields
    the scheduler's address and the processes (scheduler first), all stopped at the end."""
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    log = open(home / "dask.log", "a")
    procs = [subprocess.Popen([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--no-dashboard"], cwd=home, env=env, stdout=log, stderr=log)]
    try:
        wait_port(port, procs[0])
        procs.append(subprocess.Popen([str(BIN / "dask"), "worker", address, "--nworkers", str(workers),
                                       "--nthreads", "1", "--no-dashboard", "--host", "127.0.0.1"], cwd=home,
                                      env=env, stdout=log, stderr=log))
        from distributed import Client

        with Client(address, timeout=60, set_as_default=False) as client:
            client.wait_for_workers(workers, timeout=90)
        yield address, procs
    finally:
        for proc in reversed(procs):
            stop_process(proc)
        log.close()


@pytest.fixture(scope="module")
def cluster_home(tmp_path_factory) -> Path:
    """The folder the module's cluster is started in; its log is dask.log there."""
    return tmp_path_factory.mktemp("dask-home")


@pytest.fixture(scope="module")
def cluster(cluster_home):
    """A scheduler and one worker process started in a folder of their own, without PREPARE_PII_SALT and
    PREFECT_API_URL; yields the scheduler's address."""
    with dask_cluster(cluster_home, without_prefect_and_salt()) as (address, _):
        yield address


def prepare(args: list[str], cwd: Path, **env_overrides) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in (SALT, "PREFECT_API_URL")}
    env.update(PYTHONPATH=str(ROOT), PREFECT_HOME=str(cwd / ".prefect"), **env_overrides)
    return subprocess.run([sys.executable, "-m", "pipeline.cli", "run", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=240)


def shard_bytes(run_dir: Path) -> list[bytes]:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    return [(run_dir / shard["path"]).read_bytes() for shard in manifest["shards"]]


@pytest.mark.integration
@pytest.mark.slow
def test_relative_paths_run_on_workers_started_elsewhere(cluster, cluster_home, tmp_path):
    """`prepare run data --out run` typed in the project folder: the workers, started in another folder, get
    absolute paths (before: normalize failed with FileNotFoundError on every shard). Without PREFECT_API_URL
    anywhere, the run starts one temporary Prefect server and the worker's tasks report to it (before: each
    worker process started a server of its own)."""
    project = tmp_path / "project"
    project.mkdir()
    make_inputs(project / "data", files=2, rows=60)
    fast = ["--no-pii", "--no-lengths", "--no-estimate"]
    local = prepare(["data", "--out", "local", "--workers", "1", *fast], project)
    assert local.returncode == 0, local.stderr[-2000:]
    remote = prepare(["data", "--out", "remote", "--dask-address", cluster, *fast], project,
                     PREPARE_PROGRESS_INTERVAL="1")
    assert remote.returncode == 0, remote.stderr[-3000:]
    assert shard_bytes(project / "remote") == shard_bytes(project / "local")
    assert not list((project / "remote").glob(".prepare-probe-*"))  # the shared-folder probe cleans up
    assert "Starting temporary server" not in (cluster_home / "dask.log").read_text()
    assert remote.stderr.count("Starting temporary server") <= 1, remote.stderr[-3000:]
    # progress came from the workers through the scheduler (before: files in work/progress, 0 on other machines)
    assert re.search(r"- read: 120 records \(", remote.stderr), remote.stderr[-3000:]
    assert re.search(r"- write: 120 of 120 records \(", remote.stderr), remote.stderr[-3000:]
    from distributed import Client

    from flows.cluster import count_topic
    from pipeline.runner.work import progress_dir

    with Client(cluster, timeout=30, set_as_default=False) as client:
        events = client.get_events(count_topic(progress_dir(project / "remote" / "work")))
    latest = {(m["stage"], m["index"]): m["count"] for _, m in events}
    assert sum(n for (stage, _), n in latest.items() if stage == "read") == 120
    assert {key for _, m in events for key in m} == {"stage", "index", "count", "worker"}  # counts, never data


@pytest.mark.integration
@pytest.mark.slow
def test_a_run_against_an_earlier_one_looks_it_up_in_tasks_of_the_cluster(cluster, tmp_path):
    """`--against`'s lookup (runner/history.py) runs as tasks on the workers (before: one step in the flow's
    process), and writes what the local run writes: shards, the dedup audit and the lookup's report."""
    from test_against_run import write_inputs

    write_inputs(tmp_path)  # v1.jsonl; v2.jsonl holds an exact and a near copy of v1 records
    fast = ["--no-pii", "--no-lengths", "--no-estimate"]
    assert prepare(["v1.jsonl", "--out", "v1", "--workers", "1", *fast], tmp_path).returncode == 0
    local = prepare(["v2.jsonl", "--out", "local", "--against", "v1", "--workers", "1", *fast], tmp_path)
    assert local.returncode == 0, local.stderr[-2000:]
    remote = prepare(["v2.jsonl", "--out", "remote", "--against", "v1", "--dask-address", cluster, *fast], tmp_path)
    assert remote.returncode == 0, remote.stderr[-3000:]
    assert shard_bytes(tmp_path / "remote") == shard_bytes(tmp_path / "local")
    audit = [(tmp_path / run / "dedup_removed.parquet").read_bytes() for run in ("local", "remote")]
    assert audit[0] == audit[1]
    reports = [json.loads((tmp_path / run / "report.json").read_text())["dedup"]["against"]
               for run in ("local", "remote")]
    assert reports[0] == reports[1] and reports[0]["removed"] == 2 and reports[0]["proposed_pairs"] > 0
    from distributed import Client

    with Client(cluster, timeout=30, set_as_default=False) as client:
        keys = client.run_on_scheduler(lambda dask_scheduler: [str(t[0]) for t in dask_scheduler.transition_log])
    lookup = {key.rsplit("-", 5)[0] for key in keys if key.startswith("run_lookup_task-")}
    assert lookup, sorted({key.split("-")[0] for key in keys})  # the lookup's tasks went to the cluster


@pytest.mark.integration
@pytest.mark.slow
def test_salt_missing_on_workers_fails_before_a_record_is_read(cluster, tmp_path):
    """The workers were started before PREPARE_PII_SALT was exported: one line naming the worker, exit 2, and no
    run directory (before: the run read every record, then failed in the PII step)."""
    make_inputs(tmp_path / "data", files=1, rows=20)
    run = prepare(["data", "--out", "run", "--dask-address", cluster, "--no-lengths", "--no-estimate"], tmp_path,
                  **{SALT: "a-salt-only-this-machine-has"})
    assert run.returncode == 2, run.stderr[-2000:]
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("prepare: error: "), run.stderr[-2000:]
    assert f"{SALT} is set here but not on the Dask worker tcp://127.0.0.1:" in lines[0]
    assert "a-salt-only-this-machine-has" not in run.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.integration
@pytest.mark.slow
def test_servers_the_project_starts_have_telemetry_off(tmp_path):
    """The temporary Prefect server a flow run starts (no PREFECT_API_URL, as `prepare run --dask-address` on a
    fresh machine), in an environment with none of the settings: its settings say analytics off, its process
    has DO_NOT_TRACK (before: analytics on, and it tried to reach sens-o-matic.prefect.io)."""
    script = (
        "import json, os, urllib.request\n"
        "import flows.prepare\n"
        "from prefect.server.api.server import SubprocessASGIServer\n"
        "server = SubprocessASGIServer()\n"
        "server.start(timeout=120)\n"
        "try:\n"
        "    with urllib.request.urlopen(server.api_url + '/admin/settings', timeout=10) as r:\n"
        "        settings = json.load(r)\n"
        "    env = open(f'/proc/{server.server_process.pid}/environ', 'rb').read().split(b'\\0')\n"
        "    print(json.dumps({'analytics': settings['server']['analytics_enabled'],\n"
        "                      'promotional': settings['server']['ui']['show_promotional_content'],\n"
        "                      'do_not_track': b'DO_NOT_TRACK=1' in env}))\n"
        "finally:\n"
        "    server.stop()\n")
    env = {k: v for k, v in os.environ.items() if k not in OUTBOUND_SETTINGS and k != "PREFECT_API_URL"}
    env.update(PYTHONPATH=str(ROOT), PREFECT_HOME=str(tmp_path / "prefect"))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"analytics": False, "promotional": False, "do_not_track": True}


# A worker or the scheduler lost mid-run. Every process reaches one Prefect server of the module (as the docs
# advise for workers on several machines); shards are a file each, and slowed (2 s) on the workers so that a
# run is caught mid-way.

ONE_FILE_A_SHARD = {"read": {"files_per_shard": 1}}
FAST = ["--no-pii", "--no-lengths", "--no-estimate", "--config", "shards.json"]


@pytest.fixture(scope="module")
def prefect_url(tmp_path_factory):
    from flows.services import prefect_server

    home = tmp_path_factory.mktemp("prefect")
    with prefect_server(home / "home", log=home / "server.log") as env:
        yield env["PREFECT_API_URL"]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """Inputs of four shards and the shard bytes of their local run (--workers 1)."""
    project = tmp_path_factory.mktemp("project")
    make_inputs(project / "data", files=4, rows=60)
    (project / "shards.json").write_text(json.dumps(ONE_FILE_A_SHARD))
    local = prepare(["data", "--out", "local", "--workers", "1", *FAST], project)
    assert local.returncode == 0, local.stderr[-2000:]
    return project


def worker_env(prefect_url: str, slow: float = 0) -> dict[str, str]:
    env = {**without_prefect_and_salt(), "PREFECT_API_URL": prefect_url}
    return {**env, **slow_shards(slow, env["PYTHONPATH"])} if slow else env


def start_prepare(args: list[str], cwd: Path, prefect_url: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != SALT}
    env.update(PYTHONPATH=str(ROOT), PREFECT_API_URL=prefect_url, PREFECT_LOGGING_LEVEL="INFO")
    return subprocess.Popen([sys.executable, "-m", "pipeline.cli", "run", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(run: subprocess.Popen, timeout: float = 240) -> tuple[int, str]:
    try:
        _, err = run.communicate(timeout=timeout)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    return run.returncode, err


def busy_worker_pid(address: str, run: subprocess.Popen, timeout: float = 180) -> int:
    """The process id of a worker the scheduler sees processing a shard task of the run."""
    from distributed import Client

    with Client(address, timeout=30, set_as_default=False) as client:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert run.poll() is None, "the run ended before a worker could be killed"
            busy = [worker for worker, keys in client.processing().items()
                    if any(str(key).startswith(("normalize_shard-", "process_shard-")) for key in keys)]
            if busy:
                return client.run(os.getpid, workers=busy[:1])[busy[0]]
            time.sleep(0.1)
    raise TimeoutError(f"no worker took a task of the run within {timeout:.0f} s")


@pytest.mark.integration
@pytest.mark.slow
def test_a_worker_killed_while_it_holds_a_task_changes_no_byte(prefect_url, project, tmp_path):
    """Two worker processes; SIGKILL the one processing a shard: the scheduler gives the task to a worker that
    is alive (the nanny restarts the killed one), the run finishes with the local run's bytes."""
    with dask_cluster(tmp_path / "dask-home", worker_env(prefect_url, slow=2), workers=2) as (address, _):
        run = start_prepare(["data", "--out", "killed-worker", "--dask-address", address, *FAST], project,
                            prefect_url)
        try:
            pid = busy_worker_pid(address, run)
            os.kill(pid, signal.SIGKILL)
        finally:
            code, err = finish(run)
    assert code == 0, err[-3000:]
    assert f"Worker process {pid} was killed by signal 9" in (tmp_path / "dask-home" / "dask.log").read_text()
    assert shard_bytes(project / "killed-worker") == shard_bytes(project / "local")


@pytest.mark.integration
@pytest.mark.slow
def test_a_lost_scheduler_fails_in_one_line_and_the_rerun_resumes(prefect_url, project, tmp_path):
    """SIGKILL the scheduler once a shard is finished: one error line naming it, no traceback, exit 2 (before:
    'internal error (FutureCancelledError)' after two tracebacks). The same command against a new scheduler
    reuses the finished shards and writes the local run's bytes."""
    results = project / "lost-scheduler" / "work" / "results"
    with dask_cluster(tmp_path / "first", worker_env(prefect_url, slow=2)) as (address, procs):
        args = ["data", "--out", "lost-scheduler", *FAST]
        run = start_prepare([*args, "--dask-address", address], project, prefect_url)
        try:
            deadline = time.monotonic() + 180
            while not list(results.glob("normalize-*.json")):
                assert run.poll() is None and time.monotonic() < deadline, "no shard was finished"
                time.sleep(0.05)
            procs[0].send_signal(signal.SIGKILL)
        finally:
            code, err = finish(run)
    assert code == 2, err[-3000:]
    errors = [line for line in err.splitlines() if "error" in line.lower() or "Traceback" in line]
    assert errors == [f"prepare: error: lost the Dask scheduler {address} mid-run; start a scheduler and its "
                      "workers again and rerun the same command: it resumes from the finished shards"], err[-3000:]
    finished = len(list(results.glob("*.json")))
    with dask_cluster(tmp_path / "second", worker_env(prefect_url)) as (address, _):
        code, err = finish(start_prepare([*args, "--dask-address", address], project, prefect_url))
    assert code == 0, err[-3000:]
    reused = re.search(r"prepare: reused (\d+) shard result\(s\) finished by an earlier run", err)
    assert reused and int(reused[1]) >= finished >= 1, err[-3000:]
    assert shard_bytes(project / "lost-scheduler") == shard_bytes(project / "local")


# The checks themselves, on what workers report (pipeline.runner.preflight.worker_view), without a cluster.

def views_of(tmp_path, salt_env=SALT, **worker_env):
    """What one worker in this process reports, its environment patched with worker_env; and the probe token."""
    from pipeline.runner.preflight import worker_view, write_probe

    token, _ = write_probe(str(tmp_path / "out"))
    saved = {k: os.environ.get(k) for k in worker_env}
    os.environ.update(worker_env)
    try:
        view = worker_view([str(tmp_path / "data")], str(tmp_path / "out"), token, salt_env)
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    return {"tcp://10.0.0.7:4000": view}, token


def pii_config(tmp_path):
    from pipeline.core.config import PrepareConfig

    return PrepareConfig(inputs=[str(tmp_path / "data")], out=str(tmp_path / "out"))


def test_a_worker_that_cannot_see_an_input_is_named(tmp_path):
    from pipeline.runner.preflight import PreflightError, check_worker_views

    cfg = pii_config(tmp_path)
    cfg.pii.enabled = False  # the label of a name holding personal data needs the PII engine (seconds to load)
    views, token = views_of(tmp_path)
    with pytest.raises(PreflightError, match=r"^the Dask worker tcp://10.0.0.7:4000 cannot see .*data; every worker"):
        check_worker_views(cfg, views, cfg.out, token)


def test_a_worker_with_another_salt_or_run_directory_fails(tmp_path, monkeypatch):
    from pipeline.runner.preflight import PreflightError, check_worker_views

    (tmp_path / "data").mkdir()
    cfg = pii_config(tmp_path)
    monkeypatch.setenv(SALT, "salt-here")
    views, token = views_of(tmp_path, **{SALT: "salt-there"})
    with pytest.raises(PreflightError, match=f"^{SALT} on the Dask worker tcp://10.0.0.7:4000 differs") as err:
        check_worker_views(cfg, views, cfg.out, token)
    assert "salt-here" not in str(err.value) and "salt-there" not in str(err.value)
    monkeypatch.delenv(SALT)
    with pytest.raises(PreflightError, match=f"^{SALT} is set on the Dask worker .* but not here"):
        check_worker_views(cfg, views, cfg.out, token)
    views, token = views_of(tmp_path)
    check_worker_views(cfg, views, cfg.out, token)  # no salt anywhere: the run's own, in the shared work/
    for view in views.values():  # as if the worker wrote into a folder of its own at the same path
        (tmp_path / "out" / view["wrote"]).unlink()
    with pytest.raises(PreflightError, match="writes to a .* of its own .* --out must be a folder that every worker"):
        check_worker_views(cfg, views, cfg.out, token)


def test_paths_handed_to_workers_are_absolute(tmp_path, monkeypatch):
    from pipeline.core.config import PrepareConfig
    from pipeline.runner.preflight import absolute_paths

    monkeypatch.chdir(tmp_path)
    (tmp_path / "tok").mkdir()
    cfg = absolute_paths(PrepareConfig(inputs=["data", "s3://b/in/", "logs/*.jsonl"], out="runs/v1",
                                       validation_inputs=["eval.jsonl"], lengths={"tokenizer": "tok"}))
    assert cfg.inputs == [str(tmp_path / "data"), "s3://b/in/", str(tmp_path / "logs/*.jsonl")]
    assert (cfg.out, cfg.validation_inputs) == (str(tmp_path / "runs/v1"), [str(tmp_path / "eval.jsonl")])
    assert cfg.lengths.tokenizer == str(tmp_path / "tok") and cfg.estimate.model == "llama-3.1-8b"  # a name stays


def test_worker_counts_reach_the_client_as_events_of_the_run(tmp_path):
    """The way of a count on a cluster, without processes: the plugin makes a worker's ProgressFile an event of
    the run's topic; the client keeps the latest count per shard, plus the files of its own work."""
    from flows.cluster import ClusterCounts, count_topic
    from pipeline.core.progress import ProgressFile

    class Client:
        def register_plugin(self, plugin, name):
            self.plugin = plugin

        def subscribe_topic(self, topic, handler):
            self.topic, self.handler = topic, handler

    class Worker:
        def __init__(self):
            self.events = []

        def log_event(self, topic, message):
            self.events.append((topic, message))

    folder = tmp_path / "work" / "progress"
    client, worker = Client(), Worker()
    counts = ClusterCounts(client, folder)
    assert client.topic == count_topic(folder) and str(tmp_path) not in client.topic
    client.plugin.setup(worker)
    try:
        ProgressFile(folder, "read", 0).set(5, final=True)
        ProgressFile(folder, "read", 0).set(9, final=True)  # a rerun of shard 0 counts again: the latest wins
        ProgressFile(folder, "read", 1).set(3, final=True)
        ProgressFile(folder, "pii", 1).set(2, final=True)
    finally:
        client.plugin.teardown(worker)
    assert not folder.exists()  # nothing on disk from a worker
    assert worker.events[0] == (client.topic, {"stage": "read", "index": 0, "count": 5})
    for event in worker.events:
        client.handler((time.time(), event[1]))
    ProgressFile(folder, "read", 9).set(4, final=True)  # this process's own work, after the plugin's teardown
    assert (counts.total("read"), counts.total("pii")) == (9 + 3 + 4, 2)
    counts.clear("read")
    assert (counts.total("read"), counts.total("pii")) == (0, 2)


def test_workers_get_the_flow_api_and_one_that_cannot_reach_it_is_named(monkeypatch):
    """The plugin gives a worker process the flow's Prefect API (unless it has one); before any task, a worker
    that cannot reach it ends the run in one line naming the worker and the API."""
    from distributed import LocalCluster

    from flows.cluster import RunWorker, check_api
    from pipeline.core.errors import PrepareError

    class Worker:
        def log_event(self, topic, message):
            pass

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    plugin = RunWorker("http://127.0.0.1:4200/api")
    plugin.setup(Worker())
    plugin.teardown(Worker())
    assert os.environ["PREFECT_API_URL"] == "http://127.0.0.1:4200/api"
    monkeypatch.setenv("PREFECT_API_URL", "http://prefect.internal/api")
    plugin.setup(Worker())  # a worker's own value wins
    plugin.teardown(Worker())
    assert os.environ["PREFECT_API_URL"] == "http://prefect.internal/api"
    closed = f"127.0.0.1:{free_port()}/api"
    with LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as local:
        with pytest.raises(PrepareError, match=r"^the Dask worker .+ cannot reach the Prefect API http://"
                                               + re.escape(closed) + r" \(URLError\); set PREFECT_API_URL"):
            check_api(local.scheduler_address, f"http://admin:a-secret@{closed}")  # the password is not shown


def test_a_lost_scheduler_is_one_line_and_the_console_keeps_no_traceback_of_it():
    import asyncio
    import logging

    from distributed.client import FutureCancelledError

    from flows.cluster import ConsoleLinesTheCliReplaces, scheduler_lost

    lost = scheduler_lost(FutureCancelledError("normalize_shard-1", "scheduler-connection-lost"), "tcp://10.0.0.7:8786")
    assert lost is not None and lost.user_line().startswith("lost the Dask scheduler tcp://10.0.0.7:8786 mid-run;")
    assert scheduler_lost(FutureCancelledError("normalize_shard-1", "lost dependencies"), "tcp://x:1") is None

    def record(name, exc=None, **extra):
        made = logging.LogRecord(name, logging.ERROR, __file__, 1, "message", None,
                                 (type(exc), exc, None) if exc else None)
        made.__dict__.update(extra)
        return made

    console = ConsoleLinesTheCliReplaces()
    assert not console.filter(record("prefect.flow_runs", lost))  # the engine's traceback of the run's error
    assert not console.filter(record("prefect.flow_runs", prepare_failure=True))  # the flow's copy of the line
    assert not console.filter(record("distributed.client", asyncio.CancelledError()))
    assert console.filter(record("prefect.flow_runs", ValueError("a bug")))  # a bug keeps its traceback
    assert console.filter(record("prefect.flow_runs"))
