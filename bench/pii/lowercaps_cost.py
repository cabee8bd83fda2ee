"""CPU cost of the lower-case and capitals signals of issue 29 (pii/lower_pairs.py, pii/recased.py), side by side
with the same detector without them, on the same texts: the real English peer files (real_text.py) and the
development half of the real-names set (realnames/evaluate.py --half 0). Per text, best of three passes, the
detector's cache cleared before each.

    PYTHONPATH=$PWD .venv/bin/python bench/pii/lowercaps_cost.py   # -> bench/pii/lowercaps_cost_last_run.txt
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))


def texts() -> dict[str, list[tuple[str, str]]]:
    from real_text import peer_texts
    from realnames import pool as name_pool
    from realnames.build import build, field_texts

    rows = build(name_pool.load(ROOT / "runs" / "bench_pii", 0), 1000, 7)
    return {"real English (peer files)": [(t, "en") for t in peer_texts(ROOT.parent / "shared" / "peer_formats")
                                          if Path(ROOT.parent / "shared").exists()]
            or [(t, "en") for t in peer_texts(Path("/work/shared/peer_formats"))],
            "real-names set, half 0 (1000 records)": [(t, r["lang"]) for r in rows
                                                       for t in field_texts(r["record"]).values()]}


def timed(det, items, passes: int = 3) -> float:
    best = float("inf")
    for _ in range(passes):
        det.clear_cache()
        c = time.process_time()
        det.detect(items)
        best = min(best, time.process_time() - c)
    return best


def main() -> None:
    from pipeline.data.pii import engine
    from pipeline.data.pii.lower_pairs import LowerPairRecognizer

    det = engine.get_detector(("tr", "ru", "en"))
    with_all = {k: list(v) for k, v in det.fast.items()}, {k: list(v) for k, v in det.digit_free.items()}

    def switch(on: bool) -> None:
        for lang in det.fast:
            keep = (lambda r: True) if on else (lambda r: not isinstance(r, LowerPairRecognizer))
            det.fast[lang] = [r for r in with_all[0][lang] if keep(r)]
            det.digit_free[lang] = [r for r in with_all[1][lang] if keep(r)]
        engine.recased_hits = recased if on else (lambda *a: [])

    recased = engine.recased_hits
    rev = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h %s"], capture_output=True,
                         text=True).stdout.strip()
    lines = [f"# bench/pii/lowercaps_cost.py ({rev})", "",
             "| texts | n | without (s CPU) | with (s CPU) | added per text | ratio |", "|---|---|---|---|---|---|"]
    for name, items in texts().items():
        switch(True)
        det.detect(items)  # warm: models, word lists, per-word caches
        switch(False)
        off = timed(det, items)
        switch(True)
        on = timed(det, items)
        lines.append(f"| {name} | {len(items)} | {off:.2f} | {on:.2f} | {(on - off) / len(items) * 1e6:.0f} us "
                     f"| {on / off:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    (HERE / "lowercaps_cost_last_run.txt").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
