"""The estimator against real GPU peaks: the points of ../shared/tools/gpu_peak.py, measured on an H200.

    python bench/gpu_peak/compare.py [--peaks bench/gpu_peak/h200_peaks.jsonl]

gpu_peak.py builds Llama-shaped models from their dimensions alone (random weights), wraps them as its case says
(PEFT LoRA/QLoRA with lora_dropout 0, or full fine-tuning with fp32 weights under bf16 autocast) and runs three
steps of `model(input_ids, labels).loss` (transformers' loss: the logits upcast to fp32), backward and
torch.optim.AdamW (the default foreach implementation: state-sized temporaries in step()). Checkpointing, when on,
is non-reentrant. No point here was used to write or fit the estimator: these are a held-out check.

Each point is estimated with the 'hf' preset and the settings that code path has (no autocast for LoRA/QLoRA,
an unfused AdamW, no k-bit upcast since prepare_model_for_kbit_training is not called), and scored on the three
figures torch and the driver give: max_memory_allocated, max_memory_reserved, and the device's used memory
(nvidia-smi) against the estimate's peak_allocated, peak_reserved and nvidia_smi.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pipeline.core.models import spec_from_config  # noqa: E402
from pipeline.plan.memory import GIB, estimate_memory  # noqa: E402
from pipeline.plan.setup import TrainingSetup  # noqa: E402

HERE = Path(__file__).parent
# gpu_peak.py's MODELS: hidden, layers, heads, kv heads, intermediate, vocab, tied embeddings (LlamaConfig, so
# the Qwen shapes have no qkv bias there either)
SHAPES = {
    "llama-3.2-1b": (2048, 16, 32, 8, 8192, 128256, True),
    "llama-3.2-3b": (3072, 28, 24, 8, 8192, 128256, True),
    "llama-2-7b": (4096, 32, 32, 32, 11008, 32000, False),
    "llama-3.1-8b": (4096, 32, 32, 8, 14336, 128256, False),
    "qwen2.5-7b": (3584, 28, 28, 4, 18944, 152064, False),
    "qwen2.5-14b": (5120, 48, 40, 8, 13824, 152064, False),
}


def spec_of(model: str, seq: int):
    h, layers, heads, kv, inter, vocab, tie = SHAPES[model]
    return spec_from_config({"model_type": "llama", "hidden_size": h, "num_hidden_layers": layers,
                             "num_attention_heads": heads, "num_key_value_heads": kv, "intermediate_size": inter,
                             "vocab_size": vocab, "tie_word_embeddings": tie, "attention_bias": False,
                             "max_position_embeddings": max(8192, seq)}, name=model)


def setup_of(case: dict) -> TrainingSetup:
    targets = "all-linear" if case["method"] == "full" or case["targets"] == "all-linear" else case["targets"]
    setup = TrainingSetup.build(spec_of(case["model"], case["seq"]), method=case["method"], seq_len=case["seq"],
                                micro_batch=case["mbs"], grad_ckpt=case["gc"], attn=case["attn"],
                                lora_rank=max(case["rank"], 1), lora_targets=targets, framework="hf",
                                cross_entropy="standard", lora_dropout=0.0, kbit_upcast="none")
    return replace(setup, autocast=case["method"] == "full", fused_optimizer=False)


def leftover_gib(case: dict, cases: list[dict]) -> float:
    """GiB the case found resident beyond the other cases of its model and method (after_load: the weights and
    adapters, measured before the first step): memory an earlier case left behind, which its peak includes."""
    same = [c["after_load_gib"] for c in cases if (c["model"], c["method"]) == (case["model"], case["method"])]
    return case["after_load_gib"] - statistics.median(same)


def scored_points(cases: list[dict], max_leftover_gib: float = 1.0) -> tuple[list[dict], list[dict]]:
    """(clean, contaminated): a case that started with more than max_leftover_gib left by an earlier case is not
    scored (gpu_peak.py runs every case in one process)."""
    clean = [c for c in cases if leftover_gib(c, cases) <= max_leftover_gib]
    return clean, [c for c in cases if c not in clean]


def load_points(path: str | Path) -> list[dict]:
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    return [r for r in rows if "peak_allocated_gib" in r]


def relative_errors(case: dict) -> dict[str, float]:
    """estimate / measured - 1 for the allocated, reserved and nvidia-smi peaks."""
    est = estimate_memory(setup_of(case))
    return {"allocated": est.peak_allocated / GIB / case["peak_allocated_gib"] - 1,
            "reserved": est.peak_reserved / GIB / case["peak_reserved_gib"] - 1,
            "nvidia-smi": est.nvidia_smi / GIB / case["device_used_gib"] - 1}


def planned_tokens_per_second(case: dict, gpu_name: str = "H200", constants: dict | None = None) -> float:
    """The planner's rate for one micro-step of the case on the catalog's card (pipeline.plan.throughput): the
    plain loop's stack (transformers' fp32-upcast loss, no fused kernels, torch.optim.AdamW)."""
    from pipeline.plan.gpus import load_catalog
    from pipeline.plan.memory import lora_param_count
    from pipeline.plan.setup import parse_lora_targets
    from pipeline.plan.throughput import Job, tokens_per_second

    gpu = load_catalog().get(gpu_name)
    spec = spec_of(case["model"], case["seq"])
    targets = "all-linear" if case["targets"] in ("all-linear", "") else case["targets"]
    lora = 0 if case["method"] == "full" else lora_param_count(spec, max(case["rank"], 1), targets)
    modules = 0 if case["method"] == "full" else len(parse_lora_targets(targets, spec))
    job = Job(spec=spec, method=case["method"], seq_len=case["seq"], micro_batch=case["mbs"], grad_ckpt=case["gc"],
              lora_params=lora, lora_modules_per_layer=modules, attn=case["attn"], cross_entropy="standard")
    return tokens_per_second(job, gpu, constants)


def throughput_table(cases: list[dict]) -> list[str]:
    """Measured tokens/s (the last of three steps) against the planner's, by tokens per micro-batch: the time
    model assumes a step large enough to keep the card busy, which the planner's largest-fitting micro-batch
    usually gives."""
    lines = ["", "time model: measured tokens/s (last of 3 steps) vs the planner's rate on the H200",
             f"{'case':58s} {'measured':>9s} {'planned':>9s} {'planned/measured':>17s}"]
    by_size: dict[str, list[float]] = {}
    for case in cases:
        planned = planned_tokens_per_second(case)
        ratio = planned / case["tokens_per_s"]
        lines.append(f"{label(case):58s} {case['tokens_per_s']:9.0f} {planned:9.0f} {ratio:17.2f}")
        tokens = case["seq"] * case["mbs"]
        size = ("512 tokens per micro-batch" if tokens <= 512 else "1-4k tokens per micro-batch" if tokens < 8192
                else ">= 8k tokens per micro-batch")
        if case["method"] != "qlora":
            by_size.setdefault(size, []).append(ratio)
    lines.append("")
    for size in ("512 tokens per micro-batch", "1-4k tokens per micro-batch", ">= 8k tokens per micro-batch"):
        ratios = by_size.get(size)
        if ratios:
            lines.append(f"LoRA and full, {size:28s} ({len(ratios):2d} points): planned/measured "
                         f"{min(ratios):.2f}-{max(ratios):.2f}, median {statistics.median(ratios):.2f}")
    return lines


def label(case: dict) -> str:
    extra = "" if case["targets"] in ("all-linear", "") else f" r{case['rank']} {case['targets']}"
    return (f"{case['model']} {case['method']}{extra} seq {case['seq']} x{case['mbs']} "
            f"{'ckpt' if case['gc'] else 'no-ckpt'} {case['attn']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peaks", default=str(HERE / "h200_peaks.jsonl"))
    args = ap.parse_args()
    cases = load_points(args.peaks)
    clean, contaminated = scored_points(cases)
    gpu = {f"{c['gpu']}, torch {c['torch']}" for c in cases}
    print(f"{len(cases)} measured points ({'; '.join(sorted(gpu))}); error = estimate / measured - 1\n")
    print(f"{'case':58s} {'alloc':>6s} {'err':>7s} | {'res':>6s} {'err':>7s} | {'smi':>6s} {'err':>7s}")
    errors: dict[str, list[float]] = {"allocated": [], "reserved": [], "nvidia-smi": []}
    by_method: dict[str, list[float]] = {}
    for case in cases:
        errs = relative_errors(case)
        note = ""
        if case in contaminated:
            note = f"  not scored: started with {leftover_gib(case, cases):.1f} GiB an earlier case left"
        else:
            for key, err in errs.items():
                errors[key].append(err)
            by_method.setdefault(case["method"], []).append(errs["allocated"])
        print(f"{label(case):58s} {case['peak_allocated_gib']:6.2f} {errs['allocated']:+7.1%} | "
              f"{case['peak_reserved_gib']:6.2f} {errs['reserved']:+7.1%} | "
              f"{case['device_used_gib']:6.2f} {errs['nvidia-smi']:+7.1%}{note}")
    print(f"\nscored: {len(clean)} points")
    for key, errs in errors.items():
        absolute = [abs(e) for e in errs]
        print(f"{key:11s} median |err| {statistics.median(absolute):6.1%}  max |err| {max(absolute):6.1%}  "
              f"mean err {statistics.fmean(errs):+6.1%}  within 10%: {sum(a <= 0.10 for a in absolute)}/{len(errs)}")
    for method, errs in sorted(by_method.items()):
        absolute = [abs(e) for e in errs]
        print(f"allocated, {method:5s} ({len(errs):2d} points): median |err| {statistics.median(absolute):6.1%}, "
              f"max |err| {max(absolute):6.1%}")
    print("\n".join(throughput_table(clean)))


if __name__ == "__main__":
    main()
