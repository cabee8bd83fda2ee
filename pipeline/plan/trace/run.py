"""The tracer's entry point (`prepare estimate --trace`, `prepare precheck --trace`): trace_step checks the
settings, builds the model, runs two training steps on the meta device and returns a TraceResult. The package doc
(pipeline.plan.trace) says what is traced and what stands in. This module imports no torch: trace_available and
INSTALL_HINT answer without it, and trace_step imports the tracing modules only once torch is known to be there."""
from __future__ import annotations

import importlib.util
import time
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pipeline.plan.memory import GIB, METHODS, PRECISIONS, load_constants, resolve_constants
from pipeline.plan.setup import CROSS_ENTROPY, framework_preset
from pipeline.plan.trace.model_config import hf_config_dict

if TYPE_CHECKING:
    from pipeline.plan.trace.tracker import Replay

INSTALL_HINT = "the tracer needs the 'trace' extra: pip install -e '.[trace]' (torch, peft)"
# The CUDA caching allocator hands out blocks in multiples of 512 bytes, and max_memory_allocated counts blocks.
CUDA_BLOCK = 512
TRACED_OPTIMIZERS = ("adamw", "adamw_foreach", "sgd")


class TraceUnavailable(RuntimeError):
    """torch or peft is not installed."""


def trace_available() -> bool:
    try:
        return all(importlib.util.find_spec(m) is not None for m in ("torch", "peft", "transformers"))
    except (ImportError, ValueError):  # a module set to None in sys.modules: blocked
        return False


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
    replay: Replay | None = field(default=None, repr=False, compare=False)  # this trace's storages, to inspect

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

    def explain_live(self, which: str = "peak_live", skip=("parameters", "optimizer_state")) -> list[str]:
        """The storages live at this trace's peak ('peak_live') or forward end ('end_live'), one line each
        (tracker.Replay.explain_live)."""
        return self.replay.explain_live(which, skip)


def _import_torch():
    try:
        import peft  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        raise TraceUnavailable(INSTALL_HINT) from None


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
    _import_torch()
    # these modules import torch: only now that it is known to be installed
    from pipeline.plan.trace.build import build_model
    from pipeline.plan.trace.stand_ins import Autocast, patched_for_meta
    from pipeline.plan.trace.steps import run_steps
    from pipeline.plan.trace.tracker import Tracker

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
    tracker, autocast = Tracker(block), Autocast()  # this trace's state, passed to what needs it
    with patched_for_meta(autocast), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecation notices of transformers/PEFT are not the user's business
        dropout = preset.lora_dropout if method != "full" else 0.0
        options = dict(adapter_dtype=adapter_dtype, kbit_upcast=preset.kbit_upcast, autocast=preset.autocast,
                       cross_entropy=cross_entropy)
        try:
            built = build_model(config, method, attn, grad_ckpt, lora_rank, lora_targets, precision, double_quant,
                                dropout, constants, **options)
        except ValueError as exc:
            if "lora_dropout" not in str(exc):
                raise
            # PEFT wraps fused expert weights (3D parameters) with a ParamWrapper that refuses dropout
            dropout = 0.0
            built = build_model(config, method, attn, grad_ckpt, lora_rank, lora_targets, precision, double_quant,
                                dropout, constants, **options)
            built["notes"].append(f"PEFT's ParamWrapper for the fused expert weights refuses LoRA dropout: traced "
                                  f"with lora_dropout 0 (not {preset.lora_dropout})")
        traced = run_steps(built, tracker, autocast, seq_len, micro_batch, optimizer)
    settings = {"seq_len": seq_len, "micro_batch": micro_batch, "grad_ckpt": grad_ckpt, "attn": attn,
                "optimizer": optimizer, "precision": precision if method == "full" else None,
                "block_bytes": block, "steps_traced": 2, "framework": framework, "cross_entropy": cross_entropy}
    if method != "full":
        settings.update(lora_rank=lora_rank, lora_targets=built["targets"], lora_dropout=dropout,
                        adapter_dtype=adapter_dtype)
    if method == "qlora":
        settings["double_quant"] = double_quant
    return TraceResult(model=name, method=method, settings=settings, code_path=built["code_path"],
                       peak_allocated=traced.replay.peak, peak_phase=traced.replay.peak_phase,
                       at_peak=traced.at_peak, at_forward_end=traced.at_forward_end, sizes=traced.sizes,
                       phases=traced.replay.phases, seconds=time.perf_counter() - started, notes=built["notes"],
                       replay=traced.replay)
