"""datatrove's MinHash dedup (its four stages, default MinhashConfig) on the dedup bench corpus, for reference.

datatrove is not a dependency of the project: give a Python that has it (a separate venv), e.g.

    python -m venv /tmp/dtvenv && /tmp/dtvenv/bin/pip install datatrove==0.10.1 regex tokenizers
    .venv/bin/python bench/dedup/datatrove_ref.py --datatrove-python /tmp/dtvenv/bin/python --records 20000

The corpus is run.py's (same records, seed, shards); each record's text is what our stage hashes
(trainer_text), tokenized into \w+ words as ours after datatrove's own normalization (its English tokenizer needs
spaCy). datatrove runs in one process, world size 1, on a JSONL of the texts: stage 1 signatures,
2 buckets, 3 clusters, 4 filter; CPU seconds per stage (time.process_time). Its removals and clusters give
the removed table that run.metrics scores (a removed record duplicates the kept member of its cluster).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def child(texts_path: str, work: str) -> dict:
    """Runs under the datatrove Python."""
    import re
    import struct

    from datatrove.data import Document
    from datatrove.pipeline.dedup.minhash import (
        MinhashConfig,
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
        MinhashDedupSignature,
    )

    def docs():
        with open(texts_path, encoding="utf-8") as fh:
            for i, line in enumerate(fh):
                yield Document(text=json.loads(line), id=str(i))

    from datatrove.utils.word_tokenizers import WordTokenizer

    class Words(WordTokenizer):
        """Unicode word tokens, as our stage and the corpus truth take them (datatrove's English tokenizer needs
        spaCy; its text normalization still runs first)."""

        def word_tokenize(self, text):
            return re.findall(r"\w+", text)

        def sent_tokenize(self, text):
            return [text]

        def span_tokenize(self, text):
            return [m.span() for m in re.finditer(r"\w+", text)]

    cfg = MinhashConfig()
    cpu = {}
    c = time.process_time()
    for _ in MinhashDedupSignature(f"{work}/sigs", config=cfg, language=Words()).run(docs(), 0, 1) or ():
        pass
    cpu["signatures"] = time.process_time() - c
    c = time.process_time()
    for b in range(cfg.num_buckets):  # one task per bucket, as datatrove's examples run it
        for _ in MinhashDedupBuckets(f"{work}/sigs", f"{work}/buckets", config=cfg).run(None, b, cfg.num_buckets) or ():
            pass
    cpu["buckets"] = time.process_time() - c
    c = time.process_time()
    for _ in MinhashDedupCluster(f"{work}/buckets", f"{work}/clusters", config=cfg, save_cluster_id=True).run() or ():
        pass
    cpu["clusters"] = time.process_time() - c
    c = time.process_time()
    kept = sum(1 for _ in MinhashDedupFilter(f"{work}/clusters").run(docs(), 0, 1))
    cpu["filter"] = time.process_time() - c

    def ints(name):
        path = Path(work) / "clusters" / name
        return list(struct.unpack(f"<{path.stat().st_size // 4}I", path.read_bytes())) if path.exists() else []

    pairs = ints("000000.clusters")
    return {"cpu_s": cpu, "kept": kept, "remove": ints("000000.remove"),
            "clusters": dict(zip(pairs[0::2], pairs[1::2])),
            "config": {"num_buckets": cfg.num_buckets, "hashes_per_bucket": cfg.hashes_per_bucket,
                       "n_grams": cfg.n_grams}}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datatrove-python", required=True)
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shard-rows", type=int, default=25_000)
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(HERE))
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    import run as R

    from pipeline.core.records import from_table
    from pipeline.data.dedup import trainer_text

    data_dir = Path(args.data_dir or f"/tmp/dedup_bench/{args.records}_{args.seed}")
    shards = R.ensure_corpus(data_dir, args.records, max(1, args.records // 100), args.seed, args.shard_rows, 2)
    work = Path(tempfile.mkdtemp(prefix="datatrove-"))
    orders = []
    with open(work / "texts.jsonl", "w", encoding="utf-8") as fh:
        for shard in shards:
            for rec in from_table(pq.read_table(shard)):
                orders.append(rec["_order"])
                fh.write(json.dumps(trainer_text(rec), ensure_ascii=False) + "\n")
    code = (f"import sys, json; sys.path.insert(0, {str(HERE)!r}); import datatrove_ref; "
            f"print(json.dumps(datatrove_ref.child({str(work / 'texts.jsonl')!r}, {str(work)!r})))")
    proc = subprocess.run([args.datatrove_python, "-c", code], check=True, capture_output=True, text=True)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    orders = np.array(orders, dtype=np.int64)
    clusters = {int(k): v for k, v in out["clusters"].items()}
    removed = set(out["remove"])
    keeper = {clusters[d]: d for d in clusters if d not in removed}
    rem = sorted(removed)
    table = pa.table({"_order": pa.array(orders[rem], pa.int64()),
                      "duplicate_of_order": pa.array(orders[[keeper[clusters[d]] for d in rem]], pa.int64()),
                      "reason": pa.array(["near_duplicate"] * len(rem), pa.string())})
    truth = pa.concat_tables([pq.read_table(p + ".truth") for p in shards])
    truth = {c: truth.column(c).to_numpy() for c in R.TRUTH_SCHEMA.names}
    quality = R.metrics(table, truth, 0.8)
    n = len(orders)
    res = {"records": n, "datatrove_config": out["config"],
           "cpu_s": {k: round(v, 3) for k, v in out["cpu_s"].items()},
           "cpu_us_per_record": round(1e6 * sum(out["cpu_s"].values()) / n, 1),
           "removed": len(rem), "recall_J>=0.85": quality["near_J[0.85,1.00]"],
           "recall_J[0.80,0.85)": quality["near_J[0.80,0.85)"], "recall_J[0.70,0.80)": quality["near_J[0.70,0.80)"],
           "exact": quality["exact"], "hard_negatives": quality["hard_negatives"],
           "precision_all_removals_same_family": quality["precision_all_removals_same_family"],
           "near_removals_by_planted_jaccard": quality["near_removals_by_planted_jaccard"]}
    print(json.dumps(res, indent=2))
    return res


if __name__ == "__main__":
    main()
