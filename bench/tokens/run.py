"""Benchmark of the token-length stage (pipeline.data.lengths.step.LengthStep) against a plain per-record loop.

    .venv/bin/python bench/tokens/run.py                          # 100k records, baseline on 10k of them
    .venv/bin/python bench/tokens/run.py --records 20000 --baseline 2000    # quick
    .venv/bin/python bench/tokens/run.py --tokenizer tekken --records 10000 --baseline 2000 --workers 1

Same records for all (bench/tokens/corpus.py: 40% chat, 30% instruction, 30% text; tr/ru/en; generated once
and kept in the temp folder as a pickle), same tokenizer (the offline default unless --tokenizer), same outputs
(total and trainable tokens per record):
  baseline   one tokenizer call per record, the way it is usually written: chat and instruction records with
             tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True,
             return_assistant_tokens_mask=True), text records with tokenizer(text + eos_token);
             on the first --baseline records (a uniform mix: records are generated i.i.d.), one process
  stage      LengthStep.process over all records in batches of --batch, one process, fresh cache
  stage xN   the same in --workers processes on contiguous shares with one shared cache (as `prepare run`
             runs it), timed from when every worker has loaded its tokenizer
  cached     a new LengthStep over the same records and the stage's cache, in a fresh process (imports
             included; the tokenizer is not even loaded when every count is in the cache)
Wall-clock and CPU seconds are both reported: on a machine shared with other work the CPU figures are the
steadier ones. The stage's counts are checked against the baseline's on the baseline records. Prints the
figures and writes them as JSON to --out.
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import make_records  # noqa: E402


def baseline(records: list[dict], handle) -> tuple[list[tuple[int, int]], float]:
    from pipeline.data.lengths.tokenizer.chat_template import is_chat, template_messages

    tok = handle.tokenizer
    template = handle.template
    eos = tok.eos_token or ""
    out = []
    start = time.perf_counter()
    cpu = time.process_time()
    for rec in records:
        if is_chat(rec):
            # what a trainer passes: the messages and, where the record has them, its tool definitions
            enc = tok.apply_chat_template(template_messages(rec["messages"]), tools=rec.get("tools") or None,
                                          chat_template=template, tokenize=True, return_dict=True,
                                          return_assistant_tokens_mask=True)
            out.append((len(enc["input_ids"]), int(sum(enc["assistant_masks"]))))
        else:
            text = rec["text"]
            n = len(tok(text if text.endswith(eos) else text + eos)["input_ids"])
            out.append((n, n))
    return out, time.perf_counter() - start, time.process_time() - cpu


def baseline_tekken(records: list[dict], handle) -> tuple[list[tuple[int, int]], float]:
    start = time.perf_counter()
    cpu = time.process_time()
    out = [handle.measure([rec])[0] for rec in records]
    return out, time.perf_counter() - start, time.process_time() - cpu


def _worker(path: str, tokenizer: str | None, cache: str, batch: int, barrier, queue) -> None:
    """One of --workers processes: load its share, load the tokenizer, wait for the others, measure."""
    sys.path.insert(0, str(ROOT))
    from pipeline.core.config import LengthsConfig
    from pipeline.core.stats import StageStats
    from pipeline.data.lengths.step import LengthStep

    with open(path, "rb") as f:
        records = pickle.load(f)
    step = LengthStep(LengthsConfig(tokenizer=tokenizer), cache)
    step.handle
    barrier.wait()
    start, cpu = time.perf_counter(), time.process_time()
    stats = StageStats("lengths")
    for i in range(0, len(records), batch):
        step.annotate(records[i:i + batch], stats)
    queue.put({"records": len(records), "tokens": sum(r["_tokens"] for r in records),
               "seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu})


def parallel_stage(records: list[dict], workers: int, tokenizer: str | None, batch: int) -> dict:
    """The stage as the runner runs it: contiguous shares in `workers` processes, one shared cache."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    tmp = tempfile.mkdtemp(prefix="bench-tokens-par-")
    paths = []
    per = -(-len(records) // workers)
    for w in range(workers):
        path = os.path.join(tmp, f"part{w}.pkl")
        with open(path, "wb") as f:
            pickle.dump(records[w * per:(w + 1) * per], f, protocol=5)
        paths.append(path)
    barrier, queue = ctx.Barrier(workers), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(p, tokenizer, os.path.join(tmp, "cache"), batch, barrier, queue))
             for p in paths]
    for p in procs:
        p.start()
    parts = [queue.get() for _ in procs]
    for p in procs:
        p.join()
    shutil.rmtree(tmp, ignore_errors=True)
    return {"records": sum(p["records"] for p in parts), "tokens": sum(p["tokens"] for p in parts),
            "seconds": max(p["seconds"] for p in parts), "cpu_seconds": sum(p["cpu_seconds"] for p in parts)}


CACHED_SNIPPET = r"""
import sys, time, json, pickle
sys.path.insert(0, {root!r})
with open({data!r}, "rb") as f:
    records = pickle.load(f)
t1 = time.perf_counter()
c1 = time.process_time()
from pipeline.core.config import LengthsConfig
from pipeline.data.lengths.step import LengthStep
from pipeline.core.stats import StageStats
step = LengthStep(LengthsConfig(tokenizer={tokenizer!r}), {cache!r})
stats = StageStats("lengths")
for i in range(0, len(records), {batch}):
    step.annotate(records[i:i + {batch}], stats)
t2 = time.perf_counter()
print(json.dumps({{"seconds": t2 - t1, "cpu_seconds": time.process_time() - c1,
                  "hits": stats.counters["cache"]["hits"], "misses": stats.counters["cache"]["misses"],
                  "tokenizer_loaded": step._handle is not None,
                  "transformers_imported": "transformers" in sys.modules}}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--baseline", type=int, default=10_000, help="records the per-record loop runs on")
    ap.add_argument("--batch", type=int, default=2000, help="records per LengthStep.process call")
    ap.add_argument("--tokenizer", default=None, help="default: the offline Mistral 32k")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2, help="also run the stage in this many processes (1: skip)")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "last_run.json"))
    args = ap.parse_args()

    from pipeline.core.config import LengthsConfig
    from pipeline.core.stats import StageStats
    from pipeline.data.lengths.step import LengthStep

    load_at_start = [round(x, 2) for x in os.getloadavg()]
    t = time.perf_counter()
    data = str(Path(tempfile.gettempdir()) / f"bench-tokens-v2-{args.records}-{args.seed}.pkl")  # v2: tool calls in the record form
    if os.path.exists(data):
        with open(data, "rb") as f:
            records = pickle.load(f)
    else:
        records = make_records(args.records, args.seed)
        with open(data + ".tmp", "wb") as f:
            pickle.dump(records, f, protocol=5)
        os.replace(data + ".tmp", data)
    gen_s = time.perf_counter() - t
    kinds = {}
    for r in records:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1

    cache = tempfile.mkdtemp(prefix="bench-tokens-")
    cfg = LengthsConfig(tokenizer=args.tokenizer)
    step = LengthStep(cfg, cache)
    t = time.perf_counter()
    handle = step.handle
    load_s = time.perf_counter() - t
    print(f"records: {args.records:,} {kinds} (generated or loaded in {gen_s:.1f}s); tokenizer: {step.tokenizer_name}, "
          f"loaded in {load_s:.1f}s; {os.cpu_count()} CPUs", flush=True)

    base_records = [dict(r) for r in records[: args.baseline]]
    base_counts, base_s, base_cpu = (baseline_tekken if handle.__class__.__name__ == "MistralCommonHandle" else baseline)(
        base_records, handle)
    base_tokens = sum(n for n, _ in base_counts)
    print(f"baseline: {len(base_records):,} records in {base_s:.1f}s", flush=True)

    stats = StageStats("lengths")
    work = [dict(r) for r in records]
    t = time.perf_counter()
    cpu = time.process_time()
    for i in range(0, len(work), args.batch):
        step.annotate(work[i:i + args.batch], stats)
    stage_s = time.perf_counter() - t
    stage_cpu = time.process_time() - cpu
    stage_tokens = sum(r["_tokens"] for r in work)
    stage_trainable = sum(r["_trainable"] for r in work)
    mismatches = sum(1 for r, (n, tr) in zip(work, base_counts) if (r["_tokens"], r["_trainable"]) != (n, tr))
    print(f"stage: {len(work):,} records in {stage_s:.1f}s", flush=True)

    par = None
    if args.workers > 1:
        par = parallel_stage(records, args.workers, args.tokenizer, args.batch)
        print(f"stage in {args.workers} processes: {par['records']:,} records in {par['seconds']:.1f}s", flush=True)

    snippet = CACHED_SNIPPET.format(root=str(ROOT), here=str(Path(__file__).resolve().parent), data=data,
                                    tokenizer=args.tokenizer, cache=cache, batch=args.batch)
    proc = subprocess.run([sys.executable, "-c", snippet], capture_output=True, text=True, check=True)
    cached = json.loads(proc.stdout.strip().splitlines()[-1])

    def rates(n, tokens, wall, cpu):
        return {"records": n, "seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
                "records_per_s": round(n / wall), "tokens_per_s": round(tokens / wall),
                "records_per_cpu_s": round(n / cpu), "tokens_per_cpu_s": round(tokens / cpu)}

    base = rates(len(base_records), base_tokens, base_s, base_cpu)
    stage = {**rates(len(work), stage_tokens, stage_s, stage_cpu), "batch": args.batch}
    cached_rates = rates(len(work), stage_tokens, cached["seconds"], cached["cpu_seconds"])
    par_rates = rates(par["records"], par["tokens"], par["seconds"], par["cpu_seconds"]) if par else None
    result = {
        "records": args.records, "kinds": kinds, "tokenizer": step.tokenizer_name, "cpus": os.cpu_count(),
        "load_average_at_start": load_at_start,
        "tokens": stage_tokens, "trainable_tokens": stage_trainable, "tokenizer_load_seconds": round(load_s, 2),
        "baseline": base, "stage": stage,
        "speedup_wall": round(stage["records_per_s"] / base["records_per_s"], 2),
        "speedup_cpu": round(stage["records_per_cpu_s"] / base["records_per_cpu_s"], 2),
        "count_mismatches_vs_baseline": mismatches,
        **({f"stage_{args.workers}_processes": par_rates,
            f"speedup_wall_{args.workers}_processes": round(par_rates["records_per_s"] / base["records_per_s"], 2)}
           if par_rates else {}),
        "cached_rerun": {**cached_rates, **{k: cached[k] for k in ("hits", "misses", "tokenizer_loaded",
                                                                     "transformers_imported")}},
    }
    print()
    print(f"{'':10} {'records':>9} {'wall s':>8} {'cpu s':>8} {'records/s':>10} {'tokens/s':>12} "
          f"{'records/cpu-s':>14} {'tokens/cpu-s':>13}")
    rows = [("baseline", base), ("stage", stage)]
    if par_rates:
        rows.append((f"stage x{args.workers}", par_rates))
    rows.append(("cached", cached_rates))
    for name, r in rows:
        print(f"{name:10} {r['records']:>9,} {r['seconds']:>8.1f} {r['cpu_seconds']:>8.1f} {r['records_per_s']:>10,} "
              f"{r['tokens_per_s']:>12,} {r['records_per_cpu_s']:>14,} {r['tokens_per_cpu_s']:>13,}")
    print(f"speedup of the stage over the per-record loop: {result['speedup_wall']}x wall-clock, "
          f"{result['speedup_cpu']}x per CPU-second (records/s and tokens/s give the same ratio: same records)")
    if par_rates:
        print(f"with {args.workers} worker processes (as `prepare run` shards the stage): "
              f"{result[f'speedup_wall_{args.workers}_processes']}x wall-clock over the single-process loop")
    print(f"tokens {stage_tokens:,} ({stage_trainable:,} trainable); count mismatches vs the loop on "
          f"{len(base_records):,} records: {mismatches}")
    print(f"cached re-run (fresh process, imports included): {cached['seconds']:.1f}s, hits {cached['hits']:,}, "
          f"misses {cached['misses']:,}, tokenizer loaded: {cached['tokenizer_loaded']}, transformers imported: "
          f"{cached['transformers_imported']}")
    print(f"load average at start: {load_at_start} on {os.cpu_count()} CPUs (other work on the machine slows "
          f"wall-clock figures; CPU-second figures are less sensitive to it)")
    Path(args.out).write_text(json.dumps(result, indent=2), encoding="utf-8")
    shutil.rmtree(cache, ignore_errors=True)
    return 0 if mismatches == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
