"""A Dask cluster as a user starts it: `dask scheduler` and `dask worker` processes of their own, started in
another folder than the run's, reached over TCP on 127.0.0.1 (issue 35). Every process is killed at teardown,
every wait is bounded."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
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


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A scheduler and one worker process started in a folder of their own, without PREPARE_PII_SALT; yields
    the scheduler's address."""
    home = tmp_path_factory.mktemp("dask-home")
    env = {k: v for k, v in os.environ.items() if k not in (SALT, "PREFECT_API_URL")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    log = open(home / "dask.log", "w")
    procs = [subprocess.Popen([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--no-dashboard"], cwd=home, env=env, stdout=log, stderr=log)]
    try:
        wait_port(port, procs[0])
        procs.append(subprocess.Popen([str(BIN / "dask"), "worker", address, "--nworkers", "1", "--nthreads", "1",
                                       "--no-dashboard", "--host", "127.0.0.1"], cwd=home, env=env, stdout=log,
                                      stderr=log))
        from distributed import Client

        with Client(address, timeout=60, set_as_default=False) as client:
            client.wait_for_workers(1, timeout=90)
        yield address
    finally:
        for proc in reversed(procs):
            stop_process(proc)
        log.close()


def prepare(args: list[str], cwd: Path, **env_overrides) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in (SALT, "PREFECT_API_URL")}
    # the temporary Prefect server's start takes longer than its 20 s default on a loaded CI machine
    env.update(PYTHONPATH=str(ROOT), PREFECT_HOME=str(cwd / ".prefect"),
               PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="120", **env_overrides)
    return subprocess.run([sys.executable, "-m", "pipeline.cli", "run", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=240)


def shard_bytes(run_dir: Path) -> list[bytes]:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    return [(run_dir / shard["path"]).read_bytes() for shard in manifest["shards"]]


@pytest.mark.integration
@pytest.mark.slow
def test_relative_paths_run_on_workers_started_elsewhere(cluster, tmp_path):
    """`prepare run data --out run` typed in the project folder: the workers, started in another folder, get
    absolute paths (before: normalize failed with FileNotFoundError on every shard)."""
    project = tmp_path / "project"
    project.mkdir()
    make_inputs(project / "data", files=2, rows=60)
    fast = ["--no-pii", "--no-lengths", "--no-estimate"]
    local = prepare(["data", "--out", "local", "--workers", "1", *fast], project)
    assert local.returncode == 0, local.stderr[-2000:]
    remote = prepare(["data", "--out", "remote", "--dask-address", cluster, *fast], project)
    assert remote.returncode == 0, remote.stderr[-3000:]
    assert shard_bytes(project / "remote") == shard_bytes(project / "local")
    assert not list((project / "remote").glob(".prepare-probe-*"))  # the shared-folder probe cleans up


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
