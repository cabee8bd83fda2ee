"""Argument helpers shared by the subcommands. A flag that stands for a config field takes its choices and help
from that field (its `Literal`), and its value goes into the config's overrides, validated there with the rest."""
from __future__ import annotations

import argparse
import typing
from typing import Literal

# the estimator's settings, for `run` and `precheck`: EstimateConfig fields of the same names
PLAN_FLAGS = ("cross_entropy", "framework", "adapter_dtype", "lora_rank", "lora_targets", "grad_ckpt", "attn",
              "optimizer", "micro_batch")


def literal_choices(model, name: str) -> list | None:
    """The values of a config field's Literal (also inside `Literal[...] | None`); None for other types."""
    annotation = model.model_fields[name].annotation
    literal = next((a for a in (annotation, *typing.get_args(annotation)) if typing.get_origin(a) is Literal), None)
    return list(typing.get_args(literal)) if literal is not None else None


def field_help(model, name: str, default: str | None = None) -> str:
    return model.model_fields[name].description or default or name.replace("_", " ")


def add_method_argument(p: argparse.ArgumentParser, **kwargs) -> None:
    from ..config import EstimateConfig

    kwargs.setdefault("help", "fine-tuning method: full, lora (16-bit base) or qlora (4-bit NF4 base)")
    p.add_argument("--method", choices=literal_choices(EstimateConfig, "method"), **kwargs)


def add_config_argument(p: argparse.ArgumentParser, help: str = "JSON (or YAML) config; flags override it") -> None:
    p.add_argument("--config", metavar="FILE", help=help)


def add_json_argument(p: argparse.ArgumentParser, help: str = "print only JSON on stdout") -> None:
    p.add_argument("--json", action="store_true", help=help)


def add_plan_arguments(p: argparse.ArgumentParser) -> None:
    """The estimator's settings; types are checked by argparse, ranges by the config (plan_flags)."""
    from ..config import EstimateConfig

    for name in PLAN_FLAGS:
        flag = "--" + name.replace("_", "-")
        if name == "grad_ckpt":
            p.add_argument(flag, action=argparse.BooleanOptionalAction, default=None,
                           help="gradient checkpointing in the plan (default on)")
            continue
        kind = int if name in ("lora_rank", "micro_batch") else str
        p.add_argument(flag, type=kind, choices=literal_choices(EstimateConfig, name), default=None,
                       help=field_help(EstimateConfig, name, f"estimator setting {name}"))


def plan_flags(args: argparse.Namespace) -> dict:
    """The estimator flags given on the command line, as overrides of the config's estimate section."""
    return {name: getattr(args, name) for name in PLAN_FLAGS if getattr(args, name, None) is not None}


def add_encoding_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--encoding", metavar="CODEC",
                   help="text encoding of the inputs, e.g. cp1254, cp1251, utf-16 (default auto: detected per file)")
