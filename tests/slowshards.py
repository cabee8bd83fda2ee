"""Environment for a `prepare run` subprocess (or pool workers) whose shards take `seconds` longer each:
tests/slow_shards/sitecustomize.py does it, outside the library."""
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = Path(__file__).resolve().parent / "slow_shards"


def slow_shards(seconds: float, pythonpath: str | None = None) -> dict:
    return {"PYTHONPATH": os.pathsep.join([str(PLUGIN), pythonpath or str(ROOT)]),
            "PREPARE_TEST_SLOW_SHARDS": str(seconds)}
