"""`prepare estimate`: the VRAM of one training step, per component (CPU only, no torch); with --trace, the
traced real step beside it."""
from __future__ import annotations

import argparse
import json
import sys

from pipeline.cli.args import CONFIG_FLAGS, add_config_flag, add_json_argument, config_overrides
from pipeline.cli.errors import UserError
from pipeline.plan.memory import GIB, MemoryEstimate, estimate_memory
from pipeline.plan.setup import PRECISIONS, SHARDING, TrainingSetup


def register(sub) -> None:
    est = sub.add_parser(
        "estimate", help="VRAM of one training step, per component (CPU only, no torch)",
        description="Estimate the GPU memory of one fine-tuning step: peak allocated (torch.cuda."
                    "max_memory_allocated), peak reserved (max_memory_reserved) and the expected nvidia-smi figure.")
    add_config_flag(est, "--model", "estimate.model", required=True)
    add_config_flag(est, "--method", "estimate.method", required=True)
    est.add_argument("--seq-len", type=int, required=True, help="tokens per sequence (the max length)")
    # not estimate.micro_batch (at most this many, None = the largest that fits): one step has one micro-batch
    est.add_argument("--micro-batch", type=int, default=1, help="sequences per GPU per step (default 1)")
    add_config_flag(est, "--grad-ckpt", "estimate.grad_ckpt", action=argparse.BooleanOptionalAction)
    add_config_flag(est, "--attn", "estimate.attn")
    add_config_flag(est, "--optimizer", "estimate.optimizer")
    add_config_flag(est, "--lora-rank", "estimate.lora_rank")
    add_config_flag(est, "--lora-targets", "estimate.lora_targets")
    est.add_argument("--gpus", type=int, default=1, help="data-parallel GPUs (default 1)")
    est.add_argument("--sharding", choices=[s for s in SHARDING if s != "none"], default=None,
                     help="with --gpus > 1: ddp (replicated, default), zero2, zero3 or fsdp")
    est.add_argument("--double-quant", action=argparse.BooleanOptionalAction, default=True,
                     help="QLoRA double quantization of the NF4 constants (default on)")
    est.add_argument("--precision", choices=PRECISIONS, default=None,
                     help="full fine-tuning: mixed (fp32 master + fp32 Adam, 16 B/param; default) or bf16 (8 B/param)")
    add_config_flag(est, "--cross-entropy", "estimate.cross_entropy")
    add_config_flag(est, "--framework", "estimate.framework")
    add_config_flag(est, "--adapter-dtype", "estimate.adapter_dtype")
    est.add_argument("--trace", action="store_true",
                     help="also trace the real training step (transformers + PEFT on the meta device, with the "
                          "--framework preset and --cross-entropy loss, one GPU; needs the 'trace' extra; seconds to "
                          "a minute)")
    add_json_argument(est)
    est.set_defaults(func=cmd_estimate)


def with_config_defaults(args: argparse.Namespace) -> argparse.Namespace:
    """args with each estimator flag left out set to its EstimateConfig default, and each one given validated
    there (ConfigError naming the flag): the defaults live in the config model only."""
    from pipeline.core.config import load_config

    settings = load_config(None, *config_overrides(args)).estimate
    filled = {dest: getattr(settings, key.removeprefix("estimate."))
              for dest, (key, _) in getattr(args, CONFIG_FLAGS).items()}
    return argparse.Namespace(**{**vars(args), **filled})


def cmd_estimate(args: argparse.Namespace) -> int:
    lora_flags = [flag for flag, value in (("--lora-rank", args.lora_rank), ("--lora-targets", args.lora_targets))
                  if value is not None]
    args = with_config_defaults(args)
    if args.method == "full" and lora_flags:
        print(f"note: {', '.join(lora_flags)} ignored with --method full", file=sys.stderr)
    if args.sharding and args.gpus < 2:
        print(f"note: --sharding {args.sharding} ignored with one GPU", file=sys.stderr)
    from pipeline.runner.preflight import check_model

    check_model(args.model)  # a typo: one line with the close matches, not the whole catalog
    try:
        estimate = estimate_memory(TrainingSetup.build(
            args.model, args.method, seq_len=args.seq_len, micro_batch=args.micro_batch, grad_ckpt=args.grad_ckpt,
            attn=args.attn, optimizer=args.optimizer,
            lora_rank=args.lora_rank, lora_targets=args.lora_targets, gpus=args.gpus, sharding=args.sharding,
            double_quant=args.double_quant, precision=args.precision, cross_entropy=args.cross_entropy,
            framework=args.framework, adapter_dtype=args.adapter_dtype))
    except (ValueError, OSError) as exc:
        raise UserError(str(exc)) from None
    traced = None
    if getattr(args, "trace", False):
        try:
            traced = _trace(args)
        except (ValueError, OSError, RuntimeError) as exc:
            raise UserError(str(exc)) from None
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
    """The traced step for the same settings, with the --framework preset's code path and the --cross-entropy loss;
    one GPU only (the tracer runs no collective). torch is imported here."""
    from pipeline.plan.trace.run import INSTALL_HINT, trace_available, trace_step

    if not trace_available():
        raise ValueError(INSTALL_HINT)
    if args.gpus > 1:
        raise ValueError("--trace traces one GPU; not traced: --gpus > 1 (drop --trace for the analytical figure)")
    return trace_step(args.model, args.method, seq_len=args.seq_len, micro_batch=args.micro_batch,
                      grad_ckpt=args.grad_ckpt, attn=args.attn, optimizer=args.optimizer,
                      lora_rank=args.lora_rank, lora_targets=args.lora_targets, double_quant=args.double_quant,
                      precision=args.precision, framework=args.framework, cross_entropy=args.cross_entropy,
                      adapter_dtype=args.adapter_dtype)


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


def short_count(n: int) -> str:
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
    trainable = f"trainable {short_count(p['trainable'])}"
    if estimate.method != "full":
        trainable += f" (LoRA r{s['lora_rank']} on {','.join(s['lora_targets'])}, {s['adapter_dtype']})"
    lines.append(f"parameters: total {short_count(p['total'])}, {trainable}")
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
