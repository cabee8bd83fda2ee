"""Peak memory of a run over large records, against the same bytes in small records (issue 20, point 2).

    .venv/bin/python bench/memory/large_records.py                      # 24 records of 6 MB, dedup on
    .venv/bin/python bench/memory/large_records.py --records 100 --record-mb 7   # the issue's shape
    .venv/bin/python bench/memory/large_records.py --pii --lengths      # every step (slow: PII on 6 MB texts)
    BENCH_PIPELINE_ROOT=/path/to/old/checkout .venv/bin/python bench/memory/large_records.py   # before

Two shapes, the same number of input bytes (gzip .jsonl, distinct texts so dedup keeps them):
  large   --records records of --record-mb MB each (under the 8 MiB record cap)
  small   records of 2 KB
Each shape is one `run_prepare` with one worker (inline: every step in that process), in a fresh process,
so its peak RSS (ru_maxrss) is its own. Memory used to grow with record size x batch rows: 100 records of
7 MB went into one 2,000-row batch and the run took 24 GB. Batches end at read.batch_bytes now, in the
readers and in the runner's per-shard loops. Prints both peaks and their ratio (large / small).
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, os, resource, sys, time
from pipeline.core.config import PrepareConfig
from pipeline.runner import run_prepare

data, out, pii, lengths = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4] == "1"
cfg = PrepareConfig(inputs=[data], out=out, workers=1)
cfg.pii.enabled, cfg.lengths.enabled, cfg.estimate.enabled = pii, lengths, False
start = time.perf_counter()
report = run_prepare(cfg, progress=False, log=lambda m: None).report
print(json.dumps({"seconds": round(time.perf_counter() - start, 1), "kept": report["counts"]["kept"],
                  "input": report["counts"]["input"],
                  "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}))
"""

WORDS = ("müşteri sipariş kargo iade fatura ödeme teslimat adres ürün destek заказ доставка возврат оплата "
         "клиент товар order delivery refund payment customer product support ticket invoice account update "
         "status shipping warehouse courier tracking number request reply thanks please today tomorrow").split()


def text_of(rng: random.Random, chars: int) -> str:
    words, size = [], 0
    while size < chars:
        chunk = rng.choices(WORDS, k=min(4096, chars // 6 + 8))
        words.extend(chunk)
        size += sum(map(len, chunk)) + len(chunk)
    return " ".join(words)[:chars]


def write_shape(path: Path, records: int, chars: int, seed: int) -> int:
    rng = random.Random(seed)
    total = 0
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as fh:
        for i in range(records):
            line = json.dumps({"text": f"{i} " + text_of(rng, chars)}, ensure_ascii=False) + "\n"
            total += len(line.encode("utf-8"))
            fh.write(line)
    return total


def run_shape(data: Path, out: Path, args) -> dict:
    env = {**os.environ, "PYTHONPATH": os.environ.get("BENCH_PIPELINE_ROOT", str(ROOT))}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(data), str(out), str(int(args.pii)),
                           str(int(args.lengths))], env=env, capture_output=True, text=True, cwd=str(out.parent))
    if proc.returncode:
        # a killed child (-9: the OOM killer) is a figure too
        return {"failed": proc.returncode, "stderr": proc.stderr.strip().splitlines()[-1:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=24, help="records of the large shape")
    ap.add_argument("--record-mb", type=float, default=6.0, help="size of one large record, MB")
    ap.add_argument("--pii", action="store_true", help="PII step on (slow on multi-MB texts)")
    ap.add_argument("--lengths", action="store_true", help="length step on")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    chars = int(args.record_mb * 1_000_000)
    small_chars = 2000
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        tmp = Path(tmp)
        results = {}
        for shape, records, size in (("small", args.records * chars // small_chars, small_chars),
                                     ("large", args.records, chars)):
            folder = tmp / shape
            folder.mkdir()
            start = time.perf_counter()
            raw = write_shape(folder / f"{shape}.jsonl.gz", records, size, args.seed)
            made = time.perf_counter() - start
            result = run_shape(folder, tmp / f"run-{shape}", args)
            results[shape] = {"records": records, "input_mb": round(raw / 1e6), "made_s": round(made, 1), **result}
            print(f"{shape:6s} {records:7d} records of {size / 1e6:6.3f} MB ({raw / 1e6:.0f} MB): {result}", flush=True)
    small, large = results["small"], results["large"]
    if "peak_rss_mb" in small and "peak_rss_mb" in large:
        print(f"peak RSS large / small: {large['peak_rss_mb'] / small['peak_rss_mb']:.2f} "
              f"({large['peak_rss_mb']} MB / {small['peak_rss_mb']} MB)")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
