"""The `prepare` command: run, serve, precheck, estimate, gpus.

Errors are one line on stderr and a non-zero exit, never a traceback. With --json, stdout holds only
the JSON document; logs and progress go to stderr.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the config module imports pydantic: loaded only when a command needs it
    from .config import PrepareConfig

EXIT_ERROR, EXIT_POLICY = 2, 3


def _fail(message: str, code: int = EXIT_ERROR) -> int:
    print(f"prepare: error: {message}", file=sys.stderr)
    return code


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="files, folders, globs or s3:// URIs")
    p.add_argument("--out", help="run directory (default: runs/latest)")
    p.add_argument("--s3", metavar="URI", help="upload shards, then the manifest, to s3://bucket/prefix")
    p.add_argument("--config", metavar="FILE", help="JSON (or YAML) config; flags override it")
    p.add_argument("--validation", nargs="+", metavar="FILE", default=None,
                   help="evaluation sets: kept whole as validation; their duplicates are removed from train")
    p.add_argument("--workers", type=int, help="worker processes (default 2)")
    p.add_argument("--model", help="model for the length cap and the GPU plan (built-in name or config.json)")
    p.add_argument("--method", choices=["full", "lora", "qlora"], help="fine-tuning method for the GPU plan")
    p.add_argument("--tokenizer", help="tokenizer path or hub id (default: from --model, else offline Mistral 32k)")
    p.add_argument("--skip-unreadable", action="store_true", help="report unreadable inputs and go on")
    for stage in ("dedup", "pii", "lengths", "estimate"):
        p.add_argument(f"--no-{stage}", action="store_true", help=f"turn the {stage} step off")
    p.add_argument("--dask-address", metavar="tcp://HOST:PORT",
                   help="run as a Prefect flow on this Dask cluster instead of local worker processes")
    p.add_argument("--json", action="store_true", help="print the report as JSON on stdout")


def config_from_args(args) -> PrepareConfig:
    from .config import load_config

    cfg = load_config(args.config, inputs=args.inputs, out=args.out, s3=args.s3,
                      validation_inputs=args.validation, workers=args.workers)
    if args.skip_unreadable:
        cfg.read.skip_unreadable = True
    if args.model:
        cfg.estimate.model = args.model
    if args.method:
        cfg.estimate.method = args.method
    if args.tokenizer:
        cfg.lengths.tokenizer = args.tokenizer
    for stage in ("dedup", "pii", "lengths", "estimate"):
        if getattr(args, f"no_{stage}"):
            getattr(cfg, stage).enabled = False
    return cfg


def summary_text(report: dict, manifest_uri: str | None, run_dir: str) -> str:
    c = report["counts"]
    lines = [f"run directory: {run_dir}",
             f"records: {c['input']} in, {c['kept']} kept, {c['quarantined']} quarantined, "
             f"{sum(c['dropped'].values())} dropped",
             f"splits: train {c['splits']['train']} rows, validation {c['splits']['validation']} rows"]
    for reason, n in c["dropped"].items():
        lines.append(f"  dropped   {reason:<22} {n}")
    for reason, n in c["quarantined_by_reason"].items():
        lines.append(f"  quarantined {reason:<20} {n}")
    lengths = report.get("lengths")
    if lengths:
        from .histogram import render_lengths_text

        lines.append(render_lengths_text(lengths))
    plan = report.get("plan")
    if plan:
        from .gpus import render_plan_text

        lines.append(render_plan_text(plan))
    if manifest_uri:
        lines.append(f"manifest: {manifest_uri}")
    return "\n".join(lines)


def cmd_run(args) -> int:
    from .readers import UnreadableInput
    from .runner import PrepareError, run_prepare

    cfg = config_from_args(args)
    try:
        if args.dask_address:
            from flows.prepare import run_flow  # the Prefect front end; pipeline itself never imports it

            result = run_flow(cfg, dask_address=args.dask_address)
        else:
            result = run_prepare(cfg, progress=sys.stderr.isatty())
    except UnreadableInput as exc:
        return _fail(str(exc))
    except PrepareError as exc:
        return _fail(str(exc))
    except Exception as exc:  # noqa: BLE001 - one line, no traceback, no record content
        from .pii import PiiPolicyError
        from .s3 import S3Error

        if isinstance(exc, PiiPolicyError):
            return _fail(f"kvkk strict policy: {exc}", EXIT_POLICY)
        if isinstance(exc, S3Error):
            return _fail(str(exc))
        raise
    if args.json:
        print(json.dumps({**result.report, "manifest_uri": result.manifest_uri}, ensure_ascii=False))
    else:
        print(summary_text(result.report, result.manifest_uri, str(result.run_dir)))
    return 0


def cmd_serve(args) -> int:
    from flows.prepare import DEMO_DEFAULTS, serve  # the Prefect front end

    defaults = DEMO_DEFAULTS
    if args.config or args.s3:
        from .config import load_config

        defaults = load_config(args.config, **({"s3": args.s3} if args.s3 else {}))
        defaults.inputs = defaults.inputs or DEMO_DEFAULTS.inputs
    serve(limit=args.limit, defaults=defaults)
    return 0


def build_parser() -> argparse.ArgumentParser:
    from . import estimate_cli, precheck

    parser = argparse.ArgumentParser(prog="prepare", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="prepare a dataset: normalize, clean, dedup, strip PII, measure, shard, upload")
    add_run_arguments(run)
    run.set_defaults(func=cmd_run)
    serve = sub.add_parser("serve", help="serve the Prefect deployment prepare/dataset (needs PREFECT_API_URL)")
    serve.add_argument("--limit", type=int, default=2, help="concurrent flow runs")
    serve.add_argument("--config", metavar="FILE", help="default parameters of the deployment (JSON config)")
    serve.add_argument("--s3", metavar="URI", help="default S3 destination of the deployment")
    serve.set_defaults(func=cmd_serve)
    precheck.register(sub)
    estimate_cli.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")  # Presidio's e-mail check must not go online
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")  # "PyTorch was not found": by design
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)


if __name__ == "__main__":
    sys.exit(main())
