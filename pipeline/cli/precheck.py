"""`prepare precheck`: on a CPU, without torch, in seconds: token lengths, max length, VRAM, the recommended GPU
with time and cost (pipeline.runner.precheck does the work)."""
from __future__ import annotations

import argparse
import json
import sys

from pipeline.cli.args import (
    add_config_argument,
    add_config_flag,
    add_encoding_flag,
    add_json_argument,
    add_plan_arguments,
    config_overrides,
)
from pipeline.cli.errors import UserError


def register(sub) -> None:
    p = sub.add_parser("precheck", help="CPU-only: token lengths, max length, VRAM, recommended GPU, time, cost")
    add_config_flag(p, "inputs", "inputs", nargs="*", metavar="DATA")
    add_config_flag(p, "--model", "estimate.model")
    add_config_flag(p, "--method", "estimate.method")
    add_config_flag(p, "--epochs", "estimate.epochs")
    add_config_flag(p, "--tokenizer", "lengths.tokenizer")
    add_config_flag(p, "--coverage", "lengths.coverage")
    add_config_flag(p, "--skip-unreadable", "read.skip_unreadable", action="store_const", const=True)
    p.add_argument("--sample", type=int, default=200_000, help="records measured at most (uniform sample)")
    add_encoding_flag(p)
    add_config_argument(p, "JSON or YAML config; flags override it")
    add_json_argument(p)
    p.add_argument("--html", metavar="FILE", help="also write the findings as one self-contained HTML page")
    p.add_argument("--trace", action="store_true",
                   help="also trace the real training step at the chosen length (needs the 'trace' extra)")
    add_plan_arguments(p)
    from pipeline.train.emit import add_emit_arguments  # --emit: the trainer config of this plan

    add_emit_arguments(p)
    p.set_defaults(func=cmd_precheck)


def cmd_precheck(args: argparse.Namespace) -> int:
    from pipeline.runner.precheck import run_precheck

    cfg = precheck_config(args)  # every check that needs no data, before the data is read
    traced = None
    try:
        result = run_precheck(cfg, args.sample, progress=True)
        if args.emit:
            from pipeline.train.emit import emit_from_precheck

            for path in emit_from_precheck(args, cfg, result):
                print(f"wrote {path}", file=sys.stderr)
        if args.trace:
            traced = _trace_plan(cfg, result)
        if args.html:
            from pipeline.report.html import precheck_report, write_html

            write_html(args.html, precheck_report(result), title="Prepare precheck report")
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        raise UserError(str(exc)) from None
    if args.json:
        out = {k: v for k, v in result.items() if k != "plan"}
        if traced is not None:
            out["trace"] = traced.to_dict()
        print(json.dumps(out, ensure_ascii=False, default=float))
        return 0
    from pipeline.data.lengths.draw import render_lengths_text
    from pipeline.plan.gpus import render_plan_text

    measured = "all measured" if result["exact"] else f"{result['sampled']} sampled"
    counts = result["counts"]
    print(f"records: {result['records']} after {', '.join(counts['steps'])} ({measured}; "
          f"{counts['exact_duplicates']} exact duplicates not counted); tokenizer: {result['tokenizer']}")
    print(f"precheck {counts['differs_from_run']}")
    if counts["unreadable"]:
        print(f"skipped {len(counts['unreadable'])} unreadable input(s): "
              + ", ".join(f"{u['file']} ({u['reason']})" for u in counts["unreadable"]))
    print(render_lengths_text(result["tokens"]))
    from pipeline.data.lengths.untrained import untrained_line

    line = untrained_line(result["untrained"])
    if line:  # the same line as `prepare run`
        print(line)
    print(render_plan_text(result["plan"]))
    if traced is not None:
        from pipeline.cli.estimate import render_trace_text

        print(render_trace_text(traced), end="")
        print(f"analytical peak allocated {result['memory']['peak_allocated_gib']:.2f} GiB for the same step")
    return 0


def precheck_config(args: argparse.Namespace):
    """The config of this precheck, after every check that needs no data (flags, config, model, tokenizer,
    --trace, --emit); the approximate-tokenizer warning, if any, is printed once, after them."""
    from pipeline.core.config import load_config, merge_config
    from pipeline.runner.preflight import check_model, check_tokenizer

    if args.sample < 1:
        raise UserError(f"--sample must be at least 1 (got {args.sample})")
    # flags merged before validation: a bad value (--coverage 1.5) is one line naming it, not a later traceback
    cfg = load_config(args.config, *config_overrides(args))
    if not cfg.inputs:
        raise UserError("no inputs: give files, folders, globs or s3:// URIs, or inputs in --config")
    if args.emit:  # the trainer's preset is estimated: what is run is what was estimated
        from pipeline.train.emit import check_emit_arguments, framework_for, plan_at_run_length

        check_emit_arguments(args)
        given = cfg.estimate.framework if "framework" in cfg.estimate.model_fields_set else None  # flag or file
        cfg = merge_config(cfg, {"estimate": {"framework": framework_for(args.emit, given)}})
        cfg = plan_at_run_length(cfg, args)
    if args.trace:
        from pipeline.plan.trace.run import INSTALL_HINT, trace_available

        if not trace_available():
            raise UserError(INSTALL_HINT)
    check_model(cfg.estimate.model)  # a typo is one line with close matches
    warning = check_tokenizer(cfg)  # a tokenizer that does not load: one line
    if warning:
        print(f"prepare: warning: {warning}", file=sys.stderr)
    return cfg


def _trace_plan(cfg, result: dict):
    """The traced step of the plan's headline estimate: its length, micro-batch and estimator settings, with the
    framework preset and loss the plan estimated; one GPU only (the tracer runs no collective)."""
    from pipeline.plan.trace.run import trace_step

    s = result["memory"]["settings"]
    if s.get("gpus", 1) > 1:
        raise ValueError("--trace traces one GPU, and this plan needs several; drop --trace for it")
    return trace_step(cfg.estimate.model, cfg.estimate.method, seq_len=result["max_seq_len"],
                      micro_batch=s["micro_batch"], grad_ckpt=s["grad_ckpt"], attn=s["attn"], optimizer=s["optimizer"],
                      lora_rank=s.get("lora_rank") or 16, lora_targets=s.get("lora_targets") or "all-linear",
                      double_quant=s.get("double_quant") if s.get("double_quant") is not None else True,
                      precision=s.get("precision"), framework=s.get("framework", "hf"),
                      cross_entropy=s.get("cross_entropy"), adapter_dtype=s.get("adapter_dtype"))
