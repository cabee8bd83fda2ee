"""Training time per micro-step as a sum of named terms, for one training stack on one card.

Like the memory model, each term names what the step spends time on, so a stack that differs in a kernel
differs in that term only:
- matmul: the linear layers' FLOPs (6N full, 4N with a frozen base, +2N when checkpointing recomputes the
  forward, 6 x the adapters) at the card class's share of its dense bf16 peak;
- attention: the QK^T and PV FLOPs by kernel (FlashAttention-2 and SDPA's flash backend skip the masked half of a
  causal mask, eager computes it) at the kernel's efficiency relative to the GEMMs; eager attention also moves
  its seq x seq scores through memory several times (eager_scores);
- elementwise: norms, activations, RoPE, residuals, casts - memory-bound passes over the activations, which fused
  kernels (Unsloth, torch.compile) cut to a fitted share;
- loss: the passes over the logits, by cross-entropy path (fused kernels never write them);
- dequant: QLoRA's NF4 weights dequantized to bf16 before every matmul, once per weight pass and micro-step
  (a per-step cost, not a blanket slowdown: a larger micro-batch amortizes it);
- eager adapters: LoRA adapters run as PEFT's separate modules in eager mode (trl, axolotl, LLaMA-Factory) stretch
  the GPU work by a fitted share; fused stacks (Unsloth, torch.compile, torchtune) fold them into their kernels;
- launch: the host side, kernel launches and Python per layer pass; added to the GPU work, not hidden under it:
  the H200 points at 512 tokens per micro-batch run slower than planned even so (bench/time/loso.py), so it
  shows where the GPU work is small (micro-batch 1, short sequences);
- optimizer: the optimizer step's passes over the trainable parameters and their state, once per optimizer step;
- communication: gradients (DDP) or weights and gradients (FSDP / ZeRO-3) over the card's interconnect,
  overlapped with the compute it is issued beside.
The step takes max(GPU work, weight-streaming floor, communication) + launch + optimizer. The few constants are
fitted on published throughput (resources/time_calibration.json, refitted by bench/time/loso.py).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from pipeline.core.models import ModelSpec, load_model_spec, param_breakdown
from pipeline.core.resources import resource
from pipeline.plan.memory import lora_param_count
from pipeline.plan.setup import parse_lora_targets

CONSTANTS_FILE = resource("time_constants.json")
CALIBRATION_FILE = resource("time_calibration.json")

# Efficiency of each attention kernel's FLOPs relative to the card's GEMMs: FlashAttention-2 reaches 50-73% of
# the A100 peak forward + backward (Dao 2023, fig. 5-7) where cuBLAS GEMMs reach ~80%, i.e. 0.63-0.91 of the
# GEMMs: flash_attention_efficiency is set to the middle of that, 0.75, not fitted (one long-sequence figure
# decided it when it was, and moved with whichever source was held out). On Hopper FlashAttention-2 reaches only
# 35% of the peak against 80-90% for optimized GEMMs (Shah et al. 2024, FlashAttention-3, sec. 1: FA2 was written
# for Ampere and uses none of Hopper's asynchronous tensor-core instructions), 0.39-0.44 of the GEMMs:
# flash_attention_efficiency_hopper is set to the middle, 0.41, from that paper, not fitted. SDPA runs the same
# flash kernels for causal bf16 training without a padding mask, taken as 0.94 of FlashAttention-2 (its flash
# backend is FA2 with PyTorch's dispatch around it); eager attention is two plain batched GEMMs.
# backward: the backward's attention FLOPs in forwards: the flash kernels recompute the scores and run five
# matmuls against the forward's two (2.5x; Dao 2023, sec. 3.1), eager attention's autograd four (2x).
ATTENTION_KERNELS = {"fa2": {"relative_efficiency": 1.0, "causal_skip": True, "flash": True, "backward": 2.5},
                     "sdpa": {"relative_efficiency": 0.94, "causal_skip": True, "flash": True, "backward": 2.5},
                     "eager": {"relative_efficiency": 1.0, "causal_skip": False, "flash": False, "backward": 2.0}}
ATTENTION_ALIASES = {"flash": "fa2", "flash_attention_2": "fa2"}

# Bytes eager attention moves per element of one layer's seq x seq scores (bf16, softmax in fp32), as
# transformers' eager_attention_forward runs it: forward 24 (QK^T written, scaled, masked, softmax read and
# written in fp32, cast back, read by PV), backward 30 (the gradient through PV, the cast, the softmax and the
# scaling); checkpointing runs the forward twice. SDPA's fused kernels never write the scores.
EAGER_BYTES_PER_SCORE = {"forward": 24, "backward": 30}

# Bytes moved per logit by each cross-entropy path, forward + backward: standard upcasts the bf16 logits to fp32
# (read 2, write 4), log-softmax reads and writes them (8), the backward writes and reads the fp32 gradient and
# casts it back (4 + 4 + 2 + 2); bf16 stays in 2-byte tensors; chunked (torchtune) does standard's passes one
# slice at a time; fused kernels (Liger, Cut-CE, Unsloth) compute the loss and its gradient in one pass from the
# hidden states, never writing the logits.
LOSS_BYTES_PER_LOGIT = {"standard": 26, "bf16": 13, "chunked": 26, "fused": 0}

# Bytes the optimizer step moves per trainable parameter: AdamW with fp32 master weights and states reads
# weight, gradient, two moments and writes weight, moments and the bf16 copy (4 x 4 + 3 x 4 + 2); in bf16 all
# of them are 2 bytes; 8-bit AdamW keeps 1-byte moments; SGD reads weight and gradient and writes the weight.
OPTIMIZER_BYTES = {"adamw": {"mixed": 30, "bf16": 14}, "adamw8bit": 10, "paged_adamw8bit": 10, "sgd": 6,
                   "adafactor": 10}

# Share of the interconnect's per-direction bandwidth NCCL's ring collectives reach (nccl-tests bus bandwidth
# on NVLink and PCIe is 70-85% of the link rate).
LINK_EFFICIENCY = 0.75

# Kernels one decoder layer launches per pass (norms, projections, RoPE, attention, activation, residuals), and
# what each LoRA adapter adds (dropout, A, B, scale, add, cast): PyTorch profiler counts of a Llama layer.
KERNELS_PER_LAYER = 25
KERNELS_PER_ADAPTER = 6

# Card classes that share one fitted matmul efficiency. GeForce cards (3090, 4090) have published figures of their
# own and reach a larger share of their data-sheet peak than the A100 (boost clocks and a 350-450 W budget for a
# half-rate FP32-accumulate peak); the datacenter and workstation cards of the same generations (A40, A6000, L4,
# L40S) must reach a full-rate peak within 72-350 W, so they take the fitted datacenter card's share (the A100's),
# not the GeForce one: no published figure of theirs is in the fit to say more. Blackwell takes its generation's
# nearest fitted share, discounted for software maturity as the catalog was.
CLASS_GROUP = {"ampere_datacenter": "ampere_datacenter", "ampere_pro": "ampere_datacenter",
               "ada": "ampere_datacenter", "blackwell_pro": "ampere_datacenter", "default": "ampere_datacenter",
               "hopper": "hopper", "blackwell": "hopper",
               "ampere_consumer": "geforce", "ada_consumer": "geforce", "blackwell_consumer": "geforce"}
CLASS_DISCOUNT = {"blackwell": 0.85, "blackwell_pro": 0.85, "blackwell_consumer": 0.85}


class Card(Protocol):
    """What the time model reads of a card (pipeline.plan.gpus.GPU, or a calibration figure's card)."""
    bf16_tflops: float
    bandwidth_gbs: float | None
    interconnect_gbs: float | None
    gpu_class: str


@dataclass(frozen=True)
class FigureCard:
    name: str
    bf16_tflops: float
    bandwidth_gbs: float
    interconnect_gbs: float | None = None
    gpu_class: str = "default"


@dataclass(frozen=True)
class Job:
    """One micro-step as the time model needs it: the model's dimensions and the stack's kernels."""
    spec: ModelSpec
    method: str
    seq_len: int
    micro_batch: int
    grad_ckpt: bool = True
    recompute_share: float = 1.0      # of the forward's matmuls checkpointing recomputes: 1 full, 0.5 selective
    lora_params: int = 0
    lora_modules_per_layer: int = 0
    attn: str = "sdpa"
    cross_entropy: str = "standard"
    fused_kernels: bool = False       # Unsloth's kernels or torch.compile: elementwise passes and launches fused
    optimizer: str = "adamw"
    precision: str = "mixed"
    gpus: int = 1
    sharding: str = "none"
    grad_accum: int = 1

    @property
    def tokens(self) -> int:
        return self.seq_len * self.micro_batch


def attention_kernel(attn: str) -> str:
    attn = ATTENTION_ALIASES.get(attn, attn)
    if attn not in ATTENTION_KERNELS:
        raise ValueError(f"unknown attention kernel {attn!r}; choose one of {', '.join(ATTENTION_KERNELS)}")
    return attn


def stack_assumptions(framework: str, attn: str, cross_entropy: str, compile: bool = False,
                      method: str = "full") -> dict:
    """What the time model assumed of the stack, for the plan to say."""
    fused = framework == "unsloth" or compile
    return {"framework": framework, "attention": attention_kernel(attn), "cross_entropy": cross_entropy,
            "fused_kernels": fused, "eager_adapters": runs_adapters_eagerly(method, fused)}


def runs_adapters_eagerly(method: str, fused_kernels: bool) -> bool:
    """LoRA adapters run as separate modules, each with its own kernels (PEFT in eager mode)."""
    return method in ("lora", "qlora") and not fused_kernels


@lru_cache(maxsize=1)
def load_constants() -> dict:
    return json.loads(CONSTANTS_FILE.read_text())


def efficiency_key(gpu_class: str) -> str:
    """The constant that holds a card class's fitted matmul efficiency."""
    return "matmul_efficiency_" + CLASS_GROUP.get(gpu_class, CLASS_GROUP["default"])


def matmul_efficiency(gpu_class: str, constants: dict) -> float:
    return constants[efficiency_key(gpu_class)] * CLASS_DISCOUNT.get(gpu_class, 1.0)


def flash_efficiency(gpu_class: str, constants: dict) -> float:
    """The flash kernels' rate relative to the card's GEMMs: FlashAttention-2 lags further behind on Hopper (and
    Blackwell, which takes Hopper's constants) than on Ampere and Ada."""
    hopper = CLASS_GROUP.get(gpu_class, CLASS_GROUP["default"]) == "hopper"
    return constants["flash_attention_efficiency_hopper" if hopper else "flash_attention_efficiency"]


def matmul_flops_per_token(spec: ModelSpec, method: str, grad_ckpt: bool, lora_params: int = 0,
                           recompute_share: float = 1.0) -> float:
    """Forward 2N, activation gradients 2N, weight gradients 2N (full only), the forward again (2N) when
    checkpointing recomputes it, or the share of it that selective checkpointing recomputes (torchtitan's
    op-level policy keeps every second matmul's output: 0.5); adapters 6 x their size."""
    n = param_breakdown(spec)["matmul_active"]
    return ((6 if method == "full" else 4) + (2 * recompute_share if grad_ckpt else 0)) * n + 6 * lora_params


def attention_flops_per_token(spec: ModelSpec, seq_len: int, grad_ckpt: bool, attn: str = "sdpa") -> float:
    """Causal QK^T and PV: 2*s*q_dim per layer per forward with the masked half skipped, twice that without;
    the backward the kernel's multiple of a forward, and one more forward under full checkpointing (selective
    checkpointing keeps the attention's output: pass grad_ckpt False)."""
    causal = 2 * spec.num_hidden_layers * seq_len * spec.q_dim
    kernel = ATTENTION_KERNELS[attention_kernel(attn)]
    return causal * (1 if kernel["causal_skip"] else 2) * (1 + kernel["backward"] + (1 if grad_ckpt else 0))


def flops_per_token(spec: ModelSpec, method: str, seq_len: int, grad_ckpt: bool, lora_params: int = 0) -> float:
    """Training FLOPs per token with a causal-skipping attention kernel (the plan's headline figure)."""
    return matmul_flops_per_token(spec, method, grad_ckpt, lora_params) + attention_flops_per_token(
        spec, seq_len, grad_ckpt)


def eager_attention_bytes(spec: ModelSpec, seq_len: int, micro_batch: int, grad_ckpt: bool) -> float:
    """Memory traffic of eager attention's elementwise passes over the scores in one micro-step."""
    passes = EAGER_BYTES_PER_SCORE["forward"] * (2 if grad_ckpt else 1) + EAGER_BYTES_PER_SCORE["backward"]
    return float(spec.num_hidden_layers * spec.num_attention_heads * micro_batch * seq_len ** 2 * passes)


def _layer_passes(grad_ckpt: bool) -> int:
    return 3 if grad_ckpt else 2  # forward, (recompute), backward: each reads every weight and activation once


def _optimizer_bytes(job: Job) -> float:
    per_param = OPTIMIZER_BYTES.get(job.optimizer, 14)
    if isinstance(per_param, dict):
        per_param = per_param["mixed" if job.method != "full" or job.precision == "mixed" else "bf16"]
    trainable = param_breakdown(job.spec)["total"] if job.method == "full" else job.lora_params
    shards = job.gpus if job.sharding in ("zero2", "zero3", "fsdp") else 1
    return trainable * per_param / shards


def communication_bytes(job: Job) -> float:
    """Bytes each card sends per micro-step: a ring all-reduce of the gradients (DDP, ZeRO-1/2: once per
    optimizer step), or all-gathers of the weights for every layer pass and a reduce-scatter of the gradients
    (FSDP, ZeRO-3)."""
    if job.gpus <= 1:
        return 0.0
    share = (job.gpus - 1) / job.gpus
    parts = param_breakdown(job.spec)
    trainable = parts["total"] if job.method == "full" else job.lora_params
    grad_bytes = trainable * (4 if job.method != "full" or job.precision == "mixed" else 2)
    if job.sharding in ("fsdp", "zero3"):
        weight_bytes = (parts["layer_linear"] * 0.53 + (parts["total"] - parts["layer_linear"]) * 2
                        if job.method == "qlora" else parts["total"] * 2)
        return share * (weight_bytes * _layer_passes(job.grad_ckpt) + grad_bytes)
    return 2 * share * grad_bytes / job.grad_accum


KERNEL_TERMS = ("matmul", "attention", "eager_scores", "elementwise", "loss", "dequant")
GPU_TERMS = (*KERNEL_TERMS, "eager_adapters")


def step_terms(job: Job, card: Card, constants: dict | None = None) -> dict[str, float]:
    """Seconds of each term in one micro-step on one card."""
    c = constants or load_constants()
    spec = job.spec
    peak = card.bf16_tflops * 1e12 * matmul_efficiency(card.gpu_class, c)
    bandwidth = (card.bandwidth_gbs or 1000.0) * 1e9
    kernel = attention_kernel(job.attn)
    passes = _layer_passes(job.grad_ckpt)
    fused = c["fused_share"] if job.fused_kernels else 1.0
    parts = param_breakdown(spec)
    terms = {
        "matmul": job.tokens * matmul_flops_per_token(spec, job.method, job.grad_ckpt, job.lora_params,
                                                      job.recompute_share) / peak,
        "attention": job.tokens * attention_flops_per_token(spec, job.seq_len,
                                                            job.grad_ckpt and job.recompute_share == 1, kernel)
        / (peak * ATTENTION_KERNELS[kernel]["relative_efficiency"]
           * (flash_efficiency(card.gpu_class, c) if ATTENTION_KERNELS[kernel]["flash"] else 1.0)),
        "eager_scores": (eager_attention_bytes(spec, job.seq_len, job.micro_batch, job.grad_ckpt)
                         / (bandwidth * c["eager_bandwidth_fraction"]) if kernel == "eager" else 0.0),
        "elementwise": job.tokens * spec.num_hidden_layers * (spec.hidden_size + spec.expert_intermediate) * 2
        * c["elementwise_passes"] * (passes + 1) * fused / bandwidth,
        "loss": job.tokens * spec.vocab_size * LOSS_BYTES_PER_LOGIT.get(job.cross_entropy, 26) / bandwidth,
        "dequant": (passes * parts["layer_linear"] * c["dequant_bytes_per_weight"] / bandwidth
                    if job.method == "qlora" else 0.0),
        "launch": spec.num_hidden_layers * (passes + 1) * c["launch_seconds_per_kernel"] * fused
        * (KERNELS_PER_LAYER + KERNELS_PER_ADAPTER * job.lora_modules_per_layer),
        "optimizer": _optimizer_bytes(job) / bandwidth / job.grad_accum,
        "communication": (communication_bytes(job) / (card.interconnect_gbs * 1e9 * LINK_EFFICIENCY)
                          if job.gpus > 1 and card.interconnect_gbs else 0.0),
        # every weight pass streams the 16-bit weights: the floor a tiny micro-batch cannot go below
        "weight_stream": passes * parts["total"] * (0.55 if job.method == "qlora" else 2) / bandwidth,
    }
    # PEFT's adapters add their own small kernels, casts and adds beside every adapted GEMM in each pass: a
    # share of the GPU work they sit in, fitted on the stacks that run them eagerly
    terms["eager_adapters"] = ((c["eager_adapter_overhead"] - 1) * sum(terms[k] for k in KERNEL_TERMS)
                               if runs_adapters_eagerly(job.method, job.fused_kernels) else 0.0)
    return terms


def step_seconds(terms: dict[str, float]) -> float:
    """The GPU's work, bounded below by streaming the weights and by communication (each runs beside the
    compute), plus the host's launches and the optimizer step."""
    gpu = sum(terms[k] for k in GPU_TERMS)
    return max(gpu, terms["weight_stream"], terms["communication"]) + terms["launch"] + terms["optimizer"]


def tokens_per_second(job: Job, card: Card, constants: dict | None = None) -> float:
    """Token positions per second on one card."""
    return job.tokens / step_seconds(step_terms(job, card, constants))


def time_range(constants: dict | None = None) -> dict:
    """The factors a planned time is multiplied by for its likely low and high end: the 10th and 90th percentile
    of planned/measured tokens/s on published figures each predicted without its source (a plan whose rate is
    1.3x the measured one takes 1.3x the planned hours)."""
    spread = (constants or load_constants())["held_out_ratio"]
    return {"low": spread["p10"], "high": spread["p90"], "basis": spread["basis"]}


# ---------------------------------------------------------------- calibration on published figures

def load_figures(path=None) -> list[dict]:
    return json.loads((path or CALIBRATION_FILE).read_text())["figures"]


def figure_spec(config: dict) -> ModelSpec:
    return load_model_spec(config["model"]) if "model" in config else ModelSpec(**config["shape"])


def figure_job(figure: dict) -> tuple[Job, FigureCard]:
    """The Job and card a published figure was measured on."""
    cfg = figure["config"]
    spec = figure_spec(cfg)
    lora = modules = 0
    if cfg["method"] in ("lora", "qlora"):
        targets = cfg.get("lora_targets", "all-linear")
        lora = lora_param_count(spec, cfg.get("lora_rank", 16), targets)
        modules = len(parse_lora_targets(targets, spec))
    job = Job(spec=spec, method=cfg["method"], seq_len=cfg["seq_len"], micro_batch=cfg["micro_batch"],
              grad_ckpt=cfg.get("grad_ckpt", True), recompute_share=cfg.get("recompute_share", 1.0),
              lora_params=lora, lora_modules_per_layer=modules,
              attn=cfg.get("attn", "sdpa"), cross_entropy=cfg.get("cross_entropy", "standard"),
              fused_kernels=cfg.get("fused_kernels", False), optimizer=cfg.get("optimizer", "adamw"),
              precision=cfg.get("precision", "mixed"), gpus=cfg.get("gpus", 1),
              sharding=cfg.get("sharding", "none" if cfg.get("gpus", 1) == 1 else "ddp"),
              grad_accum=cfg.get("grad_accum", 1))
    return job, FigureCard(**figure["card"])


def planned_over_measured(figure: dict, constants: dict, job_card: tuple | None = None) -> float:
    job, card = job_card or figure_job(figure)
    return tokens_per_second(job, card, constants) / figure["tokens_per_second_per_gpu"]
