"""The config.json of a model, for the tracer to build it from (no torch)."""
from __future__ import annotations

import json
from pathlib import Path

from pipeline.core.models import builtin_spec, builtin_table

# ModelSpec field -> config.json key, where the built-in table's name differs from the model family's.
_SPEC_TO_CONFIG = {"num_experts": {"mixtral": "num_local_experts", "phimoe": "num_local_experts"}}


def hf_config_dict(model: str) -> tuple[dict, str]:
    """(config.json dict, name) for a config file, a folder holding config.json, a built-in model name, or a hub
    id (needs network). Built-in models are rebuilt from their spec in data/models.json: those numbers are the
    config.json values, and the family's defaults fill in the rest."""
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
