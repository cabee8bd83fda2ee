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
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from pipeline.core.models import ModelSpec, param_breakdown
from pipeline.core.resources import resource
from pipeline.plan.setup import (  # noqa: F401
    ATTENTION,
    CROSS_ENTROPY,
    FRAMEWORKS,
    METHODS,
    OPTIMIZERS,
    PRECISIONS,
    SHARDING,
    TrainingSetup,
    framework_preset,
    parse_lora_targets,
)

GIB = 2**30
CONSTANTS_FILE = resource("memory_constants.json")

@lru_cache(maxsize=4)
def _read_constants(path: str) -> dict:
    return json.loads(Path(path).read_text())


def load_constants(path: str | Path | None = None) -> dict:
    return _read_constants(str(path or CONSTANTS_FILE))


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
    terms: dict[str, float] = field(default_factory=dict)  # the named terms the phases are sums of, bytes

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
            "terms_gib": {k: round(v / GIB, 3) for k, v in self.terms.items()},
            "phases_gib": {k: round(v / GIB, 3) for k, v in self.phases.items()},
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


def nf4_bytes_per_param(c: dict, double_quant: bool) -> float:
    if double_quant:  # 8-bit absmax per block, fp32 absmax of those per dq_block2 blocks
        absmax_bits = (c["dq_absmax_bits"] / c["quant_block"]
                       + c["dq_absmax2_bits"] / (c["quant_block"] * c["dq_block2"]))
    else:
        absmax_bits = c["absmax_bits"] / c["quant_block"]
    return (c["nf4_bits"] + absmax_bits) / 8


def estimate_memory(setup: TrainingSetup, *, constants: dict | None = None,
                    constants_path: str | Path | None = None) -> MemoryEstimate:
    """Per-GPU memory of one training step (forward, backward, optimizer step) of one validated TrainingSetup
    (TrainingSetup.build: the model spec and every setting resolved): the sum of named terms per phase, see
    _estimate. `constants` overrides the fitted allocator/context constants (the calibration fit)."""
    if not isinstance(setup, TrainingSetup):
        raise TypeError("estimate_memory takes a TrainingSetup: build one with TrainingSetup.build(model, method, ...)")
    c = resolve_constants(load_constants(constants_path), setup.framework, constants)
    return _estimate(setup, c)


@dataclass
class _Dtypes:
    """Bytes per element of the tensors whose dtype depends on the stack (derived from the traced code)."""
    stream: int      # residual stream and checkpointed layer inputs: fp32 when the embedding is fp32
    norm_out: int    # RMSNorm output: weight * x, fp32 when the norm weight or its input is fp32
    linear_out: int  # frozen 4-bit linear outputs: bitsandbytes casts back to the input dtype
    head: int        # lm_head weight
    embed: int       # input embedding weight


def _dtypes(s: TrainingSetup) -> _Dtypes:
    # FSDP / ZeRO-3 gather bf16 copies of the sharded fp32 weights (param_dtype bf16): the compute is bf16
    mixed = s.method == "full" and s.precision == "mixed" and s.sharding not in ("zero3", "fsdp")
    fp32_stream = mixed or s.kbit_upcast in ("all", "norms")
    stream = 4 if fp32_stream else 2
    head = 4 if mixed or s.kbit_upcast == "all" else 2
    return _Dtypes(stream=stream, norm_out=stream, linear_out=4 if s.quantization and fp32_stream else 2,
                   head=head, embed=head)


def _norm_kind(spec: ModelSpec) -> str:
    if spec.model_type.startswith("gemma"):
        return "gemma"      # x.float() normalized, * (1 + weight) in fp32, cast back
    if spec.model_type.startswith("olmo2") or spec.model_type.startswith("olmo3"):
        return "olmo"       # (weight * x_fp32).to(dtype)
    return "llama"          # weight * x_fp32.to(dtype)


def _norms_in_layer(spec: ModelSpec) -> int:
    """Norms on the residual path of one layer: pre-attention and pre-MLP (llama), plus post-norms (gemma2/3);
    olmo2 normalizes only the outputs of attention and MLP (two post-norms)."""
    return 4 if spec.model_type in ("gemma2", "gemma3", "gemma3_text") else 2


FUSED_QKV = {"phi3"}        # one qkv_proj: its input is cast once
FUSED_GATE_UP = {"phi3"}    # one gate_up_proj


def layer_saved_bytes(spec: ModelSpec, s: TrainingSetup, d: _Dtypes) -> tuple[float, float]:
    """What one decoder layer keeps for backward: (bytes per token, bytes per layer independent of tokens),
    excluding eager attention's S^2 scores. Read from the operators of the traced HF code path:
      norms        each RMSNorm keeps its fp32 input (4h: a copy, or the fp32 stream itself) and rsqrt (4);
                   a trained norm weight also keeps the normalized input (llama: in the norm output dtype,
                   gemma/olmo: fp32)
      QK-norm      the same per head on q and k (qwen3, gemma3) or on the whole q / k (olmo2)
      attention    SDPA/FlashAttention keeps q, k, v (rotated, in the compute dtype; GQA k/v unexpanded), its
                   output and an fp32 log-sum-exp per head
      MLP          gate and up outputs and the activation output (SwiGLU/GeGLU), per routed expert for MoE
      trained W    a linear keeps its input: under autocast with fp32 inputs each linear its own bf16 copy,
                   else one shared tensor
      LoRA         fp32 adapters under autocast: each targeted module a bf16 copy of its input (+ a 1-byte
                   dropout mask) and the rank-wide A output; bf16 adapters share the input (dropout: its own
                   copy and mask); the autocast cache holds bf16 copies of fp32 trained weights
    """
    h, q, kv, a, akv = spec.hidden_size, spec.q_dim, spec.kv_dim, spec.num_attention_heads, spec.num_key_value_heads
    full = s.method == "full"
    routes = max(spec.num_experts_per_tok, 1) if spec.is_moe else 1
    width = spec.expert_intermediate * routes + spec.shared_expert_intermediate_size
    kind = _norm_kind(spec)
    per_tok = 0.0
    norm_trained = (4 if kind != "llama" else d.norm_out) if full else 0
    per_tok += _norms_in_layer(spec) * (4 * h + 4 + norm_trained * h)
    if spec.qk_norm:
        per_tok += 4 * (q + kv) + (4 * (a + akv) if kind != "olmo" else 8) + (norm_trained * (q + kv) if full else 0)
    if s.attn == "sdpa":
        per_tok += 2 * q + 4 * kv + 2 * q + 4 * a
    else:  # eager: q, k and v repeated to all heads (repeat_kv), the output; the scores are added separately
        per_tok += 2 * q + (4 * q if akv < a else 4 * kv) + 2 * q
    per_tok += (3 if spec.mlp_gated else 1) * d.linear_out * width
    if spec.is_moe:
        per_tok += 4 * spec.num_experts + 2 * h * routes  # fp32 router probabilities; tokens gathered per expert
    cast_copy = s.autocast and d.norm_out == 4
    if full:
        qkv_in = (1 if spec.model_type in FUSED_QKV or not cast_copy else 3) * (2 if cast_copy else d.norm_out) * h
        gu_in = (1 if spec.model_type in FUSED_GATE_UP or not spec.mlp_gated or not cast_copy else 2) \
            * (2 if cast_copy else d.norm_out) * h
        per_tok += qkv_in + gu_in * routes + d.linear_out * width  # down_proj input: the activation product
    per_layer = 0.0
    if not full:
        module_in = {name: fi for name, fi, _, _ in spec.linear_modules()}
        input_bytes = {"q_proj": d.norm_out, "k_proj": d.norm_out, "v_proj": d.norm_out, "o_proj": 2,
                       "gate_proj": d.norm_out, "up_proj": d.norm_out, "down_proj": d.linear_out}
        shared_done: set[str] = set()
        for name in s.lora_targets:
            if name not in module_in:
                continue
            per_route = routes if spec.is_moe and name in ("gate_proj", "up_proj", "down_proj") else 1
            fi = module_in[name] * per_route
            if s.adapter_dtype == "fp32" and s.autocast:
                per_tok += 2 * fi + (fi if s.lora_dropout else 0)
            elif s.adapter_dtype == "fp32" and input_bytes.get(name, 2) < 4:
                # fp32 adapters without autocast: PEFT casts each module's input to fp32, its own copy, which
                # lora_A keeps (the frozen base linear keeps nothing); dropout keeps its fp32 output too
                per_tok += 4 * fi * (2 if s.lora_dropout else 1)
            elif s.lora_dropout:
                per_tok += 3 * fi
            else:
                group = {"k_proj": "q_proj", "v_proj": "q_proj", "up_proj": "gate_proj"}.get(name, name)
                if group not in shared_done and name != "o_proj":  # o_proj reads the kept attention output
                    per_tok += input_bytes.get(name, 2) * fi
                    shared_done.add(group)
            per_tok += 2 * s.lora_rank * per_route
        experts = [n for n in s.lora_targets if spec.is_moe and n in ("gate_proj", "up_proj", "down_proj")]
        if experts:
            # PEFT's ParamWrapper on the fused 3-D expert weights builds each targeted weight's delta (B @ A,
            # bf16, all experts) in the layer's forward; the matmuls keep them for backward
            per_layer += 2 * spec.num_experts * spec.expert_intermediate * h * len(experts)
    return per_tok, per_layer


def _down_input_saved(spec, s, d) -> float:
    """Bytes per token one layer keeps as down_proj's input (its weight gradient's operand), freed once down_proj's
    backward is done: the activation product for a trained W, LoRA's copy (and dropout mask) for an adapter."""
    routes = max(spec.num_experts_per_tok, 1) if spec.is_moe else 1
    width = spec.expert_intermediate * routes
    if s.method == "full":
        return d.linear_out * width
    if "down_proj" not in s.lora_targets:
        return 0.0
    if s.adapter_dtype == "fp32" and s.autocast:
        kept = 2 * width + (width if s.lora_dropout else 0)
    elif s.adapter_dtype == "fp32" and d.linear_out < 4:
        kept = 4 * width * (2 if s.lora_dropout else 1)
    elif s.lora_dropout:
        kept = 3 * width
    else:
        kept = d.linear_out * width
    return kept + 2 * s.lora_rank * routes


def _adapter_cast_transient(spec, s) -> float:
    """Bytes per token live only inside down_proj's LoRA forward: PEFT casts the input to the fp32 adapter dtype
    (a copy) and dropout writes an fp32 output; under autocast lora_A keeps neither (it saves its own bf16 copy);
    without autocast lora_A keeps them, and layer_saved_bytes counts them."""
    if s.method == "full" or "down_proj" not in s.lora_targets or s.adapter_dtype != "fp32" or not s.autocast:
        return 0.0
    width = spec.expert_intermediate * (max(spec.num_experts_per_tok, 1) if spec.is_moe else 1)
    return 4 * width * (2 if s.lora_dropout else 1)


def _top_layer_phases(s: TrainingSetup, d: _Dtypes, live: float, dequant: float) -> dict[str, float]:
    """The top layer's backward under checkpointing with adapters, as the traced timeline shows it (`live`: the
    static bytes, the checkpointed inputs and the recomputed layer):
      recompute    ends with the incoming gradient and the norm's gradient of it (2 stream-sized), plus what
                   exists only inside down_proj's LoRA forward, plus a dequantized weight (QLoRA);
      MLP backward down_proj's saved input is freed once its backward is done, while the gradients of the down
                   input (base and adapter paths, then their sum: 3 bf16 width-sized tensors) and the incoming
                   gradient are live; during the base matmul a dequantized weight replaces the third one."""
    spec, T = s.spec, s.tokens
    width = spec.expert_intermediate * (max(spec.num_experts_per_tok, 1) if spec.is_moe else 1)
    grads = 3 * 2 * T * width + T * spec.hidden_size * d.stream
    return {
        "backward, top layer (recompute)": live + 2 * T * spec.hidden_size * d.stream
        + T * _adapter_cast_transient(spec, s) + dequant,
        "backward, top layer": live - T * _down_input_saved(spec, s, d) + max(grads, grads - 2 * T * width + dequant),
    }


def _weight_cast_cache(s: TrainingSetup, pb: dict, lora_layer: float) -> tuple[float, float]:
    """(all layers, one layer) of autocast's cache: bf16 copies of fp32 weights that require grad, kept from
    their first use to the end of the autocast region (the forward) and by backward where a matmul saved them."""
    if not s.autocast:
        return 0.0, 0.0
    if s.method == "full" and s.precision == "mixed":
        layer = 2 * pb["per_layer"]
        return layer * s.spec.num_hidden_layers, layer
    if s.method != "full" and s.adapter_dtype == "fp32":
        return 2 * lora_layer * s.spec.num_hidden_layers, 2 * lora_layer
    return 0.0, 0.0


def _logits_terms(s: TrainingSetup, d: _Dtypes, c: dict) -> dict[str, float]:
    """Logits and loss bytes at three moments: the forward's peak inside the loss, what stays saved until the
    backward pass reaches the loss, and the peak of the loss backward. N = tokens x vocab."""
    spec = s.spec
    T, V, h = s.tokens, spec.vocab_size, spec.hidden_size
    N = T * V
    # Gemma soft-capping (logits / cap, tanh, * cap, in bf16): tanh keeps its output for backward
    cap = 2 * N if spec.final_logit_softcapping else 0
    path = s.cross_entropy
    if path == "standard":      # bf16 logits -> .float() copy -> log_softmax (saved); backward nll + lsm grads
        return {"forward": 10 * N + cap, "saved": 4 * N + cap, "backward": 12 * N + cap}
    if path == "bf16":          # the loop keeps its bf16 logits; log_softmax in bf16 (saved); bf16 grads
        return {"forward": 4 * N + cap, "saved": 4 * N + cap, "backward": 8 * N + cap}
    if path == "chunked":       # all chunk logits (bf16) + fp32 log-probs of all chunks + one chunk's fp32 copy
        k = c["ce_chunks"]
        return {"forward": 6 * N + 4 * N / k + cap, "saved": 4 * N + cap, "backward": 4 * N + 8 * N / k + cap}
    # fused (Liger): gradient of the hidden states and an fp32 loss per token, one chunk of logits at a time
    rows = math.ceil(T / math.ceil(V / h))
    chunk = min(T, 1 << max(0, math.ceil(math.log2(max(rows, 1)))))
    hidden = T * h * d.norm_out + 4 * T
    return {"forward": hidden + chunk * V * d.norm_out * 2, "saved": T * h * d.norm_out, "backward": T * h * d.norm_out}


@dataclass
class _Params:
    """The parameters of one step: bytes on this GPU and the counts the gradient and optimizer terms read."""
    weights: float            # frozen or trained weights on this GPU (FSDP: the shard + the gathered layers)
    adapters: float           # LoRA adapters on this GPU
    trainable: float          # trainable parameters (all of them for full fine-tuning, the adapters for LoRA)
    param_bytes: int          # bytes per trainable parameter, and per gradient element
    largest: float            # elements of the largest trainable tensor (optimizer in backward keeps one gradient)
    lora_mods: list           # the targeted linears (lora_modules)
    lora_layer: float         # adapter parameters of one decoder layer


def _shards(s: TrainingSetup) -> tuple[int, int]:
    """(ways the gradients and optimizer states are split, ways the weights are split) across the GPUs."""
    state = s.gpus if s.sharding in ("zero2", "zero3", "fsdp") else 1
    weight = s.gpus if s.sharding in ("zero3", "fsdp") else 1
    return state, weight


def _linear_bytes(s: TrainingSetup, c: dict) -> float:
    """Bytes per weight of the decoder layers' linears (what quantization applies to)."""
    if s.quantization == "nf4":
        return nf4_bytes_per_param(c, s.double_quant)
    if s.quantization == "int8":
        return c["int8_bits"] / 8
    return 4 if s.method == "full" and s.precision == "mixed" else 2


def weights_term(s: TrainingSetup, pb: dict, d: _Dtypes, c: dict) -> float:
    """The model's weights on this GPU: quantized or 16/32-bit linears, embeddings, lm_head and norms."""
    spec, L, h = s.spec, s.spec.num_hidden_layers, s.spec.hidden_size
    linear_bytes = _linear_bytes(s, c)
    embed_head = pb["embedding"] + pb["lm_head"]
    if s.method == "full":
        weights = pb["total"] * linear_bytes
    else:
        other = pb["total"] - pb["layer_linear"]
        norm_bytes = 4 if s.kbit_upcast in ("all", "norms") else 2
        # the MoE router stays unquantized (bitsandbytes skips it as transformers' MoE models ask), like the norms
        router = L * h * spec.num_experts if spec.is_moe and s.quantization else 0
        weights = (pb["layer_linear"] - router) * linear_bytes + embed_head * d.head \
            + (other - embed_head + router) * norm_bytes
    if s.quantization == "int8":  # one fp32 scale per output row
        weights += 4 * L * sum(fo * n for _, _, fo, n in spec.linear_modules())
    _, shard_weight = _shards(s)
    weights /= shard_weight
    if shard_weight > 1:  # the layer being computed and the prefetched one are gathered; the root unit too
        layer_weight_bytes = (pb["layer_linear"] * linear_bytes + pb["layer_other"] * 2) / L
        weights += c["fsdp_gathered_layers"] * layer_weight_bytes + embed_head * 2 * (1 - 1 / s.gpus)
    return weights


def params_term(s: TrainingSetup, pb: dict, d: _Dtypes, c: dict) -> _Params:
    """Weights and adapters on this GPU, and what is trained."""
    spec, h, V, L = s.spec, s.spec.hidden_size, s.spec.vocab_size, s.spec.num_hidden_layers
    if s.method == "full":
        lora, lora_mods = 0, []
        trainable = pb["total"]
        param_bytes = _linear_bytes(s, c)
        largest = max(V * h, max(fi * fo for _, fi, fo, _ in spec.linear_modules()))
    else:
        lora_mods = lora_modules(spec, list(s.lora_targets))
        lora = lora_param_count(spec, s.lora_rank, list(s.lora_targets))
        trainable = lora
        param_bytes = 4 if s.adapter_dtype == "fp32" else 2
        largest = max(s.lora_rank * max(fi, fo) for _, fi, fo, _ in lora_mods)
    _, shard_weight = _shards(s)
    return _Params(weights=weights_term(s, pb, d, c), adapters=lora * param_bytes / shard_weight,
                   trainable=trainable, param_bytes=param_bytes, largest=largest, lora_mods=lora_mods,
                   lora_layer=(lora - (s.lora_rank * (h + V) if "lm_head" in s.lora_targets else 0)) / L)


def gradients_term(s: TrainingSetup, p: _Params, c: dict) -> float:
    """Gradients of the trained parameters on this GPU, once the backward pass has made them all."""
    shard_state, _ = _shards(s)
    if s.optimizer_in_backward:  # each parameter is stepped and its gradient freed as soon as it is ready
        return p.largest * p.param_bytes
    grads = p.trainable * p.param_bytes / shard_state
    if shard_state > 1:
        grads += c["fsdp_gathered_layers"] * (p.trainable / s.spec.num_hidden_layers) * p.param_bytes
    if s.sharding == "ddp":  # DDP's reduction buckets hold a second copy of the gradients
        grads += p.trainable * p.param_bytes
    return grads


def optimizer_terms(s: TrainingSetup, pb: dict, p: _Params) -> tuple[float, float, bool]:
    """(optimizer state on this GPU, its temporaries in step(), whether the state is paged out of torch's
    counters). The state is in the parameter dtype: fp32 for mixed precision, whose weights are the master."""
    spec, L, h, V = s.spec, s.spec.num_hidden_layers, s.spec.hidden_size, s.spec.vocab_size
    opt = load_constants()["optimizers"][s.optimizer]
    if opt.get("factored"):  # Adafactor: a row and a column second-moment vector per matrix, no first moment
        if s.method == "full":
            vectors = L * sum((fi + fo) * n for _, fi, fo, n in spec.linear_modules()) + (V + h) * (
                1 if spec.tie_word_embeddings else 2) + pb["layer_other"]
        else:
            vectors = sum((fi + 2 * s.lora_rank + fo) * (n * L or 1) for _, fi, fo, n in p.lora_mods)
        states = 4 * vectors
    elif "bytes_per_param" in opt:
        states = opt["bytes_per_param"] * p.trainable
    else:
        states = opt["states"] * p.param_bytes * p.trainable
    # foreach AdamW (torch's default implementation) allocates one state-sized temporary in step(); fused does not
    step_temp = 0.0 if s.fused_optimizer else opt.get("step_workspace", 0) * p.param_bytes * p.trainable
    shard_state, _ = _shards(s)
    step_temp /= shard_state
    if s.sharding in ("zero2", "zero3") or s.optimizer_in_backward:
        step_temp = 0.0
    return states / shard_state, step_temp, bool(opt.get("paged"))


@dataclass
class _Activations:
    """Activation bytes of one step, by what keeps them (see layer_saved_bytes for one layer's content)."""
    one_layer: float          # what one layer keeps for backward (its recompute under checkpointing)
    saved_layers: float       # all layers' saved tensors, or only their checkpointed inputs
    recompute: float          # the layer recomputed in backward (checkpointing), else 0
    rope: float               # rotary cos/sin
    final_norm: float
    head_in: float            # lm_head's bf16 input copy when the head is trained under autocast
    head_cast: float          # bf16 copy of an fp32 lm_head made per use
    cache_all: float          # autocast's bf16 copies of all fp32 trained weights (the forward)
    layer_bwd: float          # gradients of one layer's intermediates while its backward runs
    dequant: float            # one dequantized weight (QLoRA / int8)
    head_grad: float          # full fine-tuning: lm_head's gradient
    emb_bwd: float            # full fine-tuning of a tied embedding: its gradient and the sum

    @property
    def forward(self) -> float:
        return self.saved_layers + self.rope + self.final_norm


def activations_term(s: TrainingSetup, pb: dict, d: _Dtypes, p: _Params, c: dict) -> _Activations:
    spec, h, L, V, S, T = (s.spec, s.spec.hidden_size, s.spec.num_hidden_layers, s.spec.vocab_size, s.seq_len,
                           s.tokens)
    full = s.method == "full"
    shard_state, shard_weight = _shards(s)
    per_tok, per_layer_abs = layer_saved_bytes(spec, s, d)
    cache_all, cache_layer = _weight_cast_cache(s, pb, p.lora_layer)
    if shard_weight > 1 and full:  # FSDP / ZeRO-3 cast the gathered layer themselves (param_dtype bf16)
        cache_all, cache_layer = 0.0, 0.0
    scores = 0.0
    if s.attn == "eager":  # fp32 softmax output and its bf16 copy per score
        scores = s.micro_batch * spec.num_attention_heads * S * S * c["eager_bytes_per_score"]
    layer_abs = per_layer_abs + cache_layer
    one_layer = T * per_tok + layer_abs + scores
    rope = (2 if spec.model_type in ("gemma3", "gemma3_text") else 1) * 2 * S * spec.head_size * d.stream + 8 * S
    final_norm = T * (4 * h + 4 + (d.norm_out * h if full else 0))
    head_trained = full or "lm_head" in s.lora_targets
    head_in = T * 2 * h if head_trained and s.autocast and d.norm_out == 4 else 0.0
    # a frozen fp32 lm_head under autocast is cast to bf16 per use, and the matmul keeps the copy for backward
    head_cast = 2 * V * h if (s.autocast and d.head == 4 and not full) else 0.0
    if s.cross_entropy == "fused":
        head_cast = 2 * V * h if d.head != d.norm_out else 0.0
    if s.grad_ckpt:
        kept = 2 if s.activation_offload else L
        saved_layers, recompute = kept * T * h * d.stream, one_layer
    else:
        saved_layers, recompute = L * one_layer, 0.0
    width = spec.expert_intermediate * (max(spec.num_experts_per_tok, 1) if spec.is_moe else 1)
    # gradients of one layer's intermediates and of the residual stream while its backward runs
    layer_bwd = T * (2 * (3 * width + 2 * h) + 2 * h * d.stream)
    if spec.is_moe and any(n in ("gate_proj", "up_proj") for n in s.lora_targets):
        layer_bwd += 2 * spec.num_experts * 2 * spec.expert_intermediate * h  # gradient of the gate/up delta
    dequant = 2 * max(fi * fo for _, fi, fo, _ in spec.linear_modules()) if s.quantization else 0.0
    return _Activations(one_layer=one_layer, saved_layers=saved_layers, recompute=recompute, rope=rope,
                        final_norm=final_norm, head_in=head_in, head_cast=head_cast, cache_all=cache_all,
                        layer_bwd=layer_bwd, dequant=dequant,
                        head_grad=V * h * p.param_bytes / shard_state if full else 0.0,
                        emb_bwd=2 * V * h * p.param_bytes if full and spec.tie_word_embeddings else 0.0)


def overhead_terms(c: dict, peak_allocated: float) -> tuple[float, float, float]:
    """(peak reserved: the caching allocator's pool, the framework overhead inside it, the CUDA context): the
    fitted constants (bench/calibrate_memory.py)."""
    overhead = c["framework_overhead_gib"] * GIB
    reserved = peak_allocated * (1 + c["reserved_fraction"]) + c["reserved_slack_gib"] * GIB
    return reserved + overhead, overhead, c["cuda_context_gib"] * GIB


def _phases(s: TrainingSetup, d: _Dtypes, static: float, grads: float, step_temp: float, a: _Activations,
            lg: dict, grad_bytes: float) -> dict[str, float]:
    """Live bytes at each moment of the step that can hold the peak: each a sum of the terms above."""
    spec, T = s.spec, s.tokens
    h, V = spec.hidden_size, spec.vocab_size
    full = s.method == "full"
    fwd = a.forward
    cache_bwd = a.cache_all if full else 0.0  # adapters' cast copies are dropped with the autocast region
    phases = {
        "loss (lm_head + cross-entropy)": static + fwd + a.cache_all + a.head_in + a.head_cast + lg["forward"]
        + T * h * d.norm_out,
        "backward, loss": static + fwd + a.head_in + a.head_cast + cache_bwd + lg["backward"],
        "backward, top layer": static + fwd - a.final_norm + a.recompute + a.layer_bwd + a.dequant + a.head_grad
        + cache_bwd,
    }
    if s.grad_ckpt and not full:
        phases.update(_top_layer_phases(s, d, static + fwd - a.final_norm + a.recompute + a.head_grad, a.dequant))
    phases |= {
        "backward, bottom layer": static + grads + a.one_layer + T * h * d.stream + a.rope + a.layer_bwd + a.dequant
        + (a.emb_bwd if not s.grad_ckpt else 0.0),
        "backward, embedding": static + grads + a.emb_bwd,
        "optimizer step": static + grads + step_temp,
    }
    if full:
        phases["backward, lm_head"] = static + fwd + a.cache_all + a.head_in + 2 * T * V \
            + V * h * (2 + grad_bytes)
    return phases


def _estimate(s: TrainingSetup, c: dict) -> MemoryEstimate:
    """The named terms (weights, adapters, gradients, optimizer, activations, logits, overhead), then the phases
    that are sums of them; the peak is the largest phase."""
    spec = s.spec
    pb = param_breakdown(spec)
    full = s.method == "full"
    mixed = full and s.precision == "mixed"
    shard_state, shard_weight = _shards(s)
    d = _dtypes(s)

    p = params_term(s, pb, d, c)
    grads = gradients_term(s, p, c)
    states, step_temp, paged = optimizer_terms(s, pb, p)
    a = activations_term(s, pb, d, p, c)
    lg = _logits_terms(s, d, c)
    static = p.weights + p.adapters + (0.0 if paged else states)
    phases = _phases(s, d, static, grads, step_temp, a, lg, p.param_bytes)
    peak_phase = max(phases, key=phases.get)
    peak_allocated = phases[peak_phase]
    peak_reserved, overhead, context = overhead_terms(c, peak_allocated)
    terms = {
        "parameters": p.weights + p.adapters,
        "gradients": grads,
        "optimizer_state": states,
        "checkpointed_layers" if s.grad_ckpt else "saved_layers": a.saved_layers,
        "recompute_layer": a.recompute,
        "rope_and_final_norm": a.rope + a.final_norm,
        "logits_loss": lg["backward"],
        "autocast_weight_cache": a.cache_all,
        "layer_backward_temporaries": a.layer_bwd + a.dequant,
        "optimizer_step_temporaries": step_temp,
        "allocator_overhead": peak_reserved - peak_allocated,
        "cuda_context": context,
    }
    # the JSON contract's components (sizes of each part, not additive) are kept alongside the named terms
    components = {
        # mixed precision trains fp32 weights (the master copy); their bf16 copies live in autocast's cache
        "weights": (p.weights / 2 if mixed else p.weights), "lora_adapters": p.adapters,
        "gradients": grads, "optimizer_states": states,
        "master_weights": pb["total"] * 4 / shard_state if mixed else 0.0,
        "activations": a.forward + a.recompute + a.layer_bwd + a.dequant,
        "logits_cross_entropy": lg["backward"], "optimizer_step_workspace": step_temp,
        "framework_overhead": overhead, "allocator_overhead": terms["allocator_overhead"], "cuda_context": context,
    }
    lora = 0 if full else lora_param_count(spec, s.lora_rank, list(s.lora_targets))
    params = {"total": pb["total"], "trainable": int(p.trainable), "lora": int(lora),
              "frozen": int(pb["total"] if not full else 0), "active": pb["active"],
              "matmul_active": pb["matmul_active"]}
    return MemoryEstimate(model=spec.name, method=s.method, settings=_settings_dict(s), components=components,
                          params=params, peak_allocated=peak_allocated, peak_reserved=peak_reserved,
                          nvidia_smi=peak_reserved + context, peak_phase=peak_phase, phases=phases,
                          notes=_notes(s, peak_phase, paged), terms=terms)


def _notes(s: TrainingSetup, peak_phase: str, paged: bool) -> list[str]:
    spec, notes = s.spec, []
    if s.seq_len > spec.max_position_embeddings:
        notes.append(f"seq_len {s.seq_len} exceeds the model's max_position_embeddings "
                     f"{spec.max_position_embeddings}")
    notes.append(f"peak at {peak_phase}; components are sizes, not additive (gradients replace freed activations)")
    if paged:
        notes.append("paged 8-bit optimizer states live in CUDA managed memory: not in torch's counters and "
                     "evicted to CPU under pressure, so they are left out of the peaks")
    if spec.final_logit_softcapping and s.attn == "sdpa":
        notes.append(f"{spec.name} uses logit soft-capping; Hugging Face recommends eager attention for training it")
    if s.sharding in ("zero2", "ddp") and s.method != "full" and s.gpus > 1:
        notes.append(f"{s.sharding} replicates the frozen base weights on every GPU; zero3/fsdp shards them")
    if spec.is_moe and s.quantization == "nf4":
        notes.append("QLoRA on MoE: expert and attention linears NF4 (one expert's weights dequantized at a "
                     "time), the router and norms unquantized")
    return notes


def _settings_dict(s: TrainingSetup) -> dict:
    full, quant = s.method == "full", s.quantization
    settings = {"seq_len": s.seq_len, "micro_batch": s.micro_batch, "tokens_per_micro_batch": s.tokens,
                "grad_ckpt": s.grad_ckpt, "attn": s.attn, "optimizer": s.optimizer, "gpus": s.gpus,
                "sharding": s.sharding, "quantization": quant, "double_quant": s.double_quant if quant == "nf4"
                else None, "precision": s.precision if full else None, "cross_entropy": s.cross_entropy,
                "framework": s.framework, "compile": s.compile, "optimizer_in_backward": s.optimizer_in_backward,
                "activation_offload": s.activation_offload, "fused_optimizer": s.fused_optimizer,
                "autocast": s.autocast}
    if quant:
        settings["kbit_upcast"] = s.kbit_upcast
    if not full:
        settings.update(lora_rank=s.lora_rank, lora_targets=list(s.lora_targets), adapter_dtype=s.adapter_dtype,
                        lora_dropout=s.lora_dropout)
    return settings


# ---------------------------------------------------------------- calibration against published measurements

CALIBRATION_FILE = resource("vram_calibration.json")
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
    estimate = estimate_memory(TrainingSetup.build(cfg.pop("model"), **cfg), constants=constants)
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
