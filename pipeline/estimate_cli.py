"""`prepare estimate` (VRAM breakdown of one training step) and `prepare gpus` (the catalog).

pipeline/cli.py calls register(subparsers); each subcommand sets func(args) -> exit code. Errors are one line on
stderr and exit code 2, never a traceback.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pipeline.plan.gpus import catalog_rows, load_catalog, render_catalog_text
from pipeline.plan.memory import (ATTENTION, CROSS_ENTROPY, GIB, METHODS, OPTIMIZERS, PRECISIONS, MemoryEstimate,
                             estimate_memory, load_constants)
from pipeline.plan.setup import FRAMEWORKS

DEFAULT_LORA_RANK = 16
DEFAULT_LORA_TARGETS = "all-linear"


def register(subparsers) -> None:
    est = subparsers.add_parser(
        "estimate", help="VRAM of one training step, per component (CPU only, no torch)",
        description="Estimate the GPU memory of one fine-tuning step: peak allocated (torch.cuda."
                    "max_memory_allocated), peak reserved (max_memory_reserved) and the expected nvidia-smi figure.")
    est.add_argument("--model", required=True, help="built-in name (e.g. Llama-3.1-8B), hub id, config.json or folder")
    est.add_argument("--method", required=True, choices=METHODS)
    est.add_argument("--seq-len", type=int, required=True, help="tokens per sequence (the max length)")
    est.add_argument("--micro-batch", type=int, default=1, help="sequences per GPU per step (default 1)")
    est.add_argument("--grad-ckpt", action=argparse.BooleanOptionalAction, default=True,
                     help="gradient checkpointing (default on)")
    est.add_argument("--attn", choices=ATTENTION, default="sdpa", help="sdpa/FlashAttention or eager (default sdpa)")
    est.add_argument("--optimizer", choices=OPTIMIZERS, default="adamw")
    est.add_argument("--lora-rank", type=int, default=None, help=f"LoRA rank (default {DEFAULT_LORA_RANK})")
    est.add_argument("--lora-targets", default=None,
                     help=f"all-linear or modules such as q,v or q_proj,k_proj,... (default {DEFAULT_LORA_TARGETS})")
    est.add_argument("--gpus", type=int, default=1, help="data-parallel GPUs (default 1)")
    est.add_argument("--sharding", choices=["ddp", "zero2", "zero3", "fsdp"], default=None,
                     help="with --gpus > 1: ddp (replicated, default), zero2, zero3 or fsdp")
    est.add_argument("--double-quant", action=argparse.BooleanOptionalAction, default=True,
                     help="QLoRA double quantization of the NF4 constants (default on)")
    est.add_argument("--precision", choices=PRECISIONS, default=None,
                     help="full fine-tuning: mixed (fp32 master + fp32 Adam, 16 B/param; default) or bf16 (8 B/param)")
    est.add_argument("--cross-entropy", choices=CROSS_ENTROPY, default=None,
                     help="standard (HF: full fp32-upcast logits), bf16 (F.cross_entropy on bf16 logits), chunked (torchtune), "
                          "or fused (Liger / Cut-CE / Unsloth); default: the framework preset's")
    est.add_argument("--framework", choices=FRAMEWORKS, default="hf",
                     help="training stack whose defaults apply (default hf: Trainer/PEFT/TRL)")
    est.add_argument("--trace", action="store_true",
                     help="also trace the real training step (transformers + PEFT on the meta device, the hf stack; "
                          "needs the 'trace' extra; seconds to a minute)")
    est.add_argument("--json", action="store_true", help="print only JSON")
    est.set_defaults(func=run_estimate)

    gpus = subparsers.add_parser("gpus", help="print the GPU catalog (memory, price, speed)",
                                 description="Print the GPU catalog used by the pre-check.")
    gpus.add_argument("--catalog", type=Path, default=None, help="your own catalog JSON (same format)")
    gpus.add_argument("--json", action="store_true", help="print only JSON")
    gpus.set_defaults(func=run_gpus)

    models = subparsers.add_parser("models", help="list the built-in models (names and aliases for --model)",
                                   description="List the built-in model specs that --model takes by name.")
    models.add_argument("--json", action="store_true", help="print only JSON")
    models.set_defaults(func=run_models)


def _fail(command: str, exc: Exception) -> int:
    print(f"prepare {command}: error: {exc}", file=sys.stderr)
    return 2


def run_estimate(args: argparse.Namespace) -> int:
    lora_flags = [flag for flag, value in (("--lora-rank", args.lora_rank), ("--lora-targets", args.lora_targets))
                  if value is not None]
    if args.method == "full" and lora_flags:
        print(f"note: {', '.join(lora_flags)} ignored with --method full", file=sys.stderr)
    if args.sharding and args.gpus < 2:
        print(f"note: --sharding {args.sharding} ignored with one GPU", file=sys.stderr)
    try:
        from pipeline.preflight import PreflightError, check_model

        check_model(args.model)  # a typo: one line with the close matches, not the whole catalog
    except PreflightError as exc:
        return _fail("estimate", exc)
    try:
        estimate = estimate_memory(
            args.model, args.method, seq_len=args.seq_len, micro_batch=args.micro_batch, grad_ckpt=args.grad_ckpt,
            attn=args.attn, optimizer=args.optimizer,
            lora_rank=args.lora_rank if args.lora_rank is not None else DEFAULT_LORA_RANK,
            lora_targets=args.lora_targets or DEFAULT_LORA_TARGETS, gpus=args.gpus, sharding=args.sharding,
            double_quant=args.double_quant, precision=args.precision, cross_entropy=args.cross_entropy,
            framework=args.framework)
    except (ValueError, OSError) as exc:
        return _fail("estimate", exc)
    traced = None
    if getattr(args, "trace", False):
        try:
            traced = _trace(args)
        except (ValueError, OSError, RuntimeError) as exc:
            return _fail("estimate", exc)
    if args.json:
        out = estimate.to_dict()
        if traced is not None:
            out["trace"] = traced.to_dict()
        print(json.dumps(out, indent=2))
    else:
        print(render_estimate_text(estimate), end="")
        if traced is not None:
            print(render_trace_text(traced, estimate), end="")
    return 0


def _trace(args: argparse.Namespace):
    """The traced step for the same settings; only the hf stack on one GPU is traced. torch is imported here."""
    from pipeline.plan.trace import trace_available, trace_step, INSTALL_HINT

    if not trace_available():
        raise ValueError(INSTALL_HINT)
    unsupported = [flag for flag, bad in (("--gpus > 1", args.gpus > 1), ("--framework " + args.framework,
                                                                           args.framework != "hf"),
                                          ("--cross-entropy " + str(args.cross_entropy),
                                           args.cross_entropy not in (None, "standard")))
                   if bad]
    if unsupported:
        raise ValueError(f"--trace runs the hf stack (Trainer + PEFT, HF loss) on one GPU; not traced: "
                         f"{', '.join(unsupported)}")
    return trace_step(args.model, args.method, seq_len=args.seq_len, micro_batch=args.micro_batch,
                      grad_ckpt=args.grad_ckpt, attn=args.attn, optimizer=args.optimizer,
                      lora_rank=args.lora_rank if args.lora_rank is not None else DEFAULT_LORA_RANK,
                      lora_targets=args.lora_targets or DEFAULT_LORA_TARGETS, double_quant=args.double_quant,
                      precision=args.precision)


def render_trace_text(traced, estimate: MemoryEstimate | None = None) -> str:
    lines = ["", f"traced step ({traced.seconds:.1f} s on the meta device; the second of two steps):"]
    lines += [f"  {step}" for step in traced.code_path]
    width = max(len(k) for k in traced.at_peak)
    lines.append(f"{'at the traced peak':<{width}}  {'GiB':>8}")
    for name, size in traced.at_peak.items():
        lines.append(f"{name:<{width}}  {size / GIB:8.2f}")
    versus = ""
    if estimate is not None and estimate.peak_allocated:
        ratio = estimate.peak_allocated / traced.peak_allocated - 1
        versus = f"; analytical {estimate.peak_allocated_gib:.2f} GiB ({ratio:+.1%})"
    lines.append(f"traced peak allocated {traced.peak_allocated / GIB:8.2f} GiB at {traced.peak_phase}{versus}")
    lines.append("note: the trace counts tensors; cuBLAS/FlashAttention workspaces, NCCL buffers and the caching "
                 "allocator (reserved, nvidia-smi) are not in it")
    lines += [f"note: {n}" for n in traced.notes]
    return "\n".join(lines) + "\n"


def _count(n: int) -> str:
    for unit, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{n / size:.2f}{unit}"
    return str(n)


def render_estimate_text(estimate: MemoryEstimate) -> str:
    s, p = estimate.settings, estimate.params
    gpus = f"{s['gpus']} GPUs ({s['sharding']})" if s["gpus"] > 1 else "1 GPU"
    lines = [f"{estimate.model}, {estimate.method}: seq {s['seq_len']} x micro-batch {s['micro_batch']}, {gpus}, "
             f"{'gradient checkpointing' if s['grad_ckpt'] else 'no checkpointing'}, {s['attn']} attention, "
             f"{s['optimizer']}, {s['framework']} stack"]
    trainable = f"trainable {_count(p['trainable'])}"
    if estimate.method != "full":
        trainable += f" (LoRA r{s['lora_rank']} on {','.join(s['lora_targets'])}, {s['adapter_dtype']})"
    lines.append(f"parameters: total {_count(p['total'])}, {trainable}")
    lines.append("")
    width = max(len(k) for k in estimate.components)
    lines.append(f"{'component (per GPU)':<{width}}  {'GiB':>8}")
    for name, size in estimate.components.items():
        lines.append(f"{name:<{width}}  {size / GIB:8.2f}")
    lines.append("")
    lines.append(f"peak allocated  {estimate.peak_allocated_gib:8.2f} GiB  as torch.cuda.max_memory_allocated "
                 f"(at {estimate.peak_phase})")
    lines.append(f"peak reserved   {estimate.peak_reserved_gib:8.2f} GiB  as torch.cuda.max_memory_reserved")
    lines.append(f"nvidia-smi      {estimate.nvidia_smi_gib:8.2f} GiB  expected: reserved + CUDA context, "
                 f"what must fit on the card")
    lines += [f"note: {n}" for n in estimate.notes]
    return "\n".join(lines) + "\n"


def run_gpus(args: argparse.Namespace) -> int:
    try:
        catalog = load_catalog(args.catalog)
    except (ValueError, OSError) as exc:
        return _fail("gpus", exc)
    if args.json:
        print(json.dumps({"currency": catalog.currency, "price_basis": catalog.price_basis,
                          "source": catalog.source, "gpus": catalog_rows(catalog)}, indent=2))
    else:
        print(render_catalog_text(catalog), end="")
    return 0


def run_models(args: argparse.Namespace) -> int:
    from pipeline.plan.models import builtin_models, builtin_spec, builtin_aliases, param_count

    rows = []
    for name in builtin_models():
        spec = builtin_spec(name)
        rows.append({"name": name, "model_type": spec.model_type, "params": param_count(spec),
                     "max_position_embeddings": spec.max_position_embeddings, "aliases": builtin_aliases(name)})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    width = max(len(r["name"]) for r in rows)
    print(f"{'model':<{width}}  {'type':<10} {'params':>8} {'context':>8}  aliases")
    for r in rows:
        print(f"{r['name']:<{width}}  {r['model_type']:<10} {_count(r['params']):>8} "
              f"{r['max_position_embeddings']:>8}  {', '.join(r['aliases'])}")
    print("Any other model: --model path/to/config.json (or a folder holding one).")
    return 0


def main(argv=None) -> int:
    """Stand-alone entry for testing: `python -m pipeline.estimate_cli estimate ...`."""
    parser = argparse.ArgumentParser(prog="prepare")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
