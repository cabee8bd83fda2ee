"""`prepare run`: prepare a dataset (normalize, clean, dedup, strip PII, measure, shard, upload)."""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING

from .args import (add_config_argument, add_encoding_argument, add_json_argument, add_method_argument,
                   add_plan_arguments, plan_flags)
from .errors import UserError, disk_full_message

if TYPE_CHECKING:  # the config module imports pydantic: loaded only when a command needs it
    from ..config import PrepareConfig

STAGES = ("dedup", "pii", "lengths", "estimate")
# front ends that run the pipeline elsewhere register here (flows: the Prefect flow on a Dask cluster); the
# library itself never imports them
RUNNERS_GROUP = "prepare.runners"


def register(sub) -> None:
    p = sub.add_parser("run", help="prepare a dataset: normalize, clean, dedup, strip PII, measure, shard, upload")
    add_run_arguments(p)
    p.set_defaults(func=cmd_run)


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="files, folders, globs or s3:// URIs")
    p.add_argument("--out", help="run directory (default: runs/latest)")
    p.add_argument("--s3", metavar="URI", help="upload shards, then the manifest, to s3://bucket/prefix")
    add_config_argument(p)
    p.add_argument("--validation", nargs="+", metavar="FILE", default=None,
                   help="evaluation sets: kept whole as validation; their duplicates are removed from train")
    p.add_argument("--workers", type=int, help="worker processes (default 2)")
    p.add_argument("--model", help="model for the length cap and the GPU plan (built-in name or config.json)")
    add_method_argument(p, help="fine-tuning method for the GPU plan")
    p.add_argument("--tokenizer", help="tokenizer path or hub id (default: from --model, else offline Mistral 32k)")
    add_plan_arguments(p)
    p.add_argument("--skip-unreadable", action="store_true", help="report unreadable inputs and go on")
    p.add_argument("--follow-symlinks", action="store_true", help="read symlinks that point outside the input folder")
    add_encoding_argument(p)
    p.add_argument("--allow-empty", action="store_true",
                   help="succeed (and upload) even when no record is kept; by default such a run fails")
    p.add_argument("--allow-untrained", action="store_true",
                   help="write records with no trainable token after truncation at the max length (labels all "
                        "-100); by default any fails the run")
    p.add_argument("--no-s3-check", action="store_true",
                   help="skip the S3 check before the run (HeadBucket: endpoint, credentials, bucket)")
    for stage in STAGES:
        p.add_argument(f"--no-{stage}", action="store_true", help=f"turn the {stage} step off")
    p.add_argument("--dask-address", metavar="tcp://HOST:PORT",
                   help="run as a Prefect flow on this Dask cluster instead of local worker processes")
    add_json_argument(p, "print the report as JSON on stdout")


def config_from_args(args: argparse.Namespace) -> PrepareConfig:
    """The --config file with the flags merged over it; every value is validated once, here (ConfigError)."""
    from ..config import load_config

    overrides: dict = {
        "inputs": args.inputs, "out": args.out, "s3": args.s3, "validation_inputs": args.validation,
        "workers": args.workers,
        "read": {"skip_unreadable": True if args.skip_unreadable else None,
                 "follow_symlinks": True if args.follow_symlinks else None, "encoding": args.encoding},
        "estimate": {"model": args.model, "method": args.method, **plan_flags(args)},
        "lengths": {"tokenizer": args.tokenizer, "allow_untrained": True if args.allow_untrained else None},
        "allow_empty": True if args.allow_empty else None,
        "s3_check": False if args.no_s3_check else None,
    }
    for stage in STAGES:
        if getattr(args, f"no_{stage}"):
            overrides.setdefault(stage, {})["enabled"] = False
    return load_config(args.config, overrides)


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
        from ..lengths.draw import render_lengths_text

        lines.append(render_lengths_text(lengths))
        untrained = lengths.get("untrained") or {}
        if untrained.get("records"):  # written only under --allow-untrained
            lines.append(f"untrained: {untrained['records']} chat/instruction records have no trainable token at "
                         f"max_seq_len {untrained['max_seq_len']} (allowed; ids in report.json lengths.untrained)")
    plan = report.get("plan")
    if plan:
        from ..plan.gpus import render_plan_text

        lines.append(render_plan_text(plan))
    if manifest_uri:
        lines.append(f"manifest: {manifest_uri}")
    return "\n".join(lines)


def remote_runner(name: str):
    """The run function a front end registered under `name` in the entry point group prepare.runners."""
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group=RUNNERS_GROUP) if ep.name == name]
    if not found:
        raise UserError("--dask-address needs the Prefect front end (flows), which is not installed "
                        "(pip install -e '.[dask]')")
    return found[0].load()


def cmd_run(args: argparse.Namespace) -> int:
    from ..preflight import disk_full, preflight
    from ..runner import run_prepare

    cfg = config_from_args(args)
    run_flow = remote_runner("dask") if args.dask_address else None
    preflight(cfg, log=lambda msg: print(msg, file=sys.stderr))  # before a record is read
    # the Prefect engine handles KeyboardInterrupt itself (it marks the flow run)
    previous = None if run_flow else _stop_on_ctrl_c()
    try:
        if run_flow:
            result = run_flow(cfg, dask_address=args.dask_address)
        else:
            result = run_prepare(cfg)  # stage progress: a bar on a terminal, periodic lines otherwise
    except OSError as exc:
        if disk_full(exc):  # finalize and upload write in this process: name the run directory
            raise UserError(disk_full_message(exc, cfg.out)) from None
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
    """Ctrl-C during a local run: one line, exit 130, at once. The workers, which get the terminal's SIGINT
    too, ignore it (rundir.worker_init) and die with this process; waiting for the pool's shutdown would let each
    raise wherever it was. The same command resumes from the finished shards, as after a SIGKILL."""
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
