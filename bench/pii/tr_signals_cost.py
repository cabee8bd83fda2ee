"""CPU cost of the Turkish name signals of issue 29 (pii/tr_titles, tr_suffix, tr_later, tr_partner, tr_label,
tr_lower_subject, tr_vocative), side by side with the stage they were added to: the PII step (default config) of a base
commit's pipeline/ (git archive into a temporary folder) and of this checkout, each in its own process, on the
same records: the development half of the real-names set (realnames/build.py, 1000 records) and the real
English peer files as text records. Two processes per tree, alternated; in each the best of three passes after
a warm-up pass (word lists, per-word caches), the detector's cache of texts cleared before each.

    PYTHONPATH=$PWD .venv/bin/python bench/pii/tr_signals_cost.py [--base REV]   # -> tr_signals_cost_last_run.txt
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BASE = "57c2bed"  # main when the Turkish signals were started

_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[2])  # bench/pii
from pathlib import Path
from real_text import peer_texts
from realnames import pool as name_pool
from realnames.build import build
from pipeline.core.config import PiiConfig
from pipeline.data.pii import PiiStep, engine

root = Path(sys.argv[1])
rows = build(name_pool.load(root / "runs" / "bench_pii", 0), 1000, 7)
shared = root.parent / "shared" / "peer_formats"
peer = peer_texts(shared if shared.exists() else Path("/work/shared/peer_formats"))
sets = {"real-names set, half 0 (1000 records)": [r["record"] for r in rows],
        "real English (peer files)": [{"id": str(i), "kind": "text", "text": t, "messages": None,
                                       "source": {"file": "peer", "line": i}, "meta": "{}"}
                                      for i, t in enumerate(peer)]}
step = PiiStep(PiiConfig(), salt=b"bench-salt-not-secret")
out = {}
for name, recs in sets.items():
    step(recs)  # warm
    best = float("inf")
    for _ in range(3):
        for det in engine._DETECTORS.values():
            det.clear_cache()  # the detector keeps the hits of texts it has seen
        c = time.process_time()
        for i in range(0, len(recs), 500):
            step(recs[i:i + 500])
        best = min(best, time.process_time() - c)
    out[name] = [len(recs), best]
print(json.dumps(out))
"""


def measure(tree: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    res = subprocess.run([sys.executable, "-c", _CHILD, str(ROOT), str(HERE)], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=BASE)
    args = ap.parse_args()
    rev = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h %s"], capture_output=True,
                         text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.base, "pipeline"], capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        # alternated, the least of each: the machine is shared, and its load changes the CPU time of the same work
        runs = [(measure(Path(tmp)), measure(ROOT)) for _ in range(2)]
    base = {k: [v[0], min(r[0][k][1] for r in runs)] for k, v in runs[0][0].items()}
    head = {k: [v[0], min(r[1][k][1] for r in runs)] for k, v in runs[0][1].items()}
    lines = [f"# bench/pii/tr_signals_cost.py --base {args.base} (HEAD {rev})", "",
             "| records | n | base (s CPU) | HEAD (s CPU) | added per record | ratio |", "|---|---|---|---|---|---|"]
    for name, (n, b) in base.items():
        h = head[name][1]
        lines.append(f"| {name} | {n} | {b:.2f} | {h:.2f} | {(h - b) / n * 1e6:.0f} us | {h / b:.3f} |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    (HERE / "tr_signals_cost_last_run.txt").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
