"""Model architecture specs: the few config.json numbers the memory, time and cost estimates need.

Built-in specs live in data/models.json; any Hugging Face config (local file, folder holding config.json, or a hub
id when online) is read into the same ModelSpec. Parameter counts are computed from the architecture, never
looked up, so a custom config gets the same treatment as a built-in one.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path

from pipeline.core.env import set_defaults
from pipeline.core.resources import resource

DATA_FILE = resource("models.json")

# Families whose MLP is a plain two-matrix feed-forward (no gate) and whose linears/norms carry biases.
NON_GATED_FAMILIES = {"gpt2", "gpt_neox", "gptj", "opt", "bloom", "falcon", "phi", "starcoder2", "gpt_bigcode"}
LEARNED_POSITION_FAMILIES = {"gpt2", "opt", "gpt_bigcode"}
QKV_BIAS_FAMILIES = {"qwen2", "qwen2_moe"}
QK_NORM_FAMILIES = {"qwen3", "qwen3_moe", "gemma3", "gemma3_text", "olmo2"}
FOUR_NORM_FAMILIES = {"gemma2", "gemma3", "gemma3_text", "olmo2"}


@dataclass(frozen=True)
class ModelSpec:
    name: str
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    vocab_size: int
    tie_word_embeddings: bool = False
    max_position_embeddings: int = 4096
    head_dim: int | None = None              # None: hidden_size // num_attention_heads
    model_type: str = "llama"
    num_experts: int = 0                     # 0: dense MLP
    num_experts_per_tok: int = 0
    moe_intermediate_size: int | None = None  # per-expert width; None: intermediate_size
    shared_expert_intermediate_size: int = 0
    mlp_gated: bool = True                   # SwiGLU/GeGLU (gate, up, down) vs fc1/fc2
    attention_bias: bool = False             # biases on q, k, v
    o_bias: bool = False
    mlp_bias: bool = False
    norm_bias: bool = False                  # LayerNorm (weight + bias) vs RMSNorm (weight)
    norms_per_layer: int = 2
    qk_norm: bool = False
    learned_positions: int = 0
    final_logit_softcapping: float | None = None
    published_params: int | None = None      # model card total, kept only to test param_count()

    @property
    def head_size(self) -> int:
        return self.head_dim or self.hidden_size // self.num_attention_heads

    @property
    def q_dim(self) -> int:
        return self.num_attention_heads * self.head_size

    @property
    def kv_dim(self) -> int:
        return self.num_key_value_heads * self.head_size

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 1

    @property
    def expert_intermediate(self) -> int:
        return self.moe_intermediate_size or self.intermediate_size

    def linear_modules(self) -> list[tuple[str, int, int, int]]:
        """(name, in_features, out_features, copies) for the linear layers of one decoder layer.
        Names follow the Llama convention so LoRA targets can be matched whatever the family calls them."""
        h, i = self.hidden_size, self.expert_intermediate
        mods = [("q_proj", h, self.q_dim, 1), ("k_proj", h, self.kv_dim, 1),
                ("v_proj", h, self.kv_dim, 1), ("o_proj", self.q_dim, h, 1)]
        experts = self.num_experts if self.is_moe else 1
        if self.mlp_gated:
            mods += [("gate_proj", h, i, experts), ("up_proj", h, i, experts), ("down_proj", i, h, experts)]
        else:
            mods += [("up_proj", h, i, experts), ("down_proj", i, h, experts)]
        if self.is_moe:
            mods.append(("router", h, self.num_experts, 1))
        if self.shared_expert_intermediate_size:
            si = self.shared_expert_intermediate_size
            mods += [("shared_gate_proj", h, si, 1), ("shared_up_proj", h, si, 1), ("shared_down_proj", si, h, 1),
                     ("shared_expert_gate", h, 1, 1)]
        return mods


def param_breakdown(spec: ModelSpec) -> dict[str, int]:
    """Parameter counts by part. 'layer_linear' is what 4-/8-bit quantization applies to (every nn.Linear in the
    decoder layers); embeddings, lm_head, norms and biases stay in 16 bits."""
    h, L = spec.hidden_size, spec.num_hidden_layers
    mods = spec.linear_modules()
    linear = sum(fi * fo * n for _, fi, fo, n in mods)
    expert_linear = sum(fi * fo * n for name, fi, fo, n in mods
                        if spec.is_moe and name in ("gate_proj", "up_proj", "down_proj"))
    bias = (spec.q_dim + 2 * spec.kv_dim) * spec.attention_bias + h * spec.o_bias
    if spec.mlp_bias:
        bias += sum(fo * n for name, _, fo, n in mods if name in ("gate_proj", "up_proj", "down_proj"))
    norm_width = 2 if spec.norm_bias else 1
    norms = spec.norms_per_layer * h * norm_width + (2 * spec.head_size if spec.qk_norm else 0)
    embed = spec.vocab_size * h + spec.learned_positions * h
    lm_head = 0 if spec.tie_word_embeddings else spec.vocab_size * h
    final_norm = h * norm_width
    total = embed + lm_head + final_norm + L * (linear + bias + norms)
    inactive = 0
    if spec.is_moe and spec.num_experts_per_tok:
        inactive = L * expert_linear * (spec.num_experts - spec.num_experts_per_tok) // spec.num_experts
    return {
        "total": total,
        "embedding": embed,
        "lm_head": lm_head,
        "layer_linear": L * linear,
        "layer_other": L * (bias + norms) + final_norm,  # biases and norms
        "per_layer": linear + bias + norms,
        "active": total - inactive,
        # Weights that take part in matmuls for one token: FLOPs are ~2 x this per forward token. The input
        # embedding is a lookup (no FLOPs); the output projection is a matmul even when tied.
        "matmul_active": total - inactive - embed + spec.vocab_size * h,
    }


def param_count(spec: ModelSpec) -> int:
    return param_breakdown(spec)["total"]


# ---------------------------------------------------------------- loading

def _first(cfg: dict, *keys, default=None):
    for key in keys:
        if cfg.get(key) is not None:
            return cfg[key]
    return default


def spec_from_config(cfg: dict, name: str = "custom") -> ModelSpec:
    """A ModelSpec from a Hugging Face config.json dict (also accepts the GPT-2 style key names)."""
    if _first(cfg, "hidden_size", "n_embd", "d_model") is None and isinstance(cfg.get("text_config"), dict):
        cfg = {**cfg["text_config"], "model_type": cfg["text_config"].get("model_type", cfg.get("model_type"))}
    if cfg.get("kv_lora_rank") or cfg.get("q_lora_rank"):
        raise ValueError(f"{name}: multi-head latent attention (DeepSeek-style kv_lora_rank) is not supported")
    model_type = str(cfg.get("model_type", "llama"))
    h = _first(cfg, "hidden_size", "n_embd", "d_model")
    layers = _first(cfg, "num_hidden_layers", "n_layer", "num_layers")
    heads = _first(cfg, "num_attention_heads", "n_head", "num_heads")
    vocab = cfg.get("vocab_size")
    missing = [k for k, v in {"hidden_size": h, "num_hidden_layers": layers,
                              "num_attention_heads": heads, "vocab_size": vocab}.items() if v is None]
    if missing:
        raise ValueError(f"{name}: config lacks {', '.join(missing)}")
    kv = _first(cfg, "num_key_value_heads", "num_kv_heads", "n_head_kv")
    if kv is None:
        kv = 1 if cfg.get("multi_query") else heads
    gated = model_type not in NON_GATED_FAMILIES
    experts = int(_first(cfg, "num_local_experts", "num_experts", "n_routed_experts", default=0) or 0)
    return ModelSpec(
        name=name,
        model_type=model_type,
        hidden_size=int(h),
        intermediate_size=int(_first(cfg, "intermediate_size", "n_inner", "ffn_dim", default=4 * h) or 4 * h),
        num_hidden_layers=int(layers),
        num_attention_heads=int(heads),
        num_key_value_heads=int(kv),
        head_dim=cfg.get("head_dim"),
        vocab_size=int(vocab),
        # transformers' default is to tie when the key is absent
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", True)),
        max_position_embeddings=int(_first(cfg, "max_position_embeddings", "n_positions", "seq_length",
                                           default=4096)),
        num_experts=experts,
        num_experts_per_tok=int(_first(cfg, "num_experts_per_tok", "moe_top_k", default=0) or 0),
        moe_intermediate_size=cfg.get("moe_intermediate_size"),
        shared_expert_intermediate_size=int(cfg.get("shared_expert_intermediate_size") or 0),
        mlp_gated=gated,
        attention_bias=bool(cfg.get("attention_bias", cfg.get("qkv_bias", model_type in QKV_BIAS_FAMILIES
                                                                 or not gated))),
        o_bias=bool(cfg.get("attention_bias", not gated)) and model_type not in QKV_BIAS_FAMILIES,
        mlp_bias=bool(cfg.get("mlp_bias", not gated)),
        norm_bias=not gated,
        norms_per_layer=4 if model_type in FOUR_NORM_FAMILIES else 2,
        qk_norm=model_type in QK_NORM_FAMILIES,
        learned_positions=int(_first(cfg, "n_positions", "max_position_embeddings", default=0))
        if model_type in LEARNED_POSITION_FAMILIES else 0,
        final_logit_softcapping=cfg.get("final_logit_softcapping"),
    )


@lru_cache(maxsize=1)
def builtin_table() -> dict[str, dict]:
    return json.loads(DATA_FILE.read_text())["models"]


def _norm_key(name: str) -> str:
    return name.strip().lower()


def _loose_key(name: str) -> str:
    """Drop the hub organisation and chat/instruct suffixes: 'meta-llama/Llama-3.1-8B-Instruct' -> 'llama-3.1-8b'."""
    key = _norm_key(name).rsplit("/", 1)[-1]
    return re.sub(r"(-(hf|instruct|chat|it|base))+$", "", key)


def builtin_models() -> list[str]:
    return list(builtin_table())


def builtin_aliases(name: str) -> list[str]:
    return list(builtin_table()[name].get("aliases", []))


def builtin_spec(name: str) -> ModelSpec | None:
    table = builtin_table()
    known = {f.name for f in fields(ModelSpec)}
    for pass_key in (_norm_key, _loose_key):
        wanted = pass_key(name)
        for canonical, entry in table.items():
            if wanted in {pass_key(canonical), *(pass_key(a) for a in entry.get("aliases", []))}:
                return ModelSpec(name=canonical, **{k: v for k, v in entry.items() if k in known})
    return None


def _spec_from_file(path: Path, name: str) -> ModelSpec:
    try:
        cfg = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read model config {path}: {exc}") from None
    if not isinstance(cfg, dict):
        raise ValueError(f"{path} is not a config object")
    return spec_from_config(cfg, name=cfg.get("_name_or_path") or name)


def _spec_from_hub(repo_id: str) -> ModelSpec:
    set_defaults()  # no "PyTorch was not found" banner
    try:
        from transformers import AutoConfig  # imported here: slow, and only needed for hub ids
    except ImportError:
        raise ValueError(f"{repo_id}: transformers is not installed; pass a local config.json instead") from None
    try:
        cfg = AutoConfig.from_pretrained(repo_id)
    except Exception as exc:  # offline, gated repo, typo: all surface as one clear line
        raise ValueError(f"cannot fetch the config of {repo_id!r} from the Hugging Face hub ({type(exc).__name__}); "
                         f"offline or gated? Pass a local config.json, or one of: "
                         f"{', '.join(builtin_models())}") from None
    return spec_from_config(cfg.to_dict(), name=repo_id)


def load_model_spec(name_or_path: str | ModelSpec) -> ModelSpec:
    """A built-in name or alias (case-insensitive), a config JSON file of any name, a folder holding config.json,
    or a hub id (needs network and transformers)."""
    if isinstance(name_or_path, ModelSpec):
        return name_or_path
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ValueError(f"{path} holds no config.json")
        return _spec_from_file(path / "config.json", path.name)
    if path.is_file():
        return _spec_from_file(path, path.stem)
    spec = builtin_spec(str(name_or_path))
    if spec is not None:
        return spec
    if re.fullmatch(r"[\w.\-]+/[\w.\-]+", str(name_or_path)):
        return _spec_from_hub(str(name_or_path))
    raise ValueError(f"unknown model {name_or_path!r}: not a file, folder or hub id; built-in: "
                     f"{', '.join(builtin_models())}")
