"""Environment for a `prepare run` subprocess (or pool workers) whose shards take `seconds` longer each:
tests/slow_shards/sitecustomize.py does it, outside the library."""
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = Path(__file__).resolve().parent / "slow_shards"


def slow_shards(seconds: float, pythonpath: str | None = None) -> dict:
    return {"PYTHONPATH": os.pathsep.join([str(PLUGIN), pythonpath or str(ROOT)]),
            "PREPARE_TEST_SLOW_SHARDS": str(seconds)}


def start_and_kill(cmd: list[str], env: dict, results: Path, seconds: float, after: int = 2) -> None:
    """Start `prepare run` (cmd) with shards `seconds` slower and SIGKILL it once `after` shards of the process
    phase have finished (their result files in `results`): a run killed mid-way, for the resume tests."""
    import signal
    import subprocess
    import time

    proc = subprocess.Popen(cmd, env={**env, **slow_shards(seconds, env.get("PYTHONPATH", str(ROOT)))},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while len(list(results.glob("process-*.json"))) < after:
            assert proc.poll() is None and time.monotonic() < deadline, "the run ended before it could be killed"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
