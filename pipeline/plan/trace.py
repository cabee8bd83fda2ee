"""The VRAM of one training step, traced from the real training code (`prepare estimate --trace`).

The analytical model (pipeline/plan/memory.py) sums terms fitted to a few published peaks; this module runs the code
a GPU job would run instead, on the meta device (tensors with a shape and a dtype but no data, so an 8B model
costs no memory and a step runs in seconds on a CPU): transformers builds the model from its config.json, PEFT
wraps it, the forward pass, the HF loss (logits upcast to fp32), the backward pass, gradient clipping and the
optimizer step run as the HF Trainer runs them. A TorchDispatchMode sees every tensor an operator returns and
counts its storage once (views share it), and a weakref finalizer on the storage sees it freed, so the peak of
live bytes is exact for that code path: the figure torch.cuda.max_memory_allocated() gives, less what no trace
shows (cuBLAS / FlashAttention workspaces, fused kernels' internals, NCCL buffers).

Where the trace cannot run the real thing, it stands in for it, and the result says so:
- autocast: torch has no autocast on the meta device. The Trainer's bf16 autocast is emulated by a
  TorchFunctionMode with autocast's CUDA op lists (matmuls and SDPA in bf16, softmax/norms/losses in fp32) and
  its weight-cast cache (casts of trained leaf tensors live until the autocast region ends);
- QLoRA: bitsandbytes' kernels need CUDA. Each quantized linear holds its weight as one uint8 storage of the NF4
  size (4-bit codes + absmax constants, as pipeline.plan.memory counts them) and dequantizes to a bf16 temporary of
  the full weight in forward and again in backward, saving nothing else, as bitsandbytes' MatMul4Bit does;
- the fused AdamW kernel (the Trainer's default optimizer) runs as torch's meta kernel; its device check is
  bypassed for meta tensors;
- transformers' packed-sequence detection reads tensor values; the trace feeds one unpadded sequence per row, the
  case in which that check finds no packing, and skips it.

torch is imported only inside this module's functions: `prepare estimate` without --trace never imports it.
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import time
import warnings
import weakref
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.plan.memory import GIB, load_constants, nf4_bytes_per_param, resolve_constants

INSTALL_HINT = "the tracer needs the 'trace' extra: pip install -e '.[trace]' (torch, peft)"
CATEGORIES = ("parameters", "gradients", "optimizer_state", "activations", "logits_loss", "temporaries")
# The CUDA caching allocator hands out blocks in multiples of 512 bytes, and max_memory_allocated counts blocks.
CUDA_BLOCK = 512
TRACED_OPTIMIZERS = ("adamw", "adamw_foreach", "sgd")


_ACTIVE: dict = {}  # the autocast emulation of the trace running now
_LAST: dict = {}  # the last trace's tracker and live sets, for inspection (explain_live)


def explain_live(which: str = "peak_live", skip=("parameters", "optimizer_state")) -> list[str]:
    """The storages live at the last trace's peak ('peak_live') or forward end ('end_live'): category, bytes,
    the operator that made it, its shape and dtype, the phase it was made in."""
    tracker, live, category = _LAST["tracker"], _LAST[which], _LAST["category"]
    rows = [(category(k), size, tracker.what[k], tracker.phases[tracker.alloc_phase[k]]) for k, size in live.items()]
    return [f"{c:14s} {size:>12d}  {what}  [{phase}]" for c, size, what, phase in sorted(rows) if c not in skip]


class TraceUnavailable(RuntimeError):
    """torch or peft is not installed."""


def trace_available() -> bool:
    try:
        return all(importlib.util.find_spec(m) is not None for m in ("torch", "peft", "transformers"))
    except (ImportError, ValueError):  # a module set to None in sys.modules: blocked
        return False


# ---------------------------------------------------------------- config.json of a model (no torch)

# ModelSpec field -> config.json key, where the built-in table's name differs from the model family's.
_SPEC_TO_CONFIG = {"num_experts": {"mixtral": "num_local_experts", "phimoe": "num_local_experts"}}


def hf_config_dict(model: str) -> tuple[dict, str]:
    """(config.json dict, name) for a config file, a folder holding config.json, a built-in model name, or a hub
    id (needs network). Built-in models are rebuilt from their spec in data/models.json: those numbers are the
    config.json values, and the family's defaults fill in the rest."""
    from pipeline.core.models import builtin_spec, builtin_table

    path = Path(model).expanduser()
    if path.is_dir():
        path = path / "config.json"
    if path.is_file():
        try:
            cfg = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"cannot read model config {path}: {exc}") from None
        if not isinstance(cfg, dict) or "model_type" not in cfg:
            raise ValueError(f"{path} is not a transformers config (no model_type)")
        return cfg, str(cfg.get("_name_or_path") or path.parent.name)
    spec = builtin_spec(model)
    if spec is not None:
        entry = builtin_table()[spec.name]
        # ModelSpec's derived fields are not config.json keys: the family's code decides them
        derived = {"aliases", "published_params", "_doc", "mlp_gated", "o_bias", "norm_bias", "norms_per_layer",
                   "qk_norm", "learned_positions"}
        cfg = {k: v for k, v in entry.items() if k not in derived}
        for key, per_family in _SPEC_TO_CONFIG.items():
            if key in cfg and spec.model_type in per_family:
                cfg[per_family[spec.model_type]] = cfg.pop(key)
        return cfg, spec.name
    if "/" in model:
        try:
            from transformers import AutoConfig

            return AutoConfig.from_pretrained(model).to_dict(), model
        except Exception as exc:  # offline, gated, typo: one line
            raise ValueError(f"cannot fetch the config of {model!r} ({type(exc).__name__}); "
                             f"pass a config.json") from None
    raise ValueError(f"unknown model {model!r}: not a config file, folder, built-in name or hub id")


# ---------------------------------------------------------------- result

@dataclass
class TraceResult:
    model: str
    method: str
    settings: dict
    code_path: list[str]
    peak_allocated: int                   # bytes, rounded per storage to CUDA blocks
    peak_phase: str
    at_peak: dict[str, int]               # live bytes at the peak, per category (adds up to peak_allocated)
    at_forward_end: dict[str, int]        # live bytes when the forward pass (with the loss) has returned
    sizes: dict[str, int]                 # steady-state sizes: parameters, gradients, optimizer state
    phases: dict[str, int]                # highest live bytes seen in each phase of the traced step
    seconds: float
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "model": self.model, "method": self.method,
            "peak_allocated_gib": round(self.peak_allocated / GIB, 3), "peak_allocated_bytes": self.peak_allocated,
            "peak_phase": self.peak_phase,
            "at_peak_gib": {k: round(v / GIB, 3) for k, v in self.at_peak.items()},
            "at_peak_bytes": dict(self.at_peak), "at_forward_end_bytes": dict(self.at_forward_end),
            "sizes_gib": {k: round(v / GIB, 3) for k, v in self.sizes.items()},
            "phases_gib": {k: round(v / GIB, 3) for k, v in self.phases.items()},
            "code_path": list(self.code_path), "settings": dict(self.settings),
            "seconds": round(self.seconds, 2), "notes": list(self.notes),
        }


# ---------------------------------------------------------------- the tracer

def _import_torch():
    try:
        import peft  # noqa: F401
        import torch
        import transformers  # noqa: F401
    except ImportError:
        raise TraceUnavailable(INSTALL_HINT) from None
    return torch


def trace_step(model: str, method: str = "lora", seq_len: int = 2048, micro_batch: int = 1, grad_ckpt: bool = True,
               attn: str = "sdpa", optimizer: str = "adamw", lora_rank: int = 16, lora_targets="all-linear",
               double_quant: bool = True, precision: str | None = None, block: int = CUDA_BLOCK,
               config: dict | None = None, framework: str = "hf", cross_entropy: str | None = None,
               adapter_dtype: str | None = None, activation_offload: bool = False) -> TraceResult:
    """Trace two training steps (the second is the steady state: optimizer states exist from the first) and
    return the peak of live tensor bytes in the second, split by category. `config` is a config.json dict
    (else read from `model`); `block` rounds each storage as the CUDA allocator does (1: raw bytes).
    `framework` (pipeline.plan.setup presets) sets the adapter dtype, autocast, the QLoRA upcasts, LoRA dropout, the
    AdamW implementation and the loss path; `cross_entropy` / `adapter_dtype` override the preset's. Unsloth's
    offloaded checkpointing is not traced: its checkpoints are traced on the GPU (activation_offload=False)."""
    torch = _import_torch()
    from pipeline.plan.memory import METHODS, PRECISIONS
    from pipeline.plan.setup import CROSS_ENTROPY, framework_preset

    preset = framework_preset(framework)
    cross_entropy = cross_entropy or preset.cross_entropy
    if cross_entropy not in CROSS_ENTROPY:
        raise ValueError(f"unknown cross-entropy {cross_entropy!r}; choose one of {', '.join(CROSS_ENTROPY)}")
    adapter_dtype = adapter_dtype or preset.adapter_dtype
    if optimizer == "adamw" and not preset.fused_optimizer:
        optimizer = "adamw_foreach"
    if activation_offload:
        raise ValueError("offloaded activation checkpointing is not traced; drop --trace for the analytical figure")

    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    attn = {"flash": "sdpa", "flash_attention_2": "sdpa", "fa2": "sdpa"}.get(attn, attn)
    if attn not in ("sdpa", "eager"):
        raise ValueError(f"unknown attention {attn!r}; choose sdpa or eager")
    if optimizer not in TRACED_OPTIMIZERS:
        raise ValueError(f"the tracer runs {', '.join(TRACED_OPTIMIZERS)}; {optimizer} (bitsandbytes / "
                         f"transformers' Adafactor) is not traced: drop --trace for the analytical figure")
    precision = precision or preset.full_precision
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}")
    if seq_len < 2 or micro_batch < 1:
        raise ValueError("seq_len must be >= 2 and micro_batch >= 1")
    if config is None:
        config, name = hf_config_dict(model)
    else:
        name = model
    constants = resolve_constants(load_constants(), "hf")
    started = time.perf_counter()
    with _patched_for_meta(torch), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecation notices of transformers/PEFT are not the user's business
        dropout = preset.lora_dropout if method != "full" else 0.0
        options = dict(adapter_dtype=adapter_dtype, kbit_upcast=preset.kbit_upcast, autocast=preset.autocast,
                       cross_entropy=cross_entropy)
        try:
            built = _build(torch, config, method, attn, grad_ckpt, lora_rank, lora_targets, precision, double_quant,
                           dropout, constants, **options)
        except ValueError as exc:
            if "lora_dropout" not in str(exc):
                raise
            # PEFT wraps fused expert weights (3D parameters) with a ParamWrapper that refuses dropout
            dropout = 0.0
            built = _build(torch, config, method, attn, grad_ckpt, lora_rank, lora_targets, precision, double_quant,
                           dropout, constants, **options)
            built["notes"].append(f"PEFT's ParamWrapper for the fused expert weights refuses LoRA dropout: traced "
                                  f"with lora_dropout 0 (not {preset.lora_dropout})")
        result = _run_steps(torch, built, seq_len, micro_batch, optimizer, block)
    settings = {"seq_len": seq_len, "micro_batch": micro_batch, "grad_ckpt": grad_ckpt, "attn": attn,
                "optimizer": optimizer, "precision": precision if method == "full" else None,
                "block_bytes": block, "steps_traced": 2, "framework": framework, "cross_entropy": cross_entropy}
    if method != "full":
        settings.update(lora_rank=lora_rank, lora_targets=built["targets"], lora_dropout=dropout,
                        adapter_dtype=adapter_dtype)
    if method == "qlora":
        settings["double_quant"] = double_quant
    peak, phase, at_peak, at_forward_end, sizes, phases = result
    return TraceResult(model=name, method=method, settings=settings, code_path=built["code_path"],
                       peak_allocated=peak, peak_phase=phase, at_peak=at_peak, at_forward_end=at_forward_end,
                       sizes=sizes, phases=phases,
                       seconds=time.perf_counter() - started, notes=built["notes"])


@contextlib.contextmanager
def _patched_for_meta(torch):
    """For the duration of a trace: the two checks that cannot run on meta tensors bypassed, torch.autocast on
    the meta device routed to the emulation, transformers' warnings quiet (see the module doc)."""
    import torch.optim.adam as adam
    import transformers.masking_utils as masking
    from transformers.utils import logging

    real_autocast = torch.autocast

    def autocast(device_type, dtype=None, enabled=True, cache_enabled=None):
        # code that switches autocast for the tensors' device (PEFT's ParamWrapper turns it off) drives the
        # emulation on the meta device
        mode = _ACTIVE.get("autocast")
        if str(device_type) != "meta":
            return real_autocast(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
        return mode.region(enabled, fresh=False) if mode is not None else contextlib.nullcontext()

    saved = (masking.find_packed_sequence_indices, adam._device_dtype_check_for_fused, logging.get_verbosity())
    masking.find_packed_sequence_indices = lambda position_ids: None
    adam._device_dtype_check_for_fused = lambda p, cuda_unsupported=False: None
    logging.set_verbosity_error()
    torch.autocast = torch.amp.autocast = autocast
    try:
        yield
    finally:
        masking.find_packed_sequence_indices, adam._device_dtype_check_for_fused, verbosity = saved
        logging.set_verbosity(verbosity)
        torch.autocast = torch.amp.autocast = real_autocast
        _ACTIVE.clear()


def _decoder_layers(torch, model, n_layers: int):
    for module in model.modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == n_layers:
            return list(module)
    raise ValueError("cannot find the decoder layers of this model")


def _build(torch, config: dict, method, attn, grad_ckpt, lora_rank, lora_targets, precision, double_quant,
           lora_dropout, constants, adapter_dtype="fp32", kbit_upcast="all", autocast=True,
           cross_entropy="standard") -> dict:
    import peft
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = dict(config)
    model_type = cfg.pop("model_type")
    for key in ("architectures", "transformers_version", "_name_or_path", "auto_map", "quantization_config",
                "torch_dtype", "dtype"):
        cfg.pop(key, None)
    try:
        hf_cfg = AutoConfig.for_model(model_type, **cfg)
    except (ValueError, KeyError) as exc:
        raise ValueError(f"transformers {transformers.__version__} does not know model_type {model_type!r}: "
                         f"{exc}") from None
    if hasattr(hf_cfg, "get_text_config") and hf_cfg.get_text_config() is not hf_cfg:
        hf_cfg = hf_cfg.get_text_config()
    hf_cfg.use_cache = False
    dtype = torch.float32 if method == "full" and precision == "mixed" else torch.bfloat16
    notes: list[str] = []
    implementation = attn
    for attempt in (0, 1):
        hf_cfg._attn_implementation = implementation
        with torch.device("meta"):
            try:
                model = AutoModelForCausalLM.from_config(hf_cfg, dtype=dtype, attn_implementation=implementation)
                break
            except ValueError as exc:
                if attempt or implementation != "sdpa" or "scaled_dot_product_attention" not in str(exc):
                    raise ValueError(f"cannot build {model_type} as a causal LM: {str(exc)[:200]}") from None
        # no SDPA path in this family: FlashAttention-2 is what such a job runs instead of eager
        implementation = _register_flash_stand_in()
        notes.append(f"{model_type} has no SDPA path in transformers {transformers.__version__}: traced with "
                     f"FlashAttention-2's memory (the kernel stands in, the model code is real)")
    model.train()
    n_layers = hf_cfg.num_hidden_layers
    attn_text = "FlashAttention-2 stand-in" if implementation != attn else f"{attn} attention"
    code_path = [f"transformers {transformers.__version__} {type(model).__name__}, {attn_text}, "
                 f"{'fp32' if dtype == torch.float32 else 'bf16'} weights"]
    autocast = autocast and (method != "full" or precision == "mixed")  # the Trainer's bf16=True
    if method == "qlora":
        if any(p.dim() == 3 for p in model.parameters()):
            raise ValueError(f"QLoRA on {model_type} is not traced: its experts are fused 3-D weights, which the "
                             f"NF4 stand-in does not quantize; drop --trace for the analytical figure")
        per_param = nf4_bytes_per_param(constants, double_quant)
        quantized = _quantize_nf4(torch, model, per_param)
        model.is_loaded_in_4bit = True
        upcast_text = _kbit_prepare(torch, peft, model, kbit_upcast, grad_ckpt)
        code_path.append(f"QLoRA: {quantized} linears as NF4 storage ({per_param:.4f} B/param, double quant "
                         f"{'on' if double_quant else 'off'}), bf16 dequantization temporaries in forward and "
                         f"backward (bitsandbytes' MatMul4Bit modelled: it needs CUDA); {upcast_text}")
        notes.append("QLoRA traced with modelled bitsandbytes layers: NF4-sized uint8 weights, one bf16 "
                     "dequantized weight live per matmul")
    if grad_ckpt:
        model.activation_checkpointing_enable() if hasattr(model, "activation_checkpointing_enable") \
            else model.gradient_checkpointing_enable()
        code_path.append("activation checkpointing of every decoder layer as transformers applies it "
                         "(torch.utils.checkpoint, non-reentrant: transformers' default)")
    targets = None
    if method != "full":
        targets = _peft_targets(model, lora_targets)
        lcfg = peft.LoraConfig(r=lora_rank, lora_alpha=2 * lora_rank, lora_dropout=lora_dropout,
                               target_modules=targets, task_type="CAUSAL_LM")
        with torch.device("meta"):
            # autocast_adapter_dtype=True (PEFT's default) keeps the adapters of a bf16 model in fp32
            model = peft.get_peft_model(model, lcfg, autocast_adapter_dtype=adapter_dtype == "fp32")
        want = torch.float32 if adapter_dtype == "fp32" else torch.bfloat16
        for name, param in model.named_parameters():
            # PEFT leaves the adapters of a 4-bit base (a uint8 weight) in fp32; stacks with their own LoRA
            # layers (torchtune) or that cast them (bf16 presets) hold them in the dtype asked for
            if "lora_" in name and param.dtype != want:
                param.data = param.data.to(want)
        code_path.append(f"PEFT {peft.__version__} LoRA r{lora_rank} on {targets}, {adapter_dtype} adapters, "
                         f"dropout {lora_dropout}")
    else:
        code_path.append(f"full fine-tuning, {'fp32 weights + bf16 autocast' if precision == 'mixed' else 'bf16'}")
    if autocast:
        code_path.append("bf16 autocast as the Trainer's bf16=True (emulated: no autocast on the meta device)")
    code_path.append(LOSS_PATHS[cross_entropy])
    if cross_entropy == "fused":
        notes.append("fused cross-entropy traced with a stand-in of Liger's fused linear cross-entropy (its "
                     "chunking and buffers; the Triton kernel needs CUDA)")
    layers = _decoder_layers(torch, model, n_layers)
    trainable = [p for p in model.parameters() if p.requires_grad]
    return {"model": model, "layers": layers, "trainable": trainable, "autocast": autocast, "grad_ckpt": grad_ckpt,
            "code_path": code_path, "notes": notes, "targets": targets, "config": hf_cfg,
            "cross_entropy": cross_entropy}


LOSS_PATHS = {
    "standard": "HF loss: ForCausalLMLoss, logits upcast to fp32, cross-entropy mean over tokens",
    "bf16": "plain loop loss: logits = model(ids).logits (kept until the step ends), F.cross_entropy on the "
            "bf16 logits, no upcast",
    "chunked": "torchtune CEWithChunkedOutputLoss: lm_head per 8 token chunks, each chunk upcast to fp32 for "
               "its cross-entropy; the logits deleted before backward",
    "fused": "fused linear cross-entropy (Liger): per token chunk logits, loss and their gradient in forward; "
             "no logits of all tokens",
}
CE_CHUNKS = 8  # torchtune's num_output_chunks


def _kbit_prepare(torch, peft, model, kbit_upcast: str, grad_ckpt: bool) -> str:
    """What the stack does to a 4-bit model before adding adapters: PEFT's prepare_model_for_kbit_training casts
    every non-quantized weight to fp32 (hf); axolotl then casts embeddings and lm_head back to bf16 and keeps the
    norms fp32 (norms); torchtune and Unsloth keep them in bf16 (none)."""
    if kbit_upcast in ("all", "norms"):
        peft.prepare_model_for_kbit_training(model, use_gradient_checkpointing=grad_ckpt,
                                             gradient_checkpointing_kwargs={"use_reentrant": False})
        if kbit_upcast == "all":
            return "peft.prepare_model_for_kbit_training (other weights fp32)"
        for name, module in model.named_modules():
            if "norm" in name.rsplit(".", 1)[-1]:
                module.to(torch.float32)
            elif any(k in name for k in ("lm_head", "embed_tokens", "wte", "wpe")) and hasattr(module, "weight"):
                if module.weight.dtype == torch.float32:
                    module.to(torch.bfloat16)
        return "peft.prepare_model_for_kbit_training, then norms fp32 and embeddings / lm_head bf16 (axolotl)"
    for p in model.parameters():
        p.requires_grad_(False)
    if grad_ckpt:
        model.enable_input_require_grads()
    return "no upcast of the other weights (bf16)"


def _peft_targets(model, lora_targets):
    items = lora_targets.split(",") if isinstance(lora_targets, str) else list(lora_targets)
    items = [t.strip() for t in items if t.strip()]
    if not items:
        raise ValueError("no LoRA target modules given")
    if any(t.lower() in ("all-linear", "all_linear", "all") for t in items):
        return "all-linear"
    import torch

    names = {n.rsplit(".", 1)[-1] for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    chosen = []
    for item in items:
        for candidate in (item, f"{item}_proj"):
            if candidate in names:
                chosen.append(candidate)
                break
        else:
            raise ValueError(f"LoRA target {item!r} matches no linear layer (have: {', '.join(sorted(names))})")
    return chosen


def _quantize_nf4(torch, model, bytes_per_param: float) -> int:
    """Every nn.Linear but the output head becomes a frozen uint8 storage of the NF4 size whose forward and
    backward dequantize a bf16 copy of the weight (bitsandbytes' Linear4bit + MatMul4Bit, memory-wise)."""
    import math
    import types

    head = model.get_output_embeddings()
    count = 0
    for module in list(model.modules()):
        if not isinstance(module, torch.nn.Linear) or module is head:
            continue
        shape = (module.out_features, module.in_features)
        nbytes = math.ceil(shape[0] * shape[1] * bytes_per_param)
        module.weight = torch.nn.Parameter(torch.empty(nbytes, dtype=torch.uint8, device="meta"), requires_grad=False)
        module.nf4_shape = shape
        module.forward = types.MethodType(_nf4_linear_forward, module)
        count += 1
    return count


def _nf4_linear_forward(self, x):
    """bitsandbytes Linear4bit.forward: input cast to the compute dtype, output cast back to the input dtype."""
    import torch

    inp_dtype = x.dtype
    out = _nf4_matmul().apply(x.to(torch.bfloat16), self.weight, self.nf4_shape)
    if self.bias is not None:
        out = out + self.bias.to(out.dtype)
    return out.to(inp_dtype)


_NF4_FN = None


def _nf4_matmul():
    global _NF4_FN
    if _NF4_FN is None:
        import torch

        class NF4Matmul(torch.autograd.Function):
            """MatMul4Bit: nothing saved but the quantized weight; the weight is dequantized again in backward."""

            @staticmethod
            def forward(ctx, x, packed, shape):
                ctx.packed, ctx.shape = packed, shape
                weight = torch.empty(shape, dtype=torch.bfloat16, device=x.device)  # dequantize_4bit's output
                return torch.nn.functional.linear(x, weight)

            @staticmethod
            def backward(ctx, grad):
                weight = torch.empty(ctx.shape, dtype=torch.bfloat16, device=grad.device)
                return torch.matmul(grad, weight.to(grad.dtype)), None, None

        _NF4_FN = NF4Matmul
    return _NF4_FN


# ---------------------------------------------------------------- autocast emulation

def _autocast_mode(torch):
    from torch.overrides import TorchFunctionMode

    F = torch.nn.functional
    T = torch.Tensor
    lower = {getattr(torch, "_grouped_mm", F.linear), getattr(F, "grouped_mm", F.linear), F.linear, torch.matmul,
             T.matmul, T.__matmul__, T.__rmatmul__, torch.mm, T.mm, torch.bmm, T.bmm,
             torch.baddbmm, T.baddbmm, torch.addmm, T.addmm, torch.addbmm, torch.addmv, torch.mv, T.mv,
             F.scaled_dot_product_attention, torch.conv1d, torch.conv2d, F.conv1d, F.conv2d, torch.chain_matmul,
             torch.prelu}
    fp32 = {F.softmax, torch.softmax, T.softmax, F.log_softmax, torch.log_softmax, T.log_softmax, F.cross_entropy,
            F.nll_loss, F.layer_norm, torch.layer_norm, F.group_norm, torch.exp, T.exp, torch.log, T.log, torch.pow,
            T.pow, T.__pow__, torch.rsqrt, T.rsqrt, torch.sum, T.sum, torch.cumsum, T.cumsum, torch.prod, T.prod,
            torch.norm, T.norm, F.softplus, F.mse_loss, F.binary_cross_entropy_with_logits, F.kl_div,
            torch.reciprocal, T.reciprocal, F.normalize, torch.logsumexp, T.logsumexp}
    low_dtypes = (torch.float16, torch.bfloat16)
    sdpa = {F.scaled_dot_product_attention}
    dropout = {F.dropout, torch.dropout}

    class Autocast(TorchFunctionMode):
        """torch.autocast('cuda', torch.bfloat16) at the torch-function level, with autocast's cache: the bf16
        cast of a leaf tensor that requires grad (a trained weight) is reused until the region ends."""

        def __init__(self):
            super().__init__()
            self.enabled = False
            self.cache: dict[int, tuple] = {}

        @contextlib.contextmanager
        def region(self, enabled: bool, fresh: bool):
            saved = (self.enabled, self.cache)
            self.enabled = enabled
            if fresh:
                self.cache = {}
            try:
                yield
            finally:
                self.enabled, self.cache = saved

        def _low(self, t):
            if not (isinstance(t, torch.Tensor) and t.is_floating_point() and t.dtype == torch.float32):
                return t
            if t.is_leaf and t.requires_grad:
                hit = self.cache.get(id(t))
                if hit is None or hit[0] is not t:
                    hit = self.cache[id(t)] = (t, t.to(torch.bfloat16))
                return hit[1]
            return t.to(torch.bfloat16)

        @staticmethod
        def _high(t):
            if isinstance(t, torch.Tensor) and t.dtype in low_dtypes:
                return t.float()
            return t

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func in sdpa:
                return _flash_sdpa(torch, self, *args, **kwargs)
            if func in dropout:
                return _cuda_dropout(torch, func, *args, **kwargs)
            if self.enabled:
                if func in lower:
                    args = tuple(self._low(a) for a in args)
                    kwargs = {k: self._low(v) for k, v in kwargs.items()}
                elif func in fp32 and not kwargs.get("dtype"):
                    args = tuple(self._high(a) for a in args)
            return func(*args, **kwargs)

    return Autocast()


FLASH_STAND_IN = "meta_trace_attention"


def _register_flash_stand_in() -> str:
    """An attention implementation for transformers with FlashAttention-2's interface: the model's own code
    around it runs as with flash_attention_2; the kernel is the SDPA stand-in (_flash_sdpa) with k/v unexpanded."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, flash_attention_mask

    def flash_stand_in(module, query, key, value, attention_mask, dropout=0.0, scaling=None, sliding_window=None,
                       softcap=None, **kwargs):
        import torch

        out = torch.nn.functional.scaled_dot_product_attention(query, key, value, is_causal=True, scale=scaling,
                                                               enable_gqa=True)
        return out.transpose(1, 2), None

    AttentionInterface.register(FLASH_STAND_IN, flash_stand_in)
    ALL_MASK_ATTENTION_FUNCTIONS.register(FLASH_STAND_IN, flash_attention_mask)
    return FLASH_STAND_IN


def _cuda_dropout(torch, func, input, p=0.5, training=True, inplace=False, train=None):
    """torch.dropout off CUDA multiplies by a float noise tensor and saves it (4 bytes per element); on CUDA it
    is native_dropout, which saves a bool mask (1 byte): run the CUDA one."""
    training = training if train is None else train
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return func(input, p, training)
    return torch.native_dropout(input, p, True)[0]


_SDPA_FN = None


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def _flash_sdpa(torch, autocast, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                enable_gqa=False):
    """scaled_dot_product_attention as the CUDA FlashAttention-2 / memory-efficient kernels hold memory, not as
    the math fallback that the meta device would run (which keeps the S x S scores). Forward: the output (laid out
    (B, S, H, D), so transformers' transpose + contiguous is free) and the fp32 log-sum-exp per head and query are
    saved with q, k, v (and the mask). Backward: dq, dk, dv, plus what PyTorch's flash wrapper allocates: an fp32
    dq accumulator (B, S, H, D rounded), softmax_d (B, H, S rounded), and with GQA dk/dv expanded to H heads."""
    global _SDPA_FN
    if autocast.enabled:
        query, key, value = (autocast._low(t) for t in (query, key, value))
    if _SDPA_FN is None:
        class FlashSDPA(torch.autograd.Function):
            @staticmethod
            def forward(ctx, q, k, v, mask):
                b, h, s, _ = q.shape
                out = torch.empty(b, s, h, v.shape[-1], dtype=q.dtype, device=q.device).transpose(1, 2)
                lse = torch.empty(b, h, s, dtype=torch.float32, device=q.device)
                ctx.save_for_backward(q, k, v, out, lse, mask)
                return out

            @staticmethod
            def backward(ctx, grad):
                q, k, v, out, lse, mask = ctx.saved_tensors
                b, h, s, d = q.shape
                hk, sk = k.shape[1], k.shape[2]
                dq = torch.empty(b, s, h, d, dtype=q.dtype, device=q.device).transpose(1, 2)
                dq_accum = torch.empty(b, _round_up(s, 128), h, _round_up(d, 32 if d <= 128 else 64),
                                       dtype=torch.float32, device=q.device)
                softmax_d = torch.empty(b, h, _round_up(s, 128), dtype=torch.float32, device=q.device)
                if hk != h:  # GQA: gradients per query head first, then summed per key/value head
                    dk_expanded = torch.empty(b, sk, h, d, dtype=k.dtype, device=k.device)
                    dv_expanded = torch.empty(b, sk, h, v.shape[-1], dtype=v.dtype, device=v.device)
                    del dk_expanded, dv_expanded
                dk = torch.empty(b, sk, hk, d, dtype=k.dtype, device=k.device).transpose(1, 2)
                dv = torch.empty(b, sk, hk, v.shape[-1], dtype=v.dtype, device=v.device).transpose(1, 2)
                del dq_accum, softmax_d
                return dq, dk, dv, None

        _SDPA_FN = FlashSDPA
    if dropout_p:
        raise ValueError("attention dropout is not traced")
    mask = attn_mask if isinstance(attn_mask, torch.Tensor) else None
    return _SDPA_FN.apply(query, key, value, mask)


# ---------------------------------------------------------------- live-bytes accounting

def _tracker(torch, block: int):
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves
    from torch.utils.weak import WeakIdKeyDictionary

    class Tracker(TorchDispatchMode):
        """Counts every storage an operator returns once, on the meta device (the GPU), and sees it freed."""

        def __init__(self):
            super().__init__()
            self.keys = WeakIdKeyDictionary()    # storage -> our id (ids are never reused)
            self.size: dict[int, int] = {}
            self.alloc_phase: dict[int, int] = {}
            self.what: dict[int, str] = {}        # shape, dtype and operator of each storage, for inspection
            self.op = "setup"
            self.events: list[tuple[int, int, int]] = []  # (storage id, +-bytes, phase index)
            self.phases: list[str] = []
            self.phase_index: dict[str, int] = {}
            self.phase = 0
            self.set_phase("setup")

        def set_phase(self, name: str) -> str:
            previous = self.phases[self.phase] if self.phases else name
            if name not in self.phase_index:
                self.phase_index[name] = len(self.phases)
                self.phases.append(name)
            self.phase = self.phase_index[name]
            return previous

        def key(self, t) -> int | None:
            if not isinstance(t, torch.Tensor) or t.device.type != "meta":
                return None
            st = t.untyped_storage()
            k = self.keys.get(st)
            if k is None:
                nbytes = st.nbytes()
                k = len(self.size)
                self.keys[st] = k
                size = -(-nbytes // block) * block if nbytes else 0
                self.size[k] = size
                self.alloc_phase[k] = self.phase
                self.what[k] = f"{self.op} {tuple(t.shape)} {str(t.dtype).replace('torch.', '')}"
                self.events.append((k, size, self.phase))
                weakref.finalize(st, self._freed, k)
            return k

        def _freed(self, k: int) -> None:
            self.events.append((k, -self.size[k], self.phase))

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            self.op = func.__name__
            for t in tree_leaves(out):
                self.key(t)
            return out

    return Tracker()


def _run_steps(torch, built: dict, seq_len: int, micro_batch: int, optimizer: str, block: int):
    model, layers, trainable = built["model"], built["layers"], built["trainable"]
    tracker = _tracker(torch, block)
    autocast = _ACTIVE["autocast"] = _autocast_mode(torch)
    for t in list(model.parameters()) + list(model.buffers()):
        tracker.key(t)
    param_keys = {tracker.key(t) for t in list(model.parameters()) + list(model.buffers())}
    grad_keys: set[int] = set()
    state_keys: set[int] = set()

    def grad_seen(p):
        grad_keys.add(tracker.key(p.grad))

    handles = [p.register_post_accumulate_grad_hook(grad_seen) for p in trainable]

    # phases: layer hooks outside the checkpoint in forward; the checkpoint function itself for the recompute;
    # a hook on each layer's output gradient for the layer's backward
    def pre_hook(i):
        def hook(module, args):
            if not tracker.phases[tracker.phase].startswith("backward"):
                tracker.set_phase(f"forward, layer {i}")
        return hook

    def post_hook(i):
        def hook(module, args, output):
            out = output[0] if isinstance(output, tuple) else output
            if isinstance(out, torch.Tensor) and out.requires_grad \
                    and not tracker.phases[tracker.phase].startswith("backward"):
                out.register_hook(lambda g: (tracker.set_phase(f"backward, layer {i}"), None)[1])
                tracker.set_phase("forward")
        return hook

    for i, layer in enumerate(layers):
        handles.append(layer.register_forward_pre_hook(pre_hook(i)))
        handles.append(layer.register_forward_hook(post_hook(i)))
        if built["grad_ckpt"] and hasattr(layer, "_gradient_checkpointing_func"):
            layer._gradient_checkpointing_func = _wrap_checkpoint(layer._gradient_checkpointing_func, i, tracker,
                                                                  autocast)
    head = model.get_output_embeddings()

    def head_pre(module, args):
        tracker.set_phase("loss (lm_head + cross-entropy)")

    def head_post(module, args, output):
        if output.requires_grad:
            output.register_hook(lambda g: (tracker.set_phase("backward, lm_head"), None)[1])

    handles += [head.register_forward_pre_hook(head_pre), head.register_forward_hook(head_post)]

    if optimizer == "sgd":
        opt = torch.optim.SGD(trainable, lr=1e-4)
        opt_path = "torch SGD (no state)"
    elif optimizer == "adamw_foreach":
        opt = torch.optim.AdamW(trainable, lr=1e-4, foreach=True)
        opt_path = "torch AdamW foreach"
    else:
        opt = torch.optim.AdamW(trainable, lr=1e-4, fused=True)
        opt_path = "torch AdamW fused (the Trainer's default adamw_torch_fused)"
    built["code_path"].append(f"{opt_path}; clip_grad_norm_ 1.0; zero_grad(set_to_none); two steps traced, "
                              f"the second reported")
    ids = torch.zeros(micro_batch, seq_len, dtype=torch.long, device="meta")
    starts, forward_end = [], []
    with tracker, autocast:
        tracker.key(ids)
        for step in range(2):
            starts.append(len(tracker.events))
            tracker.set_phase("forward")
            with autocast.region(built["autocast"], fresh=True):
                loss, kept = _forward_loss(torch, model, ids, built, autocast, tracker)
            forward_end.append(len(tracker.events))
            tracker.set_phase("backward, loss")
            loss.backward()
            del loss, kept
            tracker.set_phase("optimizer step")
            torch.nn.utils.clip_grad_norm_(trainable, 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            for state in opt.state.values():
                for value in state.values():
                    k = tracker.key(value)
                    if k is not None:
                        state_keys.add(k)
            tracker.set_phase("setup")
    for h in handles:
        h.remove()

    # replay the events: the peak in the second step, and what was live then
    live, total = {}, 0
    peak, peak_at, phase_peaks = -1, 0, {}
    for index, (k, delta, phase) in enumerate(tracker.events):
        total += delta
        if delta > 0:
            live[k] = delta
        else:
            live.pop(k, None)
        if index >= starts[1]:
            name = tracker.phases[phase]
            phase_peaks[name] = max(phase_peaks.get(name, 0), total)
            if total > peak:
                peak, peak_at, peak_live = total, index, dict(live)
        if index == forward_end[1] - 1:
            end_live = dict(live)

    def split(live_keys):
        out = dict.fromkeys(CATEGORIES, 0)
        for k, size in live_keys.items():
            out[_category(k, tracker, param_keys, grad_keys, state_keys)] += size
        return out

    at_peak, at_forward_end = split(peak_live), split(end_live)
    _LAST.update(tracker=tracker, peak_live=peak_live, end_live=end_live,
                 category=lambda k: _category(k, tracker, param_keys, grad_keys, state_keys))
    sizes = {"parameters": sum(tracker.size[k] for k in param_keys),
             "trainable_parameters": sum(tracker.size[tracker.key(p)] for p in trainable),
             "gradients": sum(tracker.size[tracker.key(p)] for p in trainable),  # one grad per trainable param
             "optimizer_state": sum(tracker.size[k] for k in state_keys)}
    return peak, tracker.phases[tracker.events[peak_at][2]], at_peak, at_forward_end, sizes, phase_peaks


def _forward_loss(torch, model, ids, built: dict, autocast, tracker):
    """The forward pass and the loss of the traced stack (LOSS_PATHS); returns (loss, what the loop keeps
    referenced until the backward pass is done)."""
    F = torch.nn.functional
    path = built["cross_entropy"]
    if path == "standard":
        return model(input_ids=ids, labels=ids).loss, None
    causal = model.get_base_model() if hasattr(model, "get_base_model") else model
    labels = F.pad(ids, (0, 1), value=-100)[..., 1:]  # each token predicts the next, as the HF loss shifts
    if path == "bf16":
        logits = model(input_ids=ids).logits
        with autocast.region(False, fresh=False):
            loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.reshape(-1))
        return loss, logits
    hidden = causal.get_decoder()(input_ids=ids).last_hidden_state
    head = causal.get_output_embeddings()
    cap = getattr(built["config"], "final_logit_softcapping", None)
    if path == "chunked":
        chunks = []
        for part in hidden.tensor_split(CE_CHUNKS, dim=1):
            logits = head(part)
            chunks.append(torch.tanh(logits / cap) * cap if cap else logits)
        total = None
        for logits, part in zip(chunks, labels.tensor_split(CE_CHUNKS, dim=1)):
            ce = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), part.reshape(-1), reduction="sum")
            total = ce if total is None else total + ce
        return total / labels.numel(), None  # the recipe deletes the chunk logits before backward
    tracker.set_phase("loss (lm_head + cross-entropy)")
    with autocast.region(False, fresh=False):
        flat = hidden.reshape(-1, hidden.shape[-1])
        return _fused_ce(torch).apply(flat, head.weight, labels.reshape(-1)), None


_FUSED_FN = None


def _fused_ce(torch):
    """Liger's LigerFusedLinearCrossEntropyFunction, memory-wise: forward allocates grad_input (like the hidden
    states), an fp32 loss per token and, when lm_head is trained, grad_weight; the tokens go through in chunks
    of next_pow2(ceil(BT / ceil(V / H))) rows, each chunk's logits (in the hidden dtype) overwritten by their
    gradient in place; backward returns the saved gradients."""
    global _FUSED_FN
    if _FUSED_FN is None:
        class FusedLinearCrossEntropy(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, weight, labels):
                rows, width = x.shape
                vocab = weight.shape[0]
                w = weight if weight.dtype == x.dtype else weight.to(x.dtype)
                chunk = 1 << max(0, math.ceil(math.log2(math.ceil(rows / math.ceil(vocab / width)))))
                grad_input = torch.zeros_like(x)
                grad_weight = torch.zeros_like(weight) if weight.requires_grad else None
                loss_1d = torch.zeros(rows, dtype=torch.float32, device=x.device)
                for start in range(0, rows, chunk):
                    part = x[start:start + chunk]
                    logits = part @ w.t()  # the kernel writes the loss and the logits' gradient in place
                    grad_input[start:start + chunk] = logits @ w
                    if grad_weight is not None:
                        grad_weight.addmm_(logits.t().to(part.dtype), part)
                    del logits
                ctx.save_for_backward(grad_input, grad_weight)
                return loss_1d.sum() / rows

            @staticmethod
            def backward(ctx, grad):  # grad is 1 for the mean loss: Liger skips the multiplication
                grad_input, grad_weight = ctx.saved_tensors
                return grad_input, grad_weight, None

        _FUSED_FN = FusedLinearCrossEntropy
    return _FUSED_FN


def _category(k, tracker, param_keys, grad_keys, state_keys) -> str:
    if k in param_keys:
        return "parameters"
    if k in grad_keys:
        return "gradients"
    if k in state_keys:
        return "optimizer_state"
    phase = tracker.phases[tracker.alloc_phase[k]]
    if phase.startswith("loss"):
        return "logits_loss"
    if phase.startswith("forward") or phase.endswith("(recompute)"):
        return "activations"
    return "temporaries"


def _wrap_checkpoint(checkpoint_func, index: int, tracker, autocast):
    """The layer's checkpoint function runs the layer in forward and again in backward (the recompute): the
    recompute gets the autocast state of the forward and a fresh cast cache, as torch.utils.checkpoint does."""
    def run_checkpointed(function, *args, **kwargs):
        forward_autocast = autocast.enabled

        def layer_forward(*inner_args, **inner_kwargs):
            phase = tracker.phases[tracker.phase]
            if phase.startswith("backward"):
                tracker.set_phase(f"backward, layer {index} (recompute)")
                # the autograd engine runs the recompute without the torch-function mode stack: enter it again
                import torch

                mode = autocast if torch._C._len_torch_function_stack() == 0 else contextlib.nullcontext()
                try:  # the recompute stops early by raising once it has what backward needs
                    with mode, autocast.region(forward_autocast, fresh=True):
                        return function(*inner_args, **inner_kwargs)
                finally:
                    tracker.set_phase(f"backward, layer {index}")
            return function(*inner_args, **inner_kwargs)

        return checkpoint_func(layer_forward, *args, **kwargs)

    return run_checkpointed
