"""A folder of many one-line files through a whole run (PII, lengths and the plan off), read as one shard per file
(read.files_per_shard: 1, the old plan) and grouped (the default), issue 30: 200,000 files read at ~100 files/s.

    .venv/bin/python bench/readers/small_files.py [FILES] [WORKERS]     # default 5000 2

Prints files/s of both and their ratio (grouped / one per shard); the ratio is the figure to compare across
machines.
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pipeline.core.config import PrepareConfig  # noqa: E402
from pipeline.runner import run_prepare  # noqa: E402


def timed(folder: Path, out: Path, workers: int, files_per_shard: int) -> float:
    cfg = PrepareConfig(inputs=[str(folder)], out=str(out), workers=workers,
                        read={"files_per_shard": files_per_shard})
    cfg.pii.enabled = cfg.lengths.enabled = cfg.estimate.enabled = False
    start = time.perf_counter()
    run_prepare(cfg, progress=False, log=lambda message: None)
    return time.perf_counter() - start


def main() -> None:
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "tickets"
        folder.mkdir()
        for i in range(files):
            (folder / f"t{i:06d}.txt").write_text(f"Ticket {i}: the parcel {i * 7} has not arrived yet, please check\n")
        grouped = timed(folder, Path(tmp) / "grouped", workers, PrepareConfig().read.files_per_shard)
        alone = timed(folder, Path(tmp) / "alone", workers, 1)
    print(f"{files} one-line files, {workers} workers")
    print(f"one shard per file: {alone:8.1f} s  {files / alone:8.0f} files/s")
    print(f"grouped:            {grouped:8.1f} s  {files / grouped:8.0f} files/s")
    print(f"ratio grouped / one per shard (files/s): {alone / grouped:.1f}x")


if __name__ == "__main__":
    main()
