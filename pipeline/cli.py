"""The `prepare` command: run, serve, precheck, estimate, gpus.

Errors are one line on stderr and a non-zero exit, never a traceback. With --json, stdout holds only
the JSON document; logs and progress go to stderr.
"""
from __future__ import annotations

import argparse
import errno
import json
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the config module imports pydantic: loaded only when a command needs it
    from .config import PrepareConfig

EXIT_ERROR, EXIT_POLICY = 2, 3


def _fail(message: str, code: int = EXIT_ERROR) -> int:
    print(f"prepare: error: {message}", file=sys.stderr)
    return code


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    from pipeline.plan.precheck import add_plan_arguments

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
    add_plan_arguments(p)
    p.add_argument("--skip-unreadable", action="store_true", help="report unreadable inputs and go on")
    p.add_argument("--follow-symlinks", action="store_true", help="read symlinks that point outside the input folder")
    p.add_argument("--allow-empty", action="store_true",
                   help="succeed (and upload) even when no record is kept; by default such a run fails")
    p.add_argument("--no-s3-check", action="store_true",
                   help="skip the S3 check before the run (HeadBucket: endpoint, credentials, bucket)")
    for stage in ("dedup", "pii", "lengths", "estimate"):
        p.add_argument(f"--no-{stage}", action="store_true", help=f"turn the {stage} step off")
    p.add_argument("--dask-address", metavar="tcp://HOST:PORT",
                   help="run as a Prefect flow on this Dask cluster instead of local worker processes")
    p.add_argument("--json", action="store_true", help="print the report as JSON on stdout")


def config_from_args(args) -> PrepareConfig:
    """The --config file with the flags merged over it; every value is validated once, here (ConfigError)."""
    from .config import load_config
    from pipeline.plan.precheck import plan_flags

    overrides: dict = {
        "inputs": args.inputs, "out": args.out, "s3": args.s3, "validation_inputs": args.validation,
        "workers": args.workers,
        "read": {"skip_unreadable": True if args.skip_unreadable else None,
                 "follow_symlinks": True if args.follow_symlinks else None},
        "estimate": {"model": args.model, "method": args.method, **plan_flags(args)},
        "lengths": {"tokenizer": args.tokenizer},
        "allow_empty": True if args.allow_empty else None,
        "s3_check": False if args.no_s3_check else None,
    }
    for stage in ("dedup", "pii", "lengths", "estimate"):
        if getattr(args, f"no_{stage}"):
            overrides.setdefault(stage, {})["enabled"] = False
    return load_config(args.config, **overrides)


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
        from pipeline.lengths.histogram import render_lengths_text

        lines.append(render_lengths_text(lengths))
    plan = report.get("plan")
    if plan:
        from pipeline.plan.gpus import render_plan_text

        lines.append(render_plan_text(plan))
    if manifest_uri:
        lines.append(f"manifest: {manifest_uri}")
    return "\n".join(lines)


def cmd_run(args) -> int:
    from .preflight import preflight
    from .runner import run_prepare

    cfg = config_from_args(args)
    preflight(cfg, log=lambda msg: print(msg, file=sys.stderr))  # before a record is read
    # the Prefect engine handles KeyboardInterrupt itself (it marks the flow run)
    previous = None if args.dask_address else _stop_on_ctrl_c()
    try:
        if args.dask_address:
            from flows.prepare import run_flow  # the Prefect front end; pipeline itself never imports it

            result = run_flow(cfg, dask_address=args.dask_address)
        else:
            result = run_prepare(cfg)  # stage progress: a bar on a terminal, periodic lines otherwise
    except OSError as exc:
        from .preflight import disk_full

        if disk_full(exc):  # finalize and upload write in this process: name the run directory
            raise UserError(f"no space left on device writing {cfg.out}"
                            + (" (disk quota exceeded)" if exc.errno == errno.EDQUOT else "")) from None
        raise
    finally:
        if previous is not None:  # main() called in-process (tests, a notebook) gets its own handler back
            signal.signal(signal.SIGINT, previous)
    if args.json:
        print(json.dumps({**result.report, "manifest_uri": result.manifest_uri}, ensure_ascii=False))
    else:
        print(summary_text(result.report, result.manifest_uri, str(result.run_dir)))
    return 0


def _stop_on_ctrl_c():
    """Ctrl-C during a local run: one line, exit 130, at once. KeyboardInterrupt made the main process wait for
    the running shards (the pool's shutdown) while every worker, which gets the terminal's SIGINT too, raised
    it wherever it was: tracebacks, a shard failing with a TypeError. The workers ignore SIGINT
    (rundir.worker_init) and die with this process; the same command resumes from the finished shards, as
    after a SIGKILL."""
    if threading.current_thread() is not threading.main_thread():
        return None
    # multiprocessing's resource tracker (a process of its own) outlives us, unlinks the pool's semaphores that
    # os._exit left and warns about each ("leaked semaphore objects"): the cleanup is right, the warning noise
    filters = [f for f in os.environ.get("PYTHONWARNINGS", "").split(",") if f]
    os.environ["PYTHONWARNINGS"] = ",".join([*filters, "ignore:resource_tracker:UserWarning"])

    def stop(signum, frame) -> None:
        print("prepare: error: interrupted (the same command resumes from the finished shards)", file=sys.stderr,
              flush=True)
        os._exit(130)

    return signal.signal(signal.SIGINT, stop)  # the handler it replaces


class UserError(Exception):
    """Raised by a command for main() to print as one line."""


def cmd_serve(args) -> int:
    from flows.prepare import DEMO_DEFAULTS, serve  # the Prefect front end

    defaults = DEMO_DEFAULTS
    if args.config or args.s3:
        from .config import load_config

        defaults = load_config(args.config, s3=args.s3)
        defaults.inputs = defaults.inputs or DEMO_DEFAULTS.inputs
    if defaults.s3:
        from .s3 import check_destination_uri

        check_destination_uri(defaults.s3)
    serve(limit=args.limit, defaults=defaults)
    return 0


def build_parser() -> argparse.ArgumentParser:
    from pipeline import estimate_cli
    from pipeline.plan import precheck

    parser = argparse.ArgumentParser(prog="prepare", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="prepare a dataset: normalize, clean, dedup, strip PII, measure, shard, upload")
    add_run_arguments(run)
    run.set_defaults(func=cmd_run)
    serve = sub.add_parser("serve", help="serve the Prefect deployment prepare/dataset (needs PREFECT_API_URL)")
    serve.add_argument("--limit", type=int, default=2, help="concurrent flow runs")
    serve.add_argument("--config", metavar="FILE", help="default parameters of the deployment (JSON or YAML config)")
    serve.add_argument("--s3", metavar="URI", help="default S3 destination of the deployment")
    serve.set_defaults(func=cmd_serve)
    precheck.register(sub)
    estimate_cli.register(sub)
    from .train import cli as train_cli  # checkpoints sync|pull, calibrate

    train_cli.register(sub)
    from . import show  # `prepare show`: records as the trainer sees them

    show.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")  # Presidio's e-mail check must not go online
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")  # "PyTorch was not found": by design
    try:
        parser = build_parser()  # imports the pipeline: a Ctrl-C here is an interruption too
        args = parser.parse_args(argv)
        return args.func(args)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except BrokenPipeError:
        # stdout closed by the reader (`prepare gpus | head`): not an error. Python would report the broken pipe
        # again when it flushes stdout at exit, hence stdout pointed at /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # noqa: BLE001 - every user error is one line; see _describe
        message, code = _describe(exc)
        if message is None:
            if os.environ.get("PREPARE_DEBUG") == "1":
                raise
            message = (f"internal error ({type(exc).__name__}); rerun with PREPARE_DEBUG=1 for the traceback "
                       f"(it may quote your data)")
        return _fail(message, code)


def _describe(exc: BaseException) -> tuple[str | None, int]:
    """(one line for the user, exit code) for the errors a user can cause and fix; (None, 2) for a bug."""
    from .config import ConfigError
    from .preflight import PreflightError
    from .readers import UnreadableInput
    from .runner import PrepareError
    from .s3 import S3Error

    if type(exc).__name__ == "PiiPolicyError":
        return f"kvkk strict policy: {exc}", EXIT_POLICY
    if isinstance(exc, (ConfigError, PreflightError, UnreadableInput, PrepareError, S3Error, UserError)):
        return " ".join(str(exc).split()), EXIT_ERROR
    if isinstance(exc, OSError):
        from .preflight import disk_full

        if disk_full(exc):
            where = f" writing {exc.filename}" if exc.filename else ""
            return f"no space left on device{where}", EXIT_ERROR
        if exc.strerror:
            return f"{exc.strerror}" + (f": {exc.filename}" if exc.filename else ""), EXIT_ERROR
    return None, EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
