"""A gzip of newlines against a gzip of ordinary .jsonl of the same decompressed size, through the readers
and the normalize step (issue 20: 200 MB of '\\n' took minutes, one RawRow per empty line).

    .venv/bin/python bench/readers/newlines.py [MB]     # default 50

Prints both times and their ratio (newlines / ordinary); the ratio is the figure to compare across machines.
"""
from __future__ import annotations

import gzip
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pipeline.core.config import PrepareConfig  # noqa: E402
from pipeline.data.normalize import Normalizer  # noqa: E402
from pipeline.data.readers import describe  # noqa: E402


def timed(path: Path) -> tuple[float, int]:
    cfg = PrepareConfig()
    start = time.perf_counter()
    normalizer = Normalizer(describe(str(path)), cfg)
    for _ in normalizer.batches():
        pass
    return time.perf_counter() - start, normalizer.read.records_in


def main() -> None:
    size = int(float(sys.argv[1]) if len(sys.argv) > 1 else 50) << 20
    with tempfile.TemporaryDirectory() as tmp:
        newlines = Path(tmp) / "newlines.jsonl.gz"
        newlines.write_bytes(gzip.compress(b"\n" * size, compresslevel=1))
        line = (json.dumps({"text": "an ordinary support note about an order and its delivery " * 3}) + "\n").encode()
        ordinary = Path(tmp) / "ordinary.jsonl.gz"
        ordinary.write_bytes(gzip.compress(line * (size // len(line)), compresslevel=1))
        t_nl, n_nl = timed(newlines)
        t_ord, n_ord = timed(ordinary)
    print(f"newlines: {size >> 20} MB, {n_nl:,} lines, {t_nl:.2f} s")
    print(f"ordinary: {size >> 20} MB, {n_ord:,} records, {t_ord:.2f} s")
    print(f"ratio newlines/ordinary: {t_nl / t_ord:.3f}")


if __name__ == "__main__":
    main()
