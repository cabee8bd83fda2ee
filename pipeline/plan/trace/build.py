"""The model a trace runs, built as the training stack builds it: transformers from the config.json on the meta
device, the QLoRA preparation, PEFT's LoRA; what the build chose is written down as the trace's code path."""
from __future__ import annotations

import peft
import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

from pipeline.plan.memory import nf4_bytes_per_param
from pipeline.plan.trace.stand_ins import quantize_nf4, register_flash_stand_in


def decoder_layers(model, n_layers: int) -> list:
    for module in model.modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == n_layers:
            return list(module)
    raise ValueError("cannot find the decoder layers of this model")


def build_model(config: dict, method, attn, grad_ckpt, lora_rank, lora_targets, precision, double_quant,
                lora_dropout, constants, adapter_dtype="fp32", kbit_upcast="all", autocast=True,
                cross_entropy="standard") -> dict:
    """The model to trace and what the trace needs of it: its decoder layers, trainable parameters, the autocast
    and loss settings, the code path and notes."""
    hf_cfg, model_type = _hf_config(config)
    dtype = torch.float32 if method == "full" and precision == "mixed" else torch.bfloat16
    notes: list[str] = []
    model, implementation = _causal_lm(hf_cfg, model_type, dtype, attn, notes)
    model.train()
    n_layers = hf_cfg.num_hidden_layers
    attn_text = "FlashAttention-2 stand-in" if implementation != attn else f"{attn} attention"
    code_path = [f"transformers {transformers.__version__} {type(model).__name__}, {attn_text}, "
                 f"{'fp32' if dtype == torch.float32 else 'bf16'} weights"]
    autocast = autocast and (method != "full" or precision == "mixed")  # the Trainer's bf16=True
    if method == "qlora":
        _quantize(model, model_type, constants, double_quant, kbit_upcast, grad_ckpt, code_path, notes)
    if grad_ckpt:
        model.activation_checkpointing_enable() if hasattr(model, "activation_checkpointing_enable") \
            else model.gradient_checkpointing_enable()
        code_path.append("activation checkpointing of every decoder layer as transformers applies it "
                         "(torch.utils.checkpoint, non-reentrant: transformers' default)")
    targets = None
    if method != "full":
        model, targets = _add_lora(model, lora_rank, lora_targets, lora_dropout, adapter_dtype, code_path)
    else:
        code_path.append(f"full fine-tuning, {'fp32 weights + bf16 autocast' if precision == 'mixed' else 'bf16'}")
    if autocast:
        code_path.append("bf16 autocast as the Trainer's bf16=True (emulated: no autocast on the meta device)")
    code_path.append(LOSS_PATHS[cross_entropy])
    if cross_entropy == "fused":
        notes.append("fused cross-entropy traced with a stand-in of Liger's fused linear cross-entropy (its "
                     "chunking and buffers; the Triton kernel needs CUDA)")
    layers = decoder_layers(model, n_layers)
    trainable = [p for p in model.parameters() if p.requires_grad]
    return {"model": model, "layers": layers, "trainable": trainable, "autocast": autocast, "grad_ckpt": grad_ckpt,
            "code_path": code_path, "notes": notes, "targets": targets, "config": hf_cfg,
            "cross_entropy": cross_entropy}


def _hf_config(config: dict):
    """(transformers config of the text model, model_type) from a config.json dict."""
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
    return hf_cfg, model_type


def _causal_lm(hf_cfg, model_type: str, dtype, attn: str, notes: list[str]):
    """(the causal LM on the meta device, the attention implementation it runs)."""
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
        implementation = register_flash_stand_in()
        notes.append(f"{model_type} has no SDPA path in transformers {transformers.__version__}: traced with "
                     f"FlashAttention-2's memory (the kernel stands in, the model code is real)")
    return model, implementation


def _quantize(model, model_type: str, constants, double_quant: bool, kbit_upcast: str, grad_ckpt: bool,
              code_path: list[str], notes: list[str]) -> None:
    """The QLoRA base: NF4 linears (stand_ins.quantize_nf4), then the stack's preparation of a 4-bit model."""
    if any(p.dim() == 3 for p in model.parameters()):
        raise ValueError(f"QLoRA on {model_type} is not traced: its experts are fused 3-D weights, which the "
                         f"NF4 stand-in does not quantize; drop --trace for the analytical figure")
    per_param = nf4_bytes_per_param(constants, double_quant)
    quantized = quantize_nf4(model, per_param)
    model.is_loaded_in_4bit = True
    upcast_text = kbit_prepare(model, kbit_upcast, grad_ckpt)
    code_path.append(f"QLoRA: {quantized} linears as NF4 storage ({per_param:.4f} B/param, double quant "
                     f"{'on' if double_quant else 'off'}), bf16 dequantization temporaries in forward and "
                     f"backward (bitsandbytes' MatMul4Bit modelled: it needs CUDA); {upcast_text}")
    notes.append("QLoRA traced with modelled bitsandbytes layers: NF4-sized uint8 weights, one bf16 "
                 "dequantized weight live per matmul")


def _add_lora(model, lora_rank: int, lora_targets, lora_dropout: float, adapter_dtype: str, code_path: list[str]):
    """(the PEFT model with LoRA adapters in the dtype asked for, the target modules)."""
    targets = peft_targets(model, lora_targets)
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
    return model, targets


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


def kbit_prepare(model, kbit_upcast: str, grad_ckpt: bool) -> str:
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


def peft_targets(model, lora_targets):
    items = lora_targets.split(",") if isinstance(lora_targets, str) else list(lora_targets)
    items = [t.strip() for t in items if t.strip()]
    if not items:
        raise ValueError("no LoRA target modules given")
    if any(t.lower() in ("all-linear", "all_linear", "all") for t in items):
        return "all-linear"
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
