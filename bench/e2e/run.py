"""End-to-end benchmark: `prepare run` over 100k and 1M mixed records with every stage on.

Prints records/s per stage and for the whole run, peak RSS (this process and the worker processes),
and how time grows from the smaller to the larger size (1.0 = linear).

    python bench/e2e/run.py                 # 100k and 1M (about 1 GB; long)
    python bench/e2e/run.py --sizes 20000   # quick
"""
from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import write_corpus  # noqa: E402

from pipeline.config import PrepareConfig  # noqa: E402
from pipeline.runner import run_prepare  # noqa: E402


def peak_rss_mib() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, children


def bench(size: int, root: Path, workers: int) -> dict:
    data = root / f"data-{size}"
    t0 = time.perf_counter()
    paths = write_corpus(data, size)
    gen = time.perf_counter() - t0
    mb = sum(p.stat().st_size for p in paths) / 1e6
    cfg = PrepareConfig(inputs=[str(data)], out=str(root / f"run-{size}"), workers=workers)
    t0 = time.perf_counter()
    result = run_prepare(cfg, progress=False)
    wall = time.perf_counter() - t0
    c = result.report["counts"]
    print(f"\n== {size:,} records, {mb:,.0f} MB of input (generated in {gen:.0f} s), {workers} workers")
    print(f"whole run: {wall:,.1f} s wall, {c['input'] / wall:,.0f} records/s; kept {c['kept']:,}, "
          f"quarantined {c['quarantined']:,}, dropped {sum(c['dropped'].values()):,} {c['dropped']}")
    print(f"{'stage':<10} {'cpu-s':>9} {'records in':>12} {'records/s (per worker)':>24}")
    for name, st in result.report["stages"].items():
        rate = st["records_in"] / st["seconds"] if st["seconds"] else float("inf")
        print(f"{name:<10} {st['seconds']:>9.1f} {st['records_in']:>12,} {rate:>24,.0f}")
    own, children = peak_rss_mib()
    print(f"peak RSS: main process {own:,.0f} MiB, largest worker {children:,.0f} MiB")
    return {"size": size, "wall": wall}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--dir", help="work folder (default: a temporary one)")
    args = parser.parse_args()
    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench-e2e-"))
    runs = [bench(size, root, args.workers) for size in args.sizes]
    if len(runs) > 1:
        a, b = runs[0], runs[-1]
        growth = (b["wall"] / a["wall"]) / (b["size"] / a["size"])
        print(f"\ntime grows {b['wall'] / a['wall']:.1f}x for {b['size'] / a['size']:.0f}x the records "
              f"(ratio to linear: {growth:.2f}; 1.00 = linear)")


if __name__ == "__main__":
    main()
