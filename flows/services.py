"""Local services for the demo and the tests: a moto S3 server and a Prefect server on 127.0.0.1,
each a real process reached over HTTP, started and stopped by the project itself."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from flows import OFFLINE_ENV

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with code {proc.returncode} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except Exception:
            time.sleep(0.3)
    raise TimeoutError(f"{url} did not answer within {timeout:.0f} s")


def stop_process(proc: subprocess.Popen) -> None:
    """Terminate, then kill after 15 s: a server this module (or a test) started."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def s3_env(endpoint: str) -> dict[str, str]:
    """What boto3 needs to talk to the local server (any credentials work with moto)."""
    return {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "local-demo", "AWS_SECRET_ACCESS_KEY": "local-demo",
            "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1"}


@contextmanager
def moto_server(log: Path | None = None) -> Iterator[str]:
    """moto in server mode on a free loopback port; yields the endpoint URL."""
    port = free_port()
    out = open(log, "w") if log else subprocess.DEVNULL
    proc = subprocess.Popen([str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)], stdout=out, stderr=out)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{endpoint}/moto-api/", 60, proc)
        yield endpoint
    finally:
        stop_process(proc)


def prefect_env(home: Path, port: int) -> dict[str, str]:
    return {"PREFECT_HOME": str(home), "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
            "PREFECT_RUNNER_POLL_FREQUENCY": "2", "PREFECT_LOGGING_LEVEL": "WARNING",
            **{key: os.environ.get(key, value) for key, value in OFFLINE_ENV.items()}}


@contextmanager
def prefect_server(home: Path, log: Path | None = None) -> Iterator[dict[str, str]]:
    """`prefect server start` with SQLite under `home`; yields the environment that points at it."""
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = {**os.environ, **prefect_env(home, port)}
    out = open(log, "w") if log else subprocess.DEVNULL
    proc = subprocess.Popen([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                            env=env, stdout=out, stderr=out)
    try:
        wait_http(f"http://127.0.0.1:{port}/api/health", 120, proc)
        yield prefect_env(home, port)
    finally:
        stop_process(proc)
