"""The PII step's CPU on bench/e2e's corpus, this checkout against a base checkout, side by side.

    git worktree add /tmp/pii-base <base commit>     # or: git archive <commit> | tar -x -C /tmp/pii-base
    .venv/bin/python bench/pii/stage_speed.py --base /tmp/pii-base            # 20k records, 3 rounds
    .venv/bin/python bench/pii/stage_speed.py --base /tmp/pii-base --save     # -> bench/pii/stage_speed_last_run.txt

The records are what the PII step sees in a bench/e2e run: the corpus of bench/e2e/corpus.py through `prepare run`
with every step on but PII (this checkout's pipeline; cached in --work), read back from the shards; and, apart, the
records of the real-names evaluation (bench/pii/realnames: development half 0, seed 29, 3,000 chats and CRM notes
with planted names, identifiers and hard negatives: name-heavy text, where the e2e corpus is plain). Each round runs
the step over them once in a fresh process per checkout (base first, then this one): set-up and a warm-up pass
over the first 3,000 records (for the real-names rows: 3,000 rows of seed 30; the models, word lists and per-word
caches a worker loads once) are not timed; then the detector's text cache is cleared and PiiStep.process over
every record, in batches of 2,000 as in a run, is timed in CPU seconds (time.process_time). The machine is shared:
the least CPU of the rounds is compared. The outputs of both checkouts are hashed: the figure is only read when they
are the same.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
WARM = 3000
BATCH = 2000


def records_file(work: Path, size: int) -> Path:
    """The records the PII step sees for a corpus of `size`, made once with this checkout's pipeline."""
    path = work / f"records-{size}.pkl"
    if path.exists():
        return path
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench" / "e2e"))
    import pyarrow.parquet as pq
    from corpus import write_corpus

    from pipeline.core.config import PrepareConfig, merge_config
    from pipeline.core.records import from_table
    from pipeline.runner import run_prepare

    data, out = work / f"data-{size}", work / f"run-{size}"
    write_corpus(data, size)
    cfg = merge_config(PrepareConfig(inputs=[str(data)], out=str(out), workers=2), {"pii": {"enabled": False}})
    run_prepare(cfg, progress=False)
    records = []
    for shard in sorted(out.glob("*/part-*.parquet")):
        records += from_table(pq.read_table(shard))
    path.write_bytes(pickle.dumps(records))
    return path


def realnames_file(work: Path, size: int = 3000, seed: int = 29) -> Path:
    """The records of the real-names evaluation's development half (built once, with this checkout's bench code)."""
    path = work / f"realnames-{size}-{seed}.pkl"
    if path.exists():
        return path
    sys.path.insert(0, str(HERE))
    from realnames import pool as name_pool
    from realnames.build import build

    pool = name_pool.load(ROOT / "runs" / "bench_pii", 0)
    # warmed up on rows of another seed: the timed rows' words are not in the per-word caches yet
    warm, timed = ([r["record"] for r in build(pool, size, s)] for s in (seed + 1, seed))
    path.write_bytes(pickle.dumps({"warm": warm, "timed": timed}))
    return path


def measure(path: Path) -> dict:
    """In a fresh process of the checkout on sys.path: the step's CPU over the records, and a hash of its output."""
    from pipeline.core.config import PiiConfig
    from pipeline.data.pii import PiiStep

    records = pickle.loads(path.read_bytes())
    warm = records[:WARM] if isinstance(records, list) else records["warm"]
    records = records if isinstance(records, list) else records["timed"]
    step = PiiStep(PiiConfig(), salt=b"bench-salt-not-secret")
    for i in range(0, len(warm), BATCH):
        step.process(pickle.loads(pickle.dumps(warm[i:i + BATCH])))
    step.detector.clear_cache()
    out = []
    c = time.process_time()
    for i in range(0, len(records), BATCH):
        out += step.process(records[i:i + BATCH])
    cpu = time.process_time() - c
    digest = hashlib.sha256("\n".join(json.dumps(r, ensure_ascii=False, default=str) for r in out).encode())
    return {"cpu": cpu, "records": len(records), "kept": len(out), "sha256": digest.hexdigest()[:16]}


def run_in(tree: Path, path: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    res = subprocess.run([sys.executable, str(HERE / "stage_speed.py"), "--measure", str(path)], cwd=tree, env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def git_head(tree: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(tree), "log", "-1", "--format=%h"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", help="a checkout of the base commit")
    ap.add_argument("--base-label", help="the base's commit, where --base is no git checkout (git archive)")
    ap.add_argument("--records", type=int, default=20000, help="bench/e2e corpus size (default 20000)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "bench-pii-stage-speed"))
    ap.add_argument("--save", action="store_true", help="also write bench/pii/stage_speed_last_run.txt")
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(Path(args.measure))))
        return
    if not args.base:
        ap.error("--base is required")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    corpora = {"bench/e2e's corpus (the records a bench/e2e run hands it)": records_file(work, args.records),
               "the real-names evaluation's rows (half 0, seed 29)": realnames_file(work)}
    trees = {"base": Path(args.base).resolve(), "this": ROOT}
    load = os.getloadavg()
    base = args.base_label or git_head(trees["base"])
    lines = [f"# command: bench/pii/stage_speed.py {' '.join(a for a in sys.argv[1:] if a != '--save')}",
             f"# {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC; base {base}, this "
             f"{git_head(ROOT)}; load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} at start"]
    for label, path in corpora.items():
        lines += _compare(label, path, trees, args.rounds)
    lines.append(f"# load at end {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.save:
        (HERE / "stage_speed_last_run.txt").write_text(text, encoding="utf-8")


def _compare(label: str, path: Path, trees: dict, rounds: int) -> list[str]:
    """Rounds of the step over one corpus in each checkout, one after the other; the lines that report them."""
    runs: dict[str, list[dict]] = {"base": [], "this": []}
    for _ in range(rounds):
        for name, tree in trees.items():
            runs[name].append(run_in(tree, path))
    best = {name: min(r["cpu"] for r in rs) for name, rs in runs.items()}
    same = len({r["sha256"] for rs in runs.values() for r in rs}) == 1
    n = runs["this"][0]["records"]
    lines = [f"PII step over {n:,} records of {label}, batches of {BATCH:,}, warm; CPU seconds per round:",
             f"{'round':>5} {'base':>8} {'this':>8}"]
    pairs = enumerate(zip(runs["base"], runs["this"]))
    lines += [f"{i + 1:>5} {b['cpu']:>8.2f} {t['cpu']:>8.2f}" for i, (b, t) in pairs]
    lines += [f"least: base {best['base']:.2f} s ({n / best['base']:,.0f} records/CPU-s), this {best['this']:.2f} s "
              f"({n / best['this']:,.0f} records/CPU-s): {best['this'] / best['base']:.2f}x the base's CPU",
              f"outputs: {'identical' if same else 'DIFFERENT'} "
              f"({', '.join(sorted({r['sha256'] for rs in runs.values() for r in rs}))}; {runs['this'][0]['kept']:,} "
              f"records kept)"]
    return lines


if __name__ == "__main__":
    main()
