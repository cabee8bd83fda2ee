"""VRAM of one training step, per GPU, with a per-component breakdown.

Two figures come out, and they are different things:
- peak_allocated: what torch.cuda.max_memory_allocated() would report (live tensors at the worst moment);
- peak_reserved:  what torch.cuda.max_memory_reserved() would report (the caching allocator's pool), and
  nvidia_smi = reserved + the CUDA context, which is what must fit on the card.

The peak is not the sum of the components: gradients build up while saved activations are freed during the
backward pass, and the optimizer's state-sized temporaries exist only in step(). The estimate walks the phases
of a step and takes the largest. Activations follow Korthikanti et al. 2022 (arXiv 2205.05198), adapted to
Llama-style layers (RMSNorm, GQA, SwiGLU, no dropout) as the Hugging Face implementation saves them. The few
framework constants are fitted on published measurements (bench/calibrate_memory.py).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from pipeline.models import ModelSpec, load_model_spec, param_breakdown

GIB = 2**30
CONSTANTS_FILE = Path(__file__).parent / "data" / "memory_constants.json"

METHODS = ("full", "lora", "qlora")
ATTENTION = ("sdpa", "eager")
OPTIMIZERS = ("adamw", "adamw8bit", "paged_adamw8bit", "sgd", "adafactor")
SHARDING = ("none", "ddp", "zero2", "zero3", "fsdp")
from pipeline.setup import CROSS_ENTROPY, FRAMEWORKS, framework_preset  # noqa: E402
PRECISIONS = ("mixed", "bf16")

# LoRA target names as the families spell them -> the Llama names of ModelSpec.linear_modules().
TARGET_ALIASES = {
    "q": ["q_proj"], "k": ["k_proj"], "v": ["v_proj"], "o": ["o_proj"], "output_proj": ["o_proj"],
    "dense": ["o_proj"], "out_proj": ["o_proj"],
    "gate": ["gate_proj"], "up": ["up_proj"], "down": ["down_proj"], "w1": ["gate_proj"], "w3": ["up_proj"],
    "w2": ["down_proj"], "fc1": ["up_proj"], "fc2": ["down_proj"], "c_fc": ["up_proj"], "c_proj": ["down_proj"],
    "qkv_proj": ["q_proj", "k_proj", "v_proj"], "query_key_value": ["q_proj", "k_proj", "v_proj"],
    "gate_up_proj": ["gate_proj", "up_proj"],
    "attn": ["q_proj", "k_proj", "v_proj", "o_proj"], "attention": ["q_proj", "k_proj", "v_proj", "o_proj"],
    "mlp": ["gate_proj", "up_proj", "down_proj"], "output": ["lm_head"],
}


@lru_cache(maxsize=4)
def _read_constants(path: str) -> dict:
    return json.loads(Path(path).read_text())


def load_constants(path: str | Path | None = None) -> dict:
    return _read_constants(str(path or CONSTANTS_FILE))


def parse_lora_targets(targets: str | list[str] | tuple[str, ...], spec: ModelSpec) -> list[str]:
    """'all-linear' (PEFT: every linear of the decoder layers, not lm_head), or names such as 'q,v' or
    'q_proj,k_proj,...'; family spellings (w1/w2/w3, qkv_proj, gate_up_proj) map to the Llama names."""
    layer_names = [name for name, *_ in spec.linear_modules() if name != "router"]
    items = targets.split(",") if isinstance(targets, str) else list(targets)
    items = [t.strip() for t in items if t.strip()]
    if not items:
        raise ValueError("no LoRA target modules given")
    chosen: list[str] = []
    for item in items:
        key = item.lower()
        if key in ("all-linear", "all_linear", "all"):
            names = layer_names
        elif key in ("lm_head", "output"):
            names = ["lm_head"]
        else:
            names = TARGET_ALIASES.get(key) or [key if key.endswith("_proj") or key in layer_names else f"{key}_proj"]
            names = [n for n in names if n in layer_names or n == "lm_head"]
            if not names:
                raise ValueError(f"LoRA target {item!r} matches no linear layer of {spec.name} "
                                 f"(have: {', '.join(layer_names)}, lm_head)")
        chosen += [n for n in names if n not in chosen]
    return chosen


def lora_modules(spec: ModelSpec, targets) -> list[tuple[str, int, int, int]]:
    """(name, in, out, copies per layer) of the targeted linears; lm_head is a single module outside the layers."""
    names = parse_lora_targets(targets, spec)
    mods = [m for m in spec.linear_modules() if m[0] in names]
    if "lm_head" in names:
        mods.append(("lm_head", spec.hidden_size, spec.vocab_size, 0))
    return mods


def lora_param_count(spec: ModelSpec, rank: int, targets="all-linear") -> int:
    """LoRA adds A (r x in) and B (out x r) per targeted linear (per expert for MoE experts)."""
    total = 0
    for name, fi, fo, copies in lora_modules(spec, targets):
        per_module = rank * (fi + fo)
        total += per_module if name == "lm_head" else per_module * copies * spec.num_hidden_layers
    return total


# The linear layers of a decoder layer grouped by the tensor they read: a group's input is saved for backward
# only when one of its weights is trained (autograd keeps a matmul input only to compute that weight's gradient).
INPUT_GROUPS = {"attn_in": ("q_proj", "k_proj", "v_proj"), "o_in": ("o_proj",),
                "mlp_in": ("gate_proj", "up_proj", "shared_gate_proj", "shared_up_proj"),
                "down_in": ("down_proj", "shared_down_proj")}


def layer_activation_bytes_per_token(spec: ModelSpec, *, full: bool, compile: bool = False,
                                     lora_targets: list[str] = (), lora_rank: int = 0,
                                     adapter_copies_input: bool = False, lora_dropout: bool = False) -> float:
    """Bytes one decoder layer keeps for backward per token, 16-bit activations, no dropout in the base model,
    excluding the attention-score (s^2) term. Korthikanti's 34*h per GPT layer becomes, for a Llama-style layer:
      norms:      the HF RMSNorm keeps an fp32 copy of its input (4h), and its bf16 output (2h) only when the
                  norm weight is trained; a compiled (fused) norm keeps its bf16 input (2h)
      attention:  rotated q (2q) and k (2kv), v (2kv), the output (2q), fp32 log-sum-exp per head (4a); GQA: kv < q
      SwiGLU:     gate (kept by SiLU), silu(gate) and up (kept by the product): 3 x 2i (torch.compile does not
                  shrink this measurably in the torchtune ablation; it does fuse the norms)
      matmul inputs, only where the weight is trained: q/k/v input (2h), o_proj input (2q, a contiguous copy),
                  gate/up input (2h), down_proj input (2i)
      LoRA:       PEFT with fp32 adapters casts each targeted module's input (a bf16 copy under autocast, 2*in,
                  + a 1-byte mask with dropout); bf16 adapters read the shared input (dropout: a 2*in copy and
                  mask per module); plus the rank-wide intermediate (2r)
    MoE: the expert part counts once per routed expert (num_experts_per_tok), + fp32 router logits.
    """
    h, q, kv, a = spec.hidden_size, spec.q_dim, spec.kv_dim, spec.num_attention_heads
    width = spec.expert_intermediate
    routes = max(spec.num_experts_per_tok, 1) if spec.is_moe else 1
    group_in = {"attn_in": 2 * h, "o_in": 2 * q, "mlp_in": 2 * h * routes, "down_in": 2 * width * routes}
    if spec.shared_expert_intermediate_size:
        group_in["mlp_in"] += 2 * h
        group_in["down_in"] += 2 * spec.shared_expert_intermediate_size

    norm = 2 * h if compile else (6 * h if full else 4 * h)
    total = spec.norms_per_layer * norm + (norm / h) * (q + kv) * spec.qk_norm
    total += 4 * q + 4 * kv + 4 * a
    glu_width = width * routes + spec.shared_expert_intermediate_size
    if spec.mlp_gated:
        total += 6 * glu_width
    else:  # fc1 output kept by the activation function
        total += 2 * glu_width
    if spec.is_moe:
        total += 4 * spec.num_experts
    if full:
        return float(total + sum(group_in.values()))

    module_in = {name: fi for name, fi, _, _ in spec.linear_modules()}
    for group, members in INPUT_GROUPS.items():
        targeted = [m for m in members if m in lora_targets]
        if not targeted:
            continue
        per_route = routes if group in ("mlp_in", "down_in") and spec.is_moe else 1
        if adapter_copies_input:
            total += sum(module_in[m] * per_route * (2 + lora_dropout) for m in targeted)
        elif lora_dropout:
            total += sum(module_in[m] * per_route * 3 for m in targeted)
        else:
            total += group_in[group]
        total += 2 * lora_rank * per_route * len(targeted)
    return float(total)


@dataclass
class MemoryEstimate:
    model: str
    method: str
    settings: dict
    components: dict[str, float]          # bytes per GPU; sizes of each part, not additive (see peak_phase)
    params: dict[str, int]
    peak_allocated: float                 # bytes, as torch.cuda.max_memory_allocated()
    peak_reserved: float                  # bytes, as torch.cuda.max_memory_reserved()
    nvidia_smi: float                     # bytes, reserved + CUDA context: what must fit on the card
    peak_phase: str
    phases: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def peak_allocated_gib(self) -> float:
        return self.peak_allocated / GIB

    @property
    def peak_reserved_gib(self) -> float:
        return self.peak_reserved / GIB

    @property
    def nvidia_smi_gib(self) -> float:
        return self.nvidia_smi / GIB

    def to_dict(self) -> dict:
        return {
            "model": self.model,
            "method": self.method,
            "peak_allocated_gib": round(self.peak_allocated_gib, 3),
            "peak_reserved_gib": round(self.peak_reserved_gib, 3),
            "nvidia_smi_gib": round(self.nvidia_smi_gib, 3),
            "peak_phase": self.peak_phase,
            "components": {k: round(v / GIB, 3) for k, v in self.components.items()},
            "params": dict(self.params),
            "settings": dict(self.settings),
            "notes": list(self.notes),
        }


def resolve_constants(table: dict, framework: str, overrides: dict | None = None) -> dict:
    """Fixed and fitted constants for one framework: a fitted key 'torchtune.x' overrides 'x' for torchtune."""
    merged = {**table["fitted"], **(overrides or {})}
    c = {**table["fixed"], **{k: v for k, v in merged.items() if "." not in k}}
    prefix = framework + "."
    c.update({k[len(prefix):]: v for k, v in merged.items() if k.startswith(prefix)})
    return c


def _choice(value, allowed, what):
    if value not in allowed:
        raise ValueError(f"unknown {what} {value!r}; choose one of {', '.join(allowed)}")
    return value


def _nf4_bytes_per_param(c: dict, double_quant: bool) -> float:
    if double_quant:  # 8-bit absmax per block, fp32 absmax of those per dq_block2 blocks
        absmax_bits = (c["dq_absmax_bits"] / c["quant_block"]
                       + c["dq_absmax2_bits"] / (c["quant_block"] * c["dq_block2"]))
    else:
        absmax_bits = c["absmax_bits"] / c["quant_block"]
    return (c["nf4_bits"] + absmax_bits) / 8


def estimate_memory(spec: ModelSpec | str, method: str = "lora", seq_len: int = 2048, micro_batch: int = 1,
                    grad_ckpt: bool = True, attn: str = "sdpa", optimizer: str = "adamw", lora_rank: int = 16,
                    lora_targets="all-linear", gpus: int = 1, sharding: str | None = None, *,
                    double_quant: bool = True, quantization: str | None = None, precision: str | None = None,
                    cross_entropy: str | None = None, framework: str = "hf", adapter_dtype: str | None = None,
                    lora_dropout: float | None = None, compile: bool = False, optimizer_in_backward: bool = False,
                    activation_offload: bool = False, upcast_unquantized: bool = False,
                    constants: dict | None = None, constants_path: str | Path | None = None) -> MemoryEstimate:
    """Per-GPU memory of one training step (forward, backward, optimizer step) at seq_len x micro_batch tokens.

    method: full | lora | qlora (LoRA on an NF4 base). quantization: None | 'int8' | 'nf4' for the frozen base
    of LoRA ('nf4' implied by qlora). precision (full only): 'mixed' keeps fp32 master weights and fp32 Adam
    moments (16 bytes/param), 'bf16' is pure bf16 with bf16 moments (8 bytes/param). sharding with gpus > 1:
    ddp (replicated), zero2 (gradients + optimizer sharded), zero3/fsdp (weights too). cross_entropy: standard
    (full fp32 logits), chunked (torchtune), fused (Liger/Cut-CE). framework selects the default behaviours
    ('hf' or 'torchtune'); `constants` overrides fitted constants (used by the calibration fit).
    """
    table = load_constants(constants_path)
    preset = framework_preset(framework)
    fw = {"adapter_bytes": 4 if preset.adapter_dtype == "fp32" else 2, "full_precision": preset.full_precision,
          "cross_entropy": preset.cross_entropy, "lora_dropout": preset.lora_dropout,
          "fused_optimizer": preset.fused_optimizer}
    c = resolve_constants(table, framework, constants)
    spec = load_model_spec(spec)
    _choice(method, METHODS, "method")
    attn = {"flash": "sdpa", "flash_attention_2": "sdpa", "fa2": "sdpa"}.get(attn, attn)
    _choice(attn, ATTENTION, "attention")
    _choice(optimizer, OPTIMIZERS, "optimizer")
    cross_entropy = cross_entropy or fw["cross_entropy"]
    _choice(cross_entropy, CROSS_ENTROPY, "cross-entropy")
    if seq_len < 1 or micro_batch < 1 or gpus < 1:
        raise ValueError("seq_len, micro_batch and gpus must be >= 1")
    sharding = (sharding or ("ddp" if gpus > 1 else "none")).lower()
    _choice(sharding, SHARDING, "sharding")
    if gpus == 1:
        sharding = "none"
    quant = "nf4" if method == "qlora" else quantization
    if quant not in (None, "int8", "nf4"):
        raise ValueError(f"unknown quantization {quant!r}; choose int8 or nf4")
    if method == "full" and quant:
        raise ValueError("full fine-tuning trains the weights themselves: they cannot be quantized")
    precision = precision or fw["full_precision"]
    _choice(precision, PRECISIONS, "precision")
    if method != "full" and lora_rank < 1:
        raise ValueError("lora_rank must be >= 1")
    if adapter_dtype not in (None, "fp32", "bf16"):
        raise ValueError(f"unknown adapter dtype {adapter_dtype!r}; choose fp32 or bf16")

    pb = param_breakdown(spec)
    h, L, V = spec.hidden_size, spec.num_hidden_layers, spec.vocab_size
    T = seq_len * micro_batch
    notes: list[str] = []
    if seq_len > spec.max_position_embeddings:
        notes.append(f"seq_len {seq_len} exceeds the model's max_position_embeddings "
                     f"{spec.max_position_embeddings}")

    # ---- weights (frozen or trained), by precision
    unquantized_bytes = 4 if upcast_unquantized else 2
    if quant == "nf4":
        weight_bytes_linear = _nf4_bytes_per_param(c, double_quant)
    elif quant == "int8":
        weight_bytes_linear = c["int8_bits"] / 8
    else:
        weight_bytes_linear = 2
    other_bytes = unquantized_bytes if quant else 2
    weights = pb["layer_linear"] * weight_bytes_linear + (pb["total"] - pb["layer_linear"]) * other_bytes
    if quant == "int8":  # one fp32 scale per output row
        weights += 4 * L * sum(fo * n for _, _, fo, n in spec.linear_modules())
    layer_weight_bytes = (pb["layer_linear"] * weight_bytes_linear + pb["layer_other"] * other_bytes) / L
    root_weight_bytes = (pb["embedding"] + pb["lm_head"]) * other_bytes

    # ---- trainable parameters, gradients, optimizer
    if method == "full":
        lora, lora_mods = 0, []
        trainable = pb["total"]
        param_bytes = 2
        master_bytes = 4 if precision == "mixed" else 0
        grad_bytes = 2
        largest_tensor = max(V * h, max(fi * fo for _, fi, fo, _ in spec.linear_modules()))
    else:
        lora_mods = lora_modules(spec, lora_targets)
        lora = lora_param_count(spec, lora_rank, lora_targets)
        trainable = lora
        param_bytes = {"fp32": 4, "bf16": 2, None: fw["adapter_bytes"]}[adapter_dtype]
        master_bytes = 0
        grad_bytes = param_bytes
        largest_tensor = max(lora_rank * max(fi, fo) for _, fi, fo, _ in lora_mods)
    state_bytes = 4 if master_bytes else param_bytes
    opt = table["optimizers"][optimizer]
    if opt.get("factored"):  # Adafactor: a row and a column second-moment vector per matrix, no first moment
        if method == "full":
            vectors = L * sum((fi + fo) * n for _, fi, fo, n in spec.linear_modules()) + (V + h) * (
                1 if spec.tie_word_embeddings else 2) + pb["layer_other"]
        else:
            vectors = sum((fi + 2 * lora_rank + fo) * (n * L or 1) for _, fi, fo, n in lora_mods)
        optimizer_states = 4 * vectors
    elif "bytes_per_param" in opt:
        optimizer_states = opt["bytes_per_param"] * trainable
    else:
        optimizer_states = opt["states"] * state_bytes * trainable
    step_workspace = 0 if fw["fused_optimizer"] else opt.get("step_workspace", 0) * state_bytes * trainable
    paged = bool(opt.get("paged"))

    # ---- sharding across data-parallel GPUs (per-GPU figures)
    shard_state = gpus if sharding in ("zero2", "zero3", "fsdp") else 1
    shard_weight = gpus if sharding in ("zero3", "fsdp") else 1
    trainable_layer_share = (trainable - (pb["embedding"] + pb["lm_head"] if method == "full" else 0)) / L
    weights_gpu = weights / shard_weight
    if shard_weight > 1:  # the layer being computed and the prefetched one are gathered; the root unit too
        weights_gpu += c["fsdp_gathered_layers"] * layer_weight_bytes + root_weight_bytes * (1 - 1 / gpus)
    adapters_gpu = lora * param_bytes / shard_weight
    grads_gpu = trainable * grad_bytes / shard_state
    if shard_state > 1:  # unsharded gradients of the layer being reduced
        grads_gpu += c["fsdp_gathered_layers"] * trainable_layer_share * grad_bytes
    if sharding == "ddp":  # DDP's reduction buckets hold a second copy of the gradients
        grads_gpu += trainable * grad_bytes
    master_gpu = trainable * master_bytes / shard_state
    states_gpu = optimizer_states / shard_state
    step_workspace /= shard_state
    if sharding in ("zero2", "zero3"):  # DeepSpeed steps with its fused Adam: no state-sized temporaries
        step_workspace = 0.0
    if optimizer_in_backward:  # each parameter is stepped and its gradient freed as soon as it is ready
        grads_gpu = largest_tensor * grad_bytes
        step_workspace = 0.0

    # ---- activations
    target_names = [] if method == "full" else [name for name, *_ in lora_mods]
    dropout = (fw["lora_dropout"] if lora_dropout is None else lora_dropout) if method != "full" else 0.0
    per_token_layer = c["activation_scale"] * layer_activation_bytes_per_token(
        spec, full=method == "full", compile=compile, lora_targets=target_names, lora_rank=lora_rank,
        adapter_copies_input=param_bytes == 4, lora_dropout=dropout > 0)
    scores_layer = micro_batch * spec.num_attention_heads * seq_len**2 * c["eager_bytes_per_score"] \
        if attn == "eager" else 0.0
    # final norm (as in a layer) and, when lm_head is trained, its input
    final_norm = (2 if compile else (6 if method == "full" else 4)) * h
    head_saved = T * (final_norm + (2 * h if method == "full" or "lm_head" in target_names else 0))
    mlp_width = spec.expert_intermediate * max(spec.num_experts_per_tok, 1) if spec.is_moe else spec.intermediate_size
    backward_workspace = T * 2 * (3 * mlp_width + 2 * h)  # gradients of the MLP intermediates of one layer
    one_layer = T * per_token_layer + scores_layer
    if grad_ckpt:
        kept_layers = 2 if activation_offload else L  # offloaded checkpoints: only those in flight stay
        saved = kept_layers * T * 2 * h + head_saved   # each layer keeps only its input
        top_layer_extra = one_layer                    # the top layer is recomputed before its backward
    else:
        saved = L * one_layer + head_saved
        top_layer_extra = 0.0
    dequant_workspace = 2 * max(fi * fo for _, fi, fo, _ in spec.linear_modules()) if quant else 0.0

    # ---- logits and cross-entropy: bf16 logits, their fp32 upcast, saved log-probs, their gradient
    ce_bytes = c["ce_bytes_per_logit"] + (c["softcap_extra_bytes"] if spec.final_logit_softcapping else 0)
    if cross_entropy == "standard":
        logits = T * V * ce_bytes
    elif cross_entropy == "bf16":  # bf16 logits, their saved log-softmax and its gradient
        logits = T * V * 6
    elif cross_entropy == "chunked":
        # every chunk's log-probs stay saved (fp32); a compiled loss keeps only the bf16 logits and the row lse
        saved_per_logit = c["chunked_ce_saved_bytes_compiled" if compile else "chunked_ce_saved_bytes"]
        logits = T * V * (saved_per_logit + ce_bytes / c["ce_chunks"])
    else:
        logits = min(T, c["fused_ce_chunk_tokens"]) * V * ce_bytes
    head_grad = (V * h * grad_bytes / shard_state) if method == "full" else 0.0

    # ---- phases of the step; the peak is the largest
    overhead = c["framework_overhead_gib"] * GIB
    static = weights_gpu + adapters_gpu + master_gpu + (0.0 if paged else states_gpu) + overhead
    phases = {
        "loss (end of forward)": static + saved + logits + head_grad,
        "backward, top layer": static + saved + top_layer_extra + backward_workspace + head_grad
        + dequant_workspace,
        "backward, bottom layer": static + grads_gpu + one_layer + backward_workspace + dequant_workspace,
        "optimizer step": static + grads_gpu + step_workspace,
    }
    peak_phase = max(phases, key=phases.get)
    peak_allocated = phases[peak_phase]
    peak_reserved = peak_allocated * (1 + c["reserved_fraction"]) + c["reserved_slack_gib"] * GIB
    context = c["cuda_context_gib"] * GIB

    components = {
        "weights": weights_gpu,
        "lora_adapters": adapters_gpu,
        "gradients": grads_gpu,
        "optimizer_states": states_gpu,
        "master_weights": master_gpu,
        "activations": saved + top_layer_extra + backward_workspace + dequant_workspace,
        "logits_cross_entropy": logits,
        "optimizer_step_workspace": step_workspace,
        "framework_overhead": overhead,
        "allocator_overhead": peak_reserved - peak_allocated,
        "cuda_context": context,
    }
    notes.append(f"peak at {peak_phase}; components are sizes, not additive (gradients replace freed activations)")
    if paged:
        notes.append("paged 8-bit optimizer states live in CUDA managed memory: not in torch's counters and "
                     "evicted to CPU under pressure, so they are left out of the peaks")
    if method == "full" and any(k is not None for k in (adapter_dtype, lora_dropout)):
        notes.append("LoRA settings ignored for full fine-tuning")
    if spec.final_logit_softcapping and attn == "sdpa":
        notes.append(f"{spec.name} uses logit soft-capping; Hugging Face recommends eager attention for training it")
    if sharding in ("zero2", "ddp") and method != "full" and gpus > 1:
        notes.append(f"{sharding} replicates the frozen base weights on every GPU; zero3/fsdp shards them")

    params = {"total": pb["total"], "trainable": int(trainable), "lora": int(lora),
              "frozen": int(pb["total"] if method != "full" else 0), "active": pb["active"],
              "matmul_active": pb["matmul_active"]}
    settings = {"seq_len": seq_len, "micro_batch": micro_batch, "tokens_per_micro_batch": T,
                "grad_ckpt": grad_ckpt, "attn": attn, "optimizer": optimizer, "gpus": gpus, "sharding": sharding,
                "quantization": quant, "double_quant": double_quant if quant == "nf4" else None,
                "precision": precision if method == "full" else None, "cross_entropy": cross_entropy,
                "framework": framework, "compile": compile, "optimizer_in_backward": optimizer_in_backward,
                "activation_offload": activation_offload}
    if method != "full":
        settings.update(lora_rank=lora_rank, lora_targets=parse_lora_targets(lora_targets, spec),
                        adapter_dtype="fp32" if param_bytes == 4 else "bf16", lora_dropout=dropout)
    return MemoryEstimate(model=spec.name, method=method, settings=settings, components=components, params=params,
                          peak_allocated=peak_allocated, peak_reserved=peak_reserved,
                          nvidia_smi=peak_reserved + context, peak_phase=peak_phase, phases=phases, notes=notes)


# ---------------------------------------------------------------- calibration against published measurements

CALIBRATION_FILE = Path(__file__).parent / "data" / "vram_calibration.json"
UNIT_BYTES = {"GB": 1e9, "GiB": GIB, "MB": 1e6, "MiB": 2**20}
# Which estimate a published metric is compared with. 'active' ~ allocated. An unstated metric is one of
# allocated or reserved: it is compared with their midpoint, which bounds the error either way.
METRIC_FIGURE = {"alloc": "peak_allocated", "active": "peak_allocated", "reserved": "peak_reserved",
                 "smi": "nvidia_smi"}


def load_calibration_points(path: str | Path | None = None) -> list[dict]:
    return json.loads(Path(path or CALIBRATION_FILE).read_text())["points"]


def predict_calibration_point(point: dict, constants: dict | None = None) -> float | None:
    """Estimated bytes for a calibration point, in the point's metric; None when its config is incomplete."""
    cfg = dict(point["config"])
    if "seq_len" not in cfg:
        return None
    estimate = estimate_memory(cfg.pop("model"), constants=constants, **cfg)
    if point["metric"] == "unknown":
        return (estimate.peak_allocated + estimate.peak_reserved) / 2
    return getattr(estimate, METRIC_FIGURE[point["metric"]])


def calibration_table(constants: dict | None = None, path: str | Path | None = None) -> list[dict]:
    """One row per published point: measured and estimated GiB, relative error, whether it is in the fit."""
    rows = []
    for point in load_calibration_points(path):
        measured = point["value"] * UNIT_BYTES[point["unit"]]
        predicted = predict_calibration_point(point, constants)
        rows.append({"id": point["id"], "metric": point["metric"], "use": point["use"],
                     "measured_gib": measured / GIB,
                     "estimated_gib": None if predicted is None else predicted / GIB,
                     "error": None if predicted is None else predicted / measured - 1,
                     "reason": point.get("reason", "")})
    return rows


def calibration_summary(rows: list[dict]) -> dict:
    errors = sorted(abs(r["error"]) for r in rows if r["use"] and r["error"] is not None)
    n = len(errors)
    median = (errors[n // 2] if n % 2 else (errors[n // 2 - 1] + errors[n // 2]) / 2) if n else float("nan")
    return {"points": n, "median_abs_error": median, "max_abs_error": errors[-1] if n else float("nan")}


def format_calibration_table(rows: list[dict]) -> str:
    lines = [f"{'point':36s} {'metric':8s} {'measured':>9s} {'estimate':>9s} {'error':>7s}"]
    for r in rows:
        est = "-" if r["estimated_gib"] is None else f"{r['estimated_gib']:9.2f}"
        err = "-" if r["error"] is None else f"{r['error']:+7.1%}"
        tail = "" if r["use"] else f"  (not fitted: {r['reason']})"
        lines.append(f"{r['id']:36s} {r['metric']:8s} {r['measured_gib']:9.2f} {est:>9s} {err:>7s}{tail}")
    s = calibration_summary(rows)
    lines.append(f"fitted points: {s['points']}, median |error| {s['median_abs_error']:.1%}, "
                 f"max |error| {s['max_abs_error']:.1%}  (GiB)")
    return "\n".join(lines)
