"""Argument helpers shared by the subcommands. A flag that stands for a config field (add_config_flag) takes its
type, choices and help from that field (its description: one text for the CLI and docs/configuration.md),
defaults to None ("not given": the --config file or the field's default wins), and its value goes into the
config's overrides (config_overrides), validated there with the rest."""
from __future__ import annotations

import argparse
import typing
from typing import Literal

CONFIG_FLAGS = "config_flags"  # the parser default holding {dest: (dotted config key, flag)}

# the estimator's settings, for `run` and `precheck`: EstimateConfig fields of the same names
PLAN_FLAGS = ("cross_entropy", "framework", "adapter_dtype", "lora_rank", "lora_targets", "grad_ckpt", "attn",
              "optimizer", "micro_batch")


def literal_choices(model, name: str) -> list | None:
    """The values of a config field's Literal (also inside `Literal[...] | None`); None for other types."""
    annotation = model.model_fields[name].annotation
    literal = next((a for a in (annotation, *typing.get_args(annotation)) if typing.get_origin(a) is Literal), None)
    return list(typing.get_args(literal)) if literal is not None else None


def config_field(key: str):
    """(section model, field name) of a dotted config key such as "estimate.model"."""
    from pipeline.core.config import PrepareConfig

    model, *path = PrepareConfig, *key.split(".")
    for name in path[:-1]:
        model = model.model_fields[name].annotation
    return model, path[-1]


def _scalar_type(annotation):
    """int, float or str for a field's annotation (also inside `X | None` and `list[X]`); None for others."""
    for a in (annotation, *typing.get_args(annotation)):
        if a in (int, float, str):
            return a
    return None


def _shown(value) -> str:
    return ("on" if value else "off") if isinstance(value, bool) else str(value)


def config_flag_help(key: str, const=None) -> str:
    """A config flag's help: the field's description (the one text the config reference shows too), then the
    setting it stands for, and the value a store_const flag sets or else the field's default."""
    model, name = config_field(key)
    field = model.model_fields[name]
    if const is not None:
        setting = f"config {key}: {_shown(const)}"
    else:
        default = field.get_default(call_default_factory=True)
        setting = f"config {key}" + ("" if default in (None, [], {}) else f"; default {_shown(default)}")
    return f"{field.description.rstrip('.')} ({setting})".replace("%", "%%")


def add_config_flag(p: argparse.ArgumentParser, flag: str, key: str, **kwargs) -> None:
    """A flag for the config field `key`: default None, so that a flag left out never overrides the config file;
    help from the field's description, type and choices from its annotation (a bool field needs an action:
    store_const or BooleanOptionalAction)."""
    if "help" in kwargs or "default" in kwargs:
        raise TypeError(f"{flag}: a config flag's help is its field's description and its default is 'not given'")
    model, name = config_field(key)
    field = model.model_fields[name]
    if "action" not in kwargs:
        kwargs.setdefault("type", _scalar_type(field.annotation))
        if literal_choices(model, name):
            kwargs.setdefault("choices", literal_choices(model, name))
    action = p.add_argument(flag, default=None, help=config_flag_help(key, kwargs.get("const")), **kwargs)
    p.set_defaults(**{CONFIG_FLAGS: {**(p.get_default(CONFIG_FLAGS) or {}), action.dest: (key, flag)}})


def config_overrides(args: argparse.Namespace) -> tuple[dict, dict[str, str]]:
    """The config flags given on the command line: (nested overrides, {dotted key: flag}) for load_config."""
    overrides: dict = {}
    flags: dict[str, str] = {}
    for dest, (key, flag) in getattr(args, CONFIG_FLAGS, {}).items():
        value = getattr(args, dest)
        if value is None or value == []:  # an optional positional left out is [], not None
            continue
        *sections, name = key.split(".")
        node = overrides
        for section in sections:
            node = node.setdefault(section, {})
        node[name] = value
        flags[key] = flag
    return overrides, flags


def add_config_argument(p: argparse.ArgumentParser, help: str = "JSON (or YAML) config; flags override it") -> None:
    p.add_argument("--config", metavar="FILE", help=help)


def add_json_argument(p: argparse.ArgumentParser, help: str = "print only JSON on stdout") -> None:
    p.add_argument("--json", action="store_true", help=help)


def add_plan_arguments(p: argparse.ArgumentParser) -> None:
    """The estimator's settings; types are checked by argparse, ranges by the config."""
    for name in PLAN_FLAGS:
        extra = {"action": argparse.BooleanOptionalAction} if name == "grad_ckpt" else {}
        add_config_flag(p, "--" + name.replace("_", "-"), f"estimate.{name}", **extra)


def add_encoding_flag(p: argparse.ArgumentParser) -> None:
    add_config_flag(p, "--encoding", "read.encoding", metavar="CODEC")
