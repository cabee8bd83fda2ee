"""End-to-end benchmark: `prepare run` over 100k and 1M mixed records with every stage on.

Prints records/s per stage and for the whole run, peak RSS (this process and the worker processes),
and how time grows from the smaller to the larger size (1.0 = linear).

    python bench/e2e/run.py                 # 100k and 1M (about 1 GB; long)
    python bench/e2e/run.py --sizes 20000   # quick
    python bench/e2e/run.py --sizes 100000 --set quality.enabled=false --set filters.detect_language=false
    python bench/e2e/run.py --sizes 200000 --dask 4   # on a local Dask cluster of 4 worker processes

--dask N runs what `prepare run --dask-address` runs (the Prefect flow on a Dask cluster, flows.prepare.run_flow)
on a LocalCluster of N worker processes with one thread each, started on this machine for the run: the wall time
is that of the flow (the cluster's start and stop excluded), the CPU time includes them (the cluster's processes
are this one's children).
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import write_corpus  # noqa: E402
from overrides import parse_sets  # noqa: E402
from timeline import MainParts, TimedExecutor  # noqa: E402

from pipeline.core.config import PrepareConfig, merge_config  # noqa: E402
from pipeline.runner import run_prepare  # noqa: E402


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def peak_rss_mib() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, children


def run(cfg: PrepareConfig, dask_workers: int, timeline: bool = False):
    """(the run's result, its wall seconds): locally, or as the flow on a LocalCluster of dask_workers processes.
    With `timeline` (local only), prints when each task ran and where cores stayed idle (timeline.py)."""
    if not dask_workers:
        t0 = time.perf_counter()
        if not timeline:
            return run_prepare(cfg, progress=False), time.perf_counter() - t0
        executor = TimedExecutor(cfg.workers)
        parts = main_parts()
        try:
            result = run_prepare(cfg, executor=executor, progress=False)
        finally:
            executor.close()
        wall = time.perf_counter() - t0
        print(executor.summary(time.time(), cfg.workers))
        print(executor.detail())
        print("the main process's parts:\n" + parts.report())
        return result, wall
    # a flow starts a temporary Prefect server: its own database (not the user's), and time to start on a busy
    # machine (the 20 s default timed out under load)
    os.environ.setdefault("PREFECT_HOME", str(Path(cfg.out).parent / "prefect"))
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "300")
    from distributed import LocalCluster

    from flows.prepare import run_flow

    with LocalCluster(n_workers=dask_workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:
        t0 = time.perf_counter()
        result = run_flow(cfg, dask_address=cluster.scheduler_address)
        return result, time.perf_counter() - t0


def main_parts() -> MainParts:
    """finalize's parts and the run's other work in the main process, timed (timeline.MainParts)."""
    from importlib import import_module

    # the modules, not the functions of the same names that pipeline.runner exports
    finalize, run_module, phases = (import_module(f"pipeline.runner.{n}") for n in ("finalize", "run", "phases"))

    parts = MainParts().wrap(phases, ["expand_inputs", "group_files"])
    parts.wrap(run_module, ["plan_shards", "check_readable", "gather_decontam_audit", "global_steps", "RunDir"])
    return parts.wrap(finalize, ["lengths_summary", "check_untrained", "write_shards", "draw_lengths_png",
                                "plan_for_lengths", "write_report", "write_dedup_index", "write_run_manifest"])


def bench(size: int, root: Path, workers: int, overrides: dict, dask_workers: int = 0,
          timeline: bool = False) -> dict:
    data = root / f"data-{size}"
    t0 = time.perf_counter()
    paths = write_corpus(data, size)
    os.sync()  # the corpus on disk before the clock starts: the kernel's writeback is not the run's (1.5 GB at 1M)
    gen = time.perf_counter() - t0
    mb = sum(p.stat().st_size for p in paths) / 1e6
    cfg = merge_config(PrepareConfig(inputs=[str(data)], out=str(root / f"run-{size}"), workers=workers), overrides)
    cpu0 = cpu_seconds()
    result, wall = run(cfg, dask_workers, timeline)
    cpu = cpu_seconds() - cpu0
    c = result.report["counts"]
    where = f"Dask LocalCluster of {dask_workers} worker processes" if dask_workers else f"{workers} workers"
    print(f"\n== {size:,} records, {mb:,.0f} MB of input (generated in {gen:.0f} s), {where}")
    print(f"whole run: {wall:,.1f} s wall, {c['input'] / wall:,.0f} records/s; kept {c['kept']:,}, "
          f"quarantined {c['quarantined']:,}, dropped {sum(c['dropped'].values()):,} {c['dropped']}")
    print(f"CPU time: {cpu:,.1f} s (this process and the finished workers, user + system)")
    stages = result.report["stages"]
    staged_cpu = sum(st.get("cpu_seconds", 0.0) for st in stages.values())
    print(f"{'stage':<10} {'wall-s':>8} {'cpu-s':>8} {'share of CPU':>13} {'records in':>12} "
          f"{'records/s of CPU':>17}")
    for name, st in stages.items():
        st_cpu = st.get("cpu_seconds", 0.0)
        rate = st["records_in"] / st_cpu if st_cpu else float("inf")
        print(f"{name:<10} {st['seconds']:>8.1f} {st_cpu:>8.1f} {st_cpu / cpu:>13.1%} {st['records_in']:>12,} "
              f"{rate:>17,.0f}")
    print(f"(wall-s and cpu-s: summed over the workers inside each step; the steps hold {staged_cpu / cpu:.0%} of the "
          f"run's CPU, the rest is reading and writing work files, scheduling and start-up)")
    own, children = peak_rss_mib()
    print(f"peak RSS: main process {own:,.0f} MiB, largest worker {children:,.0f} MiB")
    return {"size": size, "wall": wall}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--dask", type=int, default=0, metavar="N",
                        help="run the flow on a local Dask cluster of N worker processes (default: locally)")
    parser.add_argument("--timeline", action="store_true",
                        help="print each task's span and the idle cores per phase (local runs only)")
    parser.add_argument("--dir", help="work folder (default: a temporary one)")
    parser.add_argument("--set", action="append", metavar="SECTION.KEY=VALUE",
                        help="config override, repeatable (e.g. quality.enabled=false)")
    args = parser.parse_args()
    overrides = parse_sets(args.set)
    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench-e2e-"))
    runs = [bench(size, root, args.workers, overrides, args.dask, args.timeline) for size in args.sizes]
    if len(runs) > 1:
        a, b = runs[0], runs[-1]
        growth = (b["wall"] / a["wall"]) / (b["size"] / a["size"])
        print(f"\ntime grows {b['wall'] / a['wall']:.1f}x for {b['size'] / a['size']:.0f}x the records "
              f"(ratio to linear: {growth:.2f}; 1.00 = linear)")


if __name__ == "__main__":
    main()
