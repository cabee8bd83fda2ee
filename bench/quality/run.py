"""Per-record cost of the quality step (default settings) against the clean step, on the same records in the
same process: the ratio is what to compare across machines, not the microseconds.

Records: sample_data's answers (tr, ru, en) and questions, with planted cases mixed in at realistic rates
(1% mojibake, 1% quoted threads, 2% signatures, 0.5% stuck loops, 0.5% emoji-only answers). Also times the
canned-answer key column (canned_keys) and the global decision (find_canned) per record.

    .venv/bin/python bench/quality/run.py [--records 20000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import copy
import json
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import pyarrow.parquet as pq  # noqa: E402

from pipeline.core.config import CleanConfig, QualityConfig  # noqa: E402
from pipeline.data.clean import CleanStep  # noqa: E402
from pipeline.data.quality import QualityStep, canned_keys, find_canned  # noqa: E402


def _rows(path: Path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines():
        try:  # the sample holds broken rows on purpose
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            out.append(row)
    return out


def pairs() -> list[tuple[str, str]]:
    data = ROOT / "sample_data"
    out = [(r["instruction"] + "\n" + (r.get("input") or ""), r["output"])
           for r in json.loads((data / "support_tr_alpaca.json").read_text())
           if isinstance(r.get("instruction"), str) and isinstance(r.get("output"), str)]
    for row in _rows(data / "support_ru_sharegpt.jsonl"):
        conv = row.get("conversations") or []
        if len(conv) >= 2 and isinstance(conv[0].get("value"), str) and isinstance(conv[1].get("value"), str):
            out.append((conv[0]["value"], conv[1]["value"]))
    for row in _rows(data / "support_en_openai.jsonl"):
        try:
            msgs = row["messages"]
            user = next(m["content"] for m in msgs if m["role"] == "user")
            answer = msgs[-1]["content"]
            answer = answer if isinstance(answer, str) else answer[0]["text"]
        except (ValueError, KeyError, TypeError, IndexError, StopIteration):
            continue
        if isinstance(user, str) and isinstance(answer, str):
            out.append((user, answer))
    return out


def corpus(n: int, seed: int = 0) -> list[dict]:
    rng, base, recs = random.Random(seed), pairs(), []
    for k in range(n):
        q, a = rng.choice(base)
        roll = rng.random()
        if roll < 0.01:
            a = a.encode().decode("cp1252", errors="replace")
        elif roll < 0.02:
            a += "\n\nOn Mon, 4 Mar 2024 at 10:02, Ayşe Kaya <ayse@example.com> wrote:\n> " + q.replace("\n", "\n> ")
        elif roll < 0.04:
            a += "\n\nSaygılarımla,\nDestek Ekibi"
        elif roll < 0.045:
            a = (a.split(".")[0] + ". ") * 12
        elif roll < 0.05:
            a = "👍"
        recs.append({"id": f"r{k}", "kind": "chat", "_order": k, "text": None, "tools": None, "meta": "{}",
                     "source": {"file": "bench", "line": k + 1},
                     "messages": [{"role": "user", "content": q}, {"role": "assistant", "content": a}]})
    return recs


def timed(step_factory, records: list[dict], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        batch, step = copy.deepcopy(records), step_factory()
        start = time.perf_counter()
        for i in range(0, len(batch), 2000):
            step(batch[i:i + 2000])
        best = min(best, time.perf_counter() - start)
    return best / len(records)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    records = corpus(args.records)
    timed(lambda: QualityStep(QualityConfig()), records[:500], 1)  # imports and first-call costs out of the way
    canned_keys(records[:500])
    clean = timed(lambda: CleanStep(CleanConfig()), records, args.repeat)
    quality = timed(lambda: QualityStep(QualityConfig()), records, args.repeat)
    step = QualityStep(QualityConfig())
    step(copy.deepcopy(records))
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        pq.write_table(canned_keys(records), f"{tmp}/0.parquet")
        keys = (time.perf_counter() - start) / len(records)
        start = time.perf_counter()
        canned = find_canned([f"{tmp}/0.parquet"], QualityConfig(), None, f"{tmp}/drop.parquet")
        decide = (time.perf_counter() - start) / len(records)
    counts = {k: v["records"] for k, v in step.stats.counters.items() if isinstance(v, dict)}
    print(f"records {len(records)}; found {counts}; dropped {dict(step.stats.dropped)}; "
          f"canned answers {canned['answers']} ({canned['records']} records)")
    print(f"clean step    {clean * 1e6:8.2f} us/record")
    print(f"quality step  {quality * 1e6:8.2f} us/record  ({quality / clean:.1f}x clean)")
    print(f"canned keys   {keys * 1e6:8.2f} us/record  ({keys / clean:.1f}x clean)")
    print(f"canned decide {decide * 1e6:8.2f} us/record  ({decide / clean:.1f}x clean)")


if __name__ == "__main__":
    main()
