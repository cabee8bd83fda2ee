"""`prepare precheck`: on a CPU, without torch, in seconds: read and normalize the data, measure token
lengths with the model's tokenizer and chat template (on a uniform sample for large inputs), pick the
max length, estimate memory and print the recommended GPU with time and cost."""
from __future__ import annotations

import json
import random
import sys
from typing import Literal

import numpy as np

from pipeline.config import PrepareConfig
from pipeline.normalize import Normalizer
from pipeline.readers import UnreadableInput, expand_inputs
from pipeline.stats import StageStats


def sample_records(cfg: PrepareConfig, sample_size: int, seed: int = 0,
                   progress: bool = False) -> tuple[list[dict], int, dict]:
    """A uniform random sample (reservoir) of the normalized records; all of them when there are fewer
    than `sample_size`. Returns (sample, total records, counts)."""
    from pipeline.progress import Progress

    bar = Progress("precheck: read", "records", enabled=progress)
    rng = random.Random(seed)
    reservoir: list[dict] = []
    seen = 0
    counts = {"input": 0, "records": 0, "quarantined": 0, "dropped": 0, "exact_duplicates": 0}
    exact = cfg.dedup.enabled and cfg.dedup.exact
    hashes: set[int] = set()  # the high 64 bits of the run's 128-bit exact key: 8 bytes of entropy a record
    for index, f in enumerate(expand_inputs(cfg.inputs, cfg)):  # symlinks, name labels: as `run` expands them
        normalizer = Normalizer(f, cfg, index)
        for batch in normalizer.batches():
            bar.update(len(batch))
            if exact:
                batch = _drop_exact_duplicates(batch, cfg, hashes, counts)
            for rec in batch:
                seen += 1
                if len(reservoir) < sample_size:
                    reservoir.append(rec)
                else:
                    j = rng.randrange(seen)
                    if j < sample_size:
                        reservoir[j] = rec
        read, norm, clean = normalizer.stats
        counts["input"] += read.records_in
        counts["quarantined"] += sum(read.quarantined.values()) + sum(norm.quarantined.values())
        counts["dropped"] += sum(read.dropped.values()) + sum(clean.dropped.values())
    bar.close()
    counts["records"] = seen
    counts["steps"] = ["normalize", "clean"] + (["exact dedup"] if exact else [])
    return reservoir, seen, counts


def _drop_exact_duplicates(batch: list[dict], cfg: PrepareConfig, hashes: set[int], counts: dict) -> list[dict]:
    """The run's exact dedup (same key, first kept), so precheck measures the records `run` trains on;
    near duplicates need the global clustering and are not removed here."""
    from pipeline.dedup import exact_hashes, exact_text

    texts = [exact_text(r) for r in batch]  # the run's exact key, tools included
    if cfg.dedup.case_fold:
        texts = [t.casefold() for t in texts]
    kept = []
    for rec, key in zip(batch, exact_hashes(texts, cfg.dedup.punctuation_fold)[:, 0].tolist()):
        if key in hashes:
            counts["exact_duplicates"] += 1
        else:
            hashes.add(key)
            kept.append(rec)
    return kept


def run_precheck(cfg: PrepareConfig, sample_size: int = 200_000, seed: int = 0, progress: bool = False) -> dict:
    from pipeline.plan.gpus import plan_training
    from pipeline.lengths.histogram import percentile_uncertainty, summarize_lengths
    from pipeline.lengths.step import LengthStep

    from pipeline.progress import Progress

    sample, total, counts = sample_records(cfg, sample_size, seed, progress)
    if not sample:
        raise ValueError("no usable records in the input")
    step = LengthStep(cfg.lengths, None, model=cfg.estimate.model)
    stats = StageStats("lengths")
    tokens, trainable = [], []
    with Progress("precheck: tokens", "records", total=len(sample), enabled=progress) as bar:
        for start in range(0, len(sample), cfg.read.batch_size):
            batch = step.process(sample[start:start + cfg.read.batch_size], stats)
            tokens += [r["_tokens"] for r in batch]
            trainable += [r["_trainable"] for r in batch]
            bar.update(len(batch))
    tokens_arr, trainable_arr = np.array(tokens, dtype=np.int64), np.array(trainable, dtype=np.int64)
    from pipeline.runner import _max_positions

    # measured on a sample: the summary scales counts to the population and gives percentile intervals
    summary = summarize_lengths({"all": (tokens_arr, trainable_arr)}, cfg.lengths, _max_positions(cfg),
                                population={"all": total})
    packing = summary["packing"]
    plan = plan_training(cfg.estimate.model, cfg.estimate.method, seq_len=summary["max_seq_len"],
                         tokens_per_epoch=int(packing["tokens_per_epoch"]),
                         sequences_per_epoch=int(packing["sequences_per_epoch"]), epochs=cfg.estimate.epochs,
                         **plan_options(cfg))
    summary["tokenizer"] = step.tokenizer_name
    summary["uncertainty"] = percentile_uncertainty(tokens_arr, total)
    return {
        "records": total, "sampled": len(sample), "exact": len(sample) == total, "counts": counts,
        "tokenizer": step.tokenizer_name, "max_seq_len": summary["max_seq_len"], "tokens": summary,
        "memory": plan["memory"], "recommendation": plan["recommendation"],
        "fastest": plan.get("fastest"), "candidates": plan["candidates"], "hints": plan.get("hints", []),
        "plan": plan,
    }


def plan_options(cfg: PrepareConfig) -> dict:
    """plan_training's keywords for the estimator settings of the config (run and precheck plan alike)."""
    from pipeline.plan.gpus import MAX_MICRO_BATCH

    return {**cfg.estimate.memory_options(), "max_micro_batch": cfg.estimate.micro_batch or MAX_MICRO_BATCH}


PLAN_FLAGS = ("cross_entropy", "framework", "lora_rank", "lora_targets", "grad_ckpt", "attn", "optimizer",
              "micro_batch")


def add_plan_arguments(p) -> None:
    """The estimator's settings, for `run` and `precheck`; choices come from the config's Literals."""
    import argparse
    import typing

    from pipeline.config import EstimateConfig

    fields = EstimateConfig.model_fields
    for name in PLAN_FLAGS:
        flag = "--" + name.replace("_", "-")
        if name == "grad_ckpt":
            p.add_argument(flag, action=argparse.BooleanOptionalAction, default=None,
                           help="gradient checkpointing in the plan (default on)")
            continue
        annotation = fields[name].annotation  # Literal[...] or Literal[...] | None
        literal = next((a for a in (annotation, *typing.get_args(annotation)) if typing.get_origin(a) is Literal),
                       None)
        choices = list(typing.get_args(literal)) if literal is not None else None
        kind = int if name in ("lora_rank", "micro_batch") else str
        p.add_argument(flag, type=kind, choices=choices, default=None,
                       help=fields[name].description or f"estimator setting {name}")


def plan_flags(args) -> dict:
    """The estimator flags given on the command line, as overrides of the config's estimate section."""
    return {name: getattr(args, name) for name in PLAN_FLAGS if getattr(args, name, None) is not None}


def register(sub) -> None:
    p = sub.add_parser("precheck", help="CPU-only: token lengths, max length, VRAM, recommended GPU, time, cost")
    p.add_argument("inputs", nargs="+", metavar="DATA", help="files, folders, globs or s3:// URIs")
    p.add_argument("--model", default="llama-3.1-8b", help="built-in name, config.json file or folder")
    p.add_argument("--method", choices=["full", "lora", "qlora"], default="qlora",
                   help="fine-tuning method: full, lora (16-bit base) or qlora (4-bit NF4 base; default)")
    p.add_argument("--epochs", type=float, default=3.0, help="passes over the data, for time and cost (default 3)")
    p.add_argument("--tokenizer", help="tokenizer path or hub id (default: next to the model config, else offline Mistral 32k)")
    p.add_argument("--coverage", type=float, default=0.99, help="share of records the max length covers")
    p.add_argument("--sample", type=int, default=200_000, help="records measured at most (uniform sample)")
    p.add_argument("--config", metavar="FILE", help="JSON config (formats, lengths)")
    p.add_argument("--json", action="store_true", help="print JSON on stdout")
    p.add_argument("--html", metavar="FILE", help="also write the findings as one self-contained HTML page")
    p.add_argument("--trace", action="store_true",
                   help="also trace the real training step at the chosen length (needs the 'trace' extra)")
    add_plan_arguments(p)
    from pipeline.train.emit import add_emit_arguments  # --emit: the trainer config of this plan

    add_emit_arguments(p)
    p.set_defaults(func=cmd_precheck)


def cmd_precheck(args) -> int:
    from pipeline.config import load_config

    if getattr(args, "emit", None):  # the trainer's preset is estimated: what is run is what was estimated
        from pipeline.train.emit import framework_for

        args.framework = framework_for(args.emit, args.framework)
    # flags merged before validation: a bad value (--coverage 1.5) is one line naming it, not a later traceback
    cfg = load_config(args.config, inputs=args.inputs,
                      estimate={"model": args.model, "method": args.method, "epochs": args.epochs,
                                **plan_flags(args)},
                      lengths={"coverage": args.coverage, "tokenizer": args.tokenizer})
    from pipeline.preflight import check_model

    check_model(cfg.estimate.model)  # a typo is one line with close matches, before the data is read
    traced = None
    try:
        if getattr(args, "trace", False):
            from pipeline.plan.trace import INSTALL_HINT, trace_available

            if not trace_available():  # before reading the data
                raise ValueError(INSTALL_HINT)
        result = run_precheck(cfg, args.sample, progress=True)
        if getattr(args, "emit", None):
            from pipeline.train.emit import emit_from_precheck

            for path in emit_from_precheck(args, cfg, result):
                print(f"wrote {path}", file=sys.stderr)
        if getattr(args, "trace", False):
            traced = _trace_plan(cfg, result)
        if getattr(args, "html", None):
            from pipeline.report_html import precheck_report, write_html

            write_html(args.html, precheck_report(result), title="Prepare precheck report")
    except (UnreadableInput, ValueError, FileNotFoundError, RuntimeError) as exc:
        print(f"prepare: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        out = {k: v for k, v in result.items() if k != "plan"}
        if traced is not None:
            out["trace"] = traced.to_dict()
        print(json.dumps(out, ensure_ascii=False, default=float))
        return 0
    from pipeline.plan.gpus import render_plan_text
    from pipeline.lengths.histogram import render_lengths_text

    measured = "all measured" if result["exact"] else f"{result['sampled']} sampled"
    counts = result["counts"]
    print(f"records: {result['records']} after {', '.join(counts['steps'])} ({measured}; "
          f"{counts['exact_duplicates']} exact duplicates not counted; `prepare run` also removes near "
          f"duplicates and may measure fewer); tokenizer: {result['tokenizer']}")
    print(render_lengths_text(result["tokens"]))
    print(render_plan_text(result["plan"]))
    if traced is not None:
        from pipeline.estimate_cli import render_trace_text

        print(render_trace_text(traced), end="")
        print(f"analytical peak allocated {result['memory']['peak_allocated_gib']:.2f} GiB for the same step")
    return 0


def _trace_plan(cfg: PrepareConfig, result: dict):
    """The traced step of the plan's headline estimate: its length, micro-batch and estimator settings."""
    from pipeline.plan.trace import trace_step

    s = result["memory"]["settings"]
    if s.get("framework", "hf") != "hf" or s.get("gpus", 1) > 1 \
            or s.get("cross_entropy") not in (None, "standard"):
        raise ValueError("--trace runs the hf stack (Trainer + PEFT, HF loss) on one GPU; drop it for this plan")
    return trace_step(cfg.estimate.model, cfg.estimate.method, seq_len=result["max_seq_len"],
                      micro_batch=s["micro_batch"], grad_ckpt=s["grad_ckpt"], attn=s["attn"], optimizer=s["optimizer"],
                      lora_rank=s.get("lora_rank") or 16, lora_targets=s.get("lora_targets") or "all-linear",
                      double_quant=s.get("double_quant") if s.get("double_quant") is not None else True,
                      precision=s.get("precision"))
