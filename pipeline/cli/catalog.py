"""`prepare gpus` (the GPU catalog of the planner) and `prepare models` (the built-in model specs)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from pipeline.cli.args import add_json_argument
from pipeline.cli.errors import UserError
from pipeline.cli.estimate import short_count
from pipeline.plan.gpus import catalog_rows, load_catalog, render_catalog_text


def register(sub) -> None:
    gpus = sub.add_parser("gpus", help="print the GPU catalog (memory, price, speed)",
                                 description="Print the GPU catalog used by the pre-check.")
    gpus.add_argument("--catalog", type=Path, default=None, help="your own catalog JSON (same format)")
    add_json_argument(gpus)
    gpus.set_defaults(func=cmd_gpus)

    models = sub.add_parser("models", help="list the built-in models (names and aliases for --model)",
                                   description="List the built-in model specs that --model takes by name.")
    add_json_argument(models)
    models.set_defaults(func=cmd_models)


def cmd_gpus(args: argparse.Namespace) -> int:
    try:
        catalog = load_catalog(args.catalog)
    except (ValueError, OSError) as exc:
        raise UserError(str(exc)) from None
    if args.json:
        print(json.dumps({"currency": catalog.currency, "price_basis": catalog.price_basis,
                          "source": catalog.source, "gpus": catalog_rows(catalog)}, indent=2))
    else:
        print(render_catalog_text(catalog), end="")
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from pipeline.core.models import builtin_aliases, builtin_models, builtin_spec, param_count

    rows = []
    for name in builtin_models():
        spec = builtin_spec(name)
        rows.append({"name": name, "model_type": spec.model_type, "params": param_count(spec),
                     "max_position_embeddings": spec.max_position_embeddings, "aliases": builtin_aliases(name)})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    width = max(len(r["name"]) for r in rows)
    print(f"{'model':<{width}}  {'type':<10} {'params':>8} {'context':>8}  aliases")
    for r in rows:
        print(f"{r['name']:<{width}}  {r['model_type']:<10} {short_count(r['params']):>8} "
              f"{r['max_position_embeddings']:>8}  {', '.join(r['aliases'])}")
    print("Any other model: --model path/to/config.json (or a folder holding one).")
    return 0
