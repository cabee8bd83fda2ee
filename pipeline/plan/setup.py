"""One training step to estimate (TrainingSetup) and the training stacks whose defaults fill it (presets).

A preset names what a stack's code does by default, each field read from the code linked next to it; an
explicit setting (CLI flag, config key) overrides the preset's value. The estimator (pipeline.plan.memory) takes
one validated TrainingSetup and nothing else.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Literal

from pipeline.core.config import CROSS_ENTROPY, FRAMEWORKS, CrossEntropy, FrameworkName  # noqa: F401  (the settings name them)
from pipeline.core.models import ModelSpec, load_model_spec


@dataclass(frozen=True)
class FrameworkPreset:
    name: str
    description: str
    cross_entropy: str                 # one of CROSS_ENTROPY
    adapter_dtype: Literal["fp32", "bf16"]
    full_precision: Literal["mixed", "bf16"]   # full FT: fp32 master + fp32 states (mixed) or all bf16
    optimizer: str                     # default optimizer (pipeline.plan.memory.OPTIMIZERS)
    fused_optimizer: bool              # fused AdamW: no state-sized temporaries in step()
    ckpt_mode: Literal["non_reentrant", "reentrant", "offload"]  # how layers are checkpointed when ckpt is on
    kbit_upcast: Literal["all", "norms", "none"]  # QLoRA: which unquantized weights are cast to fp32
    autocast: bool                     # bf16 autocast around the forward (the Trainer's bf16=True)
    lora_dropout: float
    sources: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        return asdict(self)


# The preset fields between description and sources, in the column order of _PRESET_TABLE's rows.
_PRESET_COLUMNS = ("cross_entropy", "adapter_dtype", "full_precision", "optimizer", "fused_optimizer", "ckpt_mode",
                   "kbit_upcast", "autocast", "lora_dropout")

# name: (description, (loss, adapter, full FT, optimizer, fused, checkpointing, kbit upcast, autocast, dropout),
#        the code each value is read from)
_PRESET_TABLE = {
    # Trainer + PEFT + TRL SFTTrainer. ForCausalLMLoss does `logits = logits.float()` before cross_entropy;
    # PEFT get_peft_model(autocast_adapter_dtype=True) keeps bf16-model adapters in fp32; TrainingArguments.optim
    # defaults to adamw_torch_fused on torch >= 2.8; PreTrainedModel.gradient_checkpointing_enable uses
    # {"use_reentrant": False} unless given; peft.prepare_model_for_kbit_training casts every non-quantized
    # parameter (embeddings, norms, lm_head) to fp32, so the residual stream and the logits become fp32.
    "hf": ("Hugging Face Trainer / TRL SFTTrainer with PEFT",
           ("standard", "fp32", "mixed", "adamw", True, "non_reentrant", "all", True, 0.05),
           ("https://github.com/huggingface/transformers/blob/v5.0.0/src/transformers/loss/loss_utils.py",
            "https://github.com/huggingface/transformers/blob/v5.0.0/src/transformers/training_args.py",
            "https://github.com/huggingface/peft/blob/v0.17.0/src/peft/utils/other.py",
            "https://github.com/huggingface/trl/blob/v0.24.0/trl/trainer/sft_trainer.py")),
    # axolotl: an HF Trainer subclass; its LoRA/QLoRA loader keeps the PEFT defaults and, for QLoRA with
    # flash/sdpa attention, casts norms to fp32 and embed_tokens/lm_head back to bf16. Its plugins (liger,
    # cut_cross_entropy) switch the loss to fused.
    "axolotl": ("axolotl (HF Trainer subclass, PEFT adapters)",
                ("standard", "fp32", "mixed", "adamw", True, "non_reentrant", "norms", True, 0.05),
                ("https://github.com/axolotl-ai-cloud/axolotl/blob/main/src/axolotl/loaders/model.py",
                 "https://github.com/axolotl-ai-cloud/axolotl/blob/main/src/axolotl/core/builders/causal.py")),
    # LLaMA-Factory: CustomSeq2SeqTrainer (HF Trainer); init_adapter casts trainable params to fp32; its own
    # prepare_model_for_training (no peft kbit upcast; upcast_layernorm off by default); reentrant checkpointing.
    # enable_liger_kernel switches the loss to fused.
    "llamafactory": ("LLaMA-Factory (HF Trainer subclass, PEFT adapters)",
                     ("standard", "fp32", "mixed", "adamw", True, "reentrant", "none", True, 0.0),
                     ("https://github.com/hiyouga/LLaMA-Factory/blob/main/src/llamafactory/model/adapter.py",
                      "https://github.com/hiyouga/LLaMA-Factory/blob/main/src/llamafactory/model/model_utils/"
                      "checkpointing.py",
                      "https://github.com/hiyouga/LLaMA-Factory/blob/main/src/llamafactory/hparams/"
                      "finetuning_args.py")),
    # Unsloth: fused cross-entropy kernel, adapters in the model dtype, "unsloth" gradient checkpointing offloads
    # the layer inputs to CPU, 8-bit AdamW in its notebooks, no fp32 upcast of the 4-bit model's other weights.
    "unsloth": ("Unsloth (patched HF model, TRL trainer)",
                ("fused", "bf16", "bf16", "adamw8bit", True, "offload", "none", True, 0.0),
                ("https://github.com/unslothai/unsloth/blob/main/unsloth/models/llama.py",
                 "https://github.com/unslothai/unsloth-zoo/blob/main/unsloth_zoo/gradient_checkpointing.py",
                 "https://github.com/unslothai/unsloth/blob/main/unsloth/kernels/cross_entropy_loss.py")),
    # torchtune recipes: bf16 everywhere (dtype: bf16), CEWithChunkedOutputLoss (8 chunks), AdamW(fused=True),
    # per-layer activation checkpointing, NF4 via torchao without fp32 casts.
    "torchtune": ("torchtune recipes (own training loop)",
                  ("chunked", "bf16", "bf16", "adamw", True, "non_reentrant", "none", False, 0.0),
                  ("https://github.com/pytorch/torchtune/blob/main/torchtune/modules/loss/ce_chunked_output_loss.py",
                   "https://github.com/pytorch/torchtune/blob/main/recipes/configs/llama3_1/8B_lora_single_device.yaml",
                   "https://github.com/pytorch/torchtune/blob/main/recipes/lora_finetune_single_device.py")),
    # A hand-written loop: bf16 model, F.cross_entropy on the bf16 logits, torch.optim.AdamW's default (foreach)
    # implementation, which allocates state-sized temporaries in step(). Its adapters are bf16 (a model cast after
    # wrapping, or get_peft_model(..., autocast_adapter_dtype=False)); PEFT's default keeps them fp32, which
    # --adapter-dtype fp32 says (bench/gpu_peak measured that path).
    "plain": ("plain PyTorch loop (bf16 model, F.cross_entropy, torch.optim.AdamW)",
              ("bf16", "bf16", "bf16", "adamw", False, "non_reentrant", "none", False, 0.0),
              ("https://github.com/pytorch/pytorch/blob/v2.9.0/torch/optim/adamw.py",
               "https://github.com/pytorch/pytorch/blob/v2.9.0/torch/nn/functional.py")),
}
_PRESETS = {name: FrameworkPreset(name=name, description=description, sources=sources,
                                  **dict(zip(_PRESET_COLUMNS, values, strict=True)))
            for name, (description, values, sources) in _PRESET_TABLE.items()}
assert tuple(_PRESETS) == FRAMEWORKS


def framework_preset(name: str) -> FrameworkPreset:
    """The defaults of one training stack (hf, axolotl, llamafactory, unsloth, torchtune, plain)."""
    try:
        return _PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown framework {name!r}; choose one of {', '.join(FRAMEWORKS)}") from None


def preset_with(name: str, **changes) -> FrameworkPreset:
    return replace(framework_preset(name), **changes)


# ---------------------------------------------------------------- the training step to estimate

METHODS = ("full", "lora", "qlora")
# fa2 is FlashAttention-2: for memory the same as SDPA's flash backend (ATTN_ALIASES), for time its own kernel
ATTENTION = ("sdpa", "fa2", "eager")
OPTIMIZERS = ("adamw", "adamw8bit", "paged_adamw8bit", "sgd", "adafactor")
SHARDING = ("none", "ddp", "zero2", "zero3", "fsdp")
PRECISIONS = ("mixed", "bf16")
ATTN_ALIASES = {"flash": "sdpa", "flash_attention_2": "sdpa", "fa2": "sdpa"}


def _choice(value, allowed, what):
    if value not in allowed:
        raise ValueError(f"unknown {what} {value!r}; choose one of {', '.join(map(str, allowed))}")
    return value


@dataclass(frozen=True)
class TrainingSetup:
    """One training step, every knob resolved: built with TrainingSetup.build(), which validates the values and
    fills what is left None from the framework preset."""
    spec: object                       # pipeline.core.models.ModelSpec
    method: str
    seq_len: int
    micro_batch: int = 1
    grad_ckpt: bool = True
    attn: str = "sdpa"
    optimizer: str = "adamw"
    lora_rank: int = 16
    lora_targets: tuple[str, ...] = ()  # resolved Llama-style module names; () for full fine-tuning
    framework: str = "hf"
    cross_entropy: str = "standard"
    adapter_dtype: str = "fp32"
    lora_dropout: float = 0.0
    precision: str = "mixed"            # full fine-tuning only
    quantization: str | None = None     # frozen base of LoRA: None, int8, nf4 (qlora)
    double_quant: bool = True
    kbit_upcast: str = "none"           # quantized base: which other weights are fp32 (preset)
    autocast: bool = True
    fused_optimizer: bool = True
    gpus: int = 1
    sharding: str = "none"
    compile: bool = False
    optimizer_in_backward: bool = False
    activation_offload: bool = False

    @property
    def tokens(self) -> int:
        return self.seq_len * self.micro_batch

    @classmethod
    def build(cls, model, method: str = "lora", seq_len: int = 2048, micro_batch: int = 1, grad_ckpt: bool = True,
              attn: str = "sdpa", optimizer: str | None = None, lora_rank: int = 16, lora_targets="all-linear",
              gpus: int = 1, sharding: str | None = None, *, framework: str = "hf",
              cross_entropy: str | None = None, adapter_dtype: str | None = None, lora_dropout: float | None = None,
              precision: str | None = None, quantization: str | None = None, double_quant: bool = True,
              kbit_upcast: str | None = None, upcast_unquantized: bool = False, compile: bool = False,
              optimizer_in_backward: bool = False, activation_offload: bool | None = None) -> "TrainingSetup":
        preset = framework_preset(framework)
        spec = load_model_spec(model)
        _choice(method, METHODS, "method")
        attn = _choice(ATTN_ALIASES.get(attn, attn), ATTENTION, "attention")
        optimizer = _choice(optimizer or preset.optimizer, OPTIMIZERS, "optimizer")
        cross_entropy = _choice(cross_entropy or preset.cross_entropy, CROSS_ENTROPY, "cross-entropy")
        if not (isinstance(seq_len, int) and isinstance(micro_batch, int) and isinstance(gpus, int)) \
                or seq_len < 1 or micro_batch < 1 or gpus < 1:
            raise ValueError("seq_len, micro_batch and gpus must be integers >= 1")
        sharding = _choice((sharding or ("ddp" if gpus > 1 else "none")).lower(), SHARDING, "sharding")
        if gpus == 1:
            sharding = "none"
        quant = "nf4" if method == "qlora" else quantization
        if quant not in (None, "int8", "nf4"):
            raise ValueError(f"unknown quantization {quant!r}; choose int8 or nf4")
        if method == "full" and quant:
            raise ValueError("full fine-tuning trains the weights themselves: they cannot be quantized")
        precision = _choice(precision or preset.full_precision, PRECISIONS, "precision")
        if adapter_dtype not in (None, "fp32", "bf16"):
            raise ValueError(f"unknown adapter dtype {adapter_dtype!r}; choose fp32 or bf16")
        if kbit_upcast not in (None, "all", "norms", "none"):
            raise ValueError(f"unknown kbit upcast {kbit_upcast!r}; choose all, norms or none")
        if method == "full":
            targets: tuple[str, ...] = ()
            dropout = 0.0
        else:
            if not isinstance(lora_rank, int) or lora_rank < 1:
                raise ValueError("lora_rank must be an integer >= 1")
            targets = tuple(parse_lora_targets(lora_targets, spec))
            dropout = preset.lora_dropout if lora_dropout is None else float(lora_dropout)
            if not 0 <= dropout < 1:
                raise ValueError("lora_dropout must be in [0, 1)")
        upcast = kbit_upcast or ("all" if upcast_unquantized else preset.kbit_upcast)
        return cls(spec=spec, method=method, seq_len=seq_len, micro_batch=micro_batch, grad_ckpt=bool(grad_ckpt),
                   attn=attn, optimizer=optimizer, lora_rank=lora_rank, lora_targets=targets, framework=framework,
                   cross_entropy=cross_entropy, adapter_dtype=adapter_dtype or preset.adapter_dtype,
                   lora_dropout=dropout, precision=precision, quantization=quant, double_quant=bool(double_quant),
                   kbit_upcast=upcast if quant else "none", autocast=preset.autocast,
                   fused_optimizer=preset.fused_optimizer, gpus=gpus, sharding=sharding, compile=bool(compile),
                   optimizer_in_backward=bool(optimizer_in_backward),
                   activation_offload=preset.ckpt_mode == "offload" if activation_offload is None
                   else bool(activation_offload))


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
