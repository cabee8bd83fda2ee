"""`prepare run`: prepare a dataset (normalize, clean, dedup, strip PII, measure, shard, upload)."""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING

from pipeline.cli.args import (
    add_config_argument,
    add_config_flag,
    add_encoding_flag,
    add_json_argument,
    add_plan_arguments,
    config_overrides,
)
from pipeline.cli.errors import UserError, disk_full_message

if TYPE_CHECKING:  # the config module imports pydantic: loaded only when a command needs it
    from pipeline.core.config import PrepareConfig

STAGES = ("dedup", "pii", "lengths", "estimate")
# front ends that run the pipeline elsewhere register here (flows: the Prefect flow on a Dask cluster); the
# library itself never imports them
RUNNERS_GROUP = "prepare.runners"


def register(sub) -> None:
    p = sub.add_parser("run", help="prepare a dataset: normalize, clean, dedup, strip PII, measure, shard, upload")
    add_run_arguments(p)
    p.set_defaults(func=cmd_run)


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    add_config_flag(p, "inputs", "inputs", nargs="*", metavar="INPUT")
    add_config_flag(p, "--out", "out")
    add_config_flag(p, "--s3", "s3", metavar="URI")
    add_config_argument(p)
    add_config_flag(p, "--validation", "validation_inputs", nargs="+", metavar="FILE")
    add_config_flag(p, "--eval-sets", "decontam.eval_sets", nargs="+", metavar="FILE")
    add_config_flag(p, "--eval-ngram", "decontam.ngram", metavar="N")
    add_config_flag(p, "--against", "dedup.against", action="append", metavar="PREVIOUS")
    add_config_flag(p, "--append-to", "append_to", metavar="PREVIOUS")
    add_config_flag(p, "--workers", "workers")
    add_config_flag(p, "--model", "estimate.model")
    add_config_flag(p, "--method", "estimate.method")
    add_config_flag(p, "--tokenizer", "lengths.tokenizer")
    add_plan_arguments(p)
    add_config_flag(p, "--skip-unreadable", "read.skip_unreadable", action="store_const", const=True)
    add_config_flag(p, "--follow-symlinks", "read.follow_symlinks", action="store_const", const=True)
    add_encoding_flag(p)
    add_config_flag(p, "--allow-empty", "allow_empty", action="store_const", const=True)
    untrained = p.add_mutually_exclusive_group()  # argument groups share the parser's defaults
    add_config_flag(untrained, "--allow-untrained", "lengths.untrained", action="store_const", const="keep")
    add_config_flag(untrained, "--strict-untrained", "lengths.untrained", action="store_const", const="fail")
    add_config_flag(p, "--s3-overwrite", "s3_overwrite", action="store_const", const=True)
    add_config_flag(p, "--no-s3-check", "s3_check", action="store_const", const=False)
    for stage in STAGES:
        add_config_flag(p, f"--no-{stage}", f"{stage}.enabled", action="store_const", const=False)
    p.add_argument("--dask-address", metavar="tcp://HOST:PORT",
                   help="run as a Prefect flow on this Dask cluster instead of local worker processes")
    add_json_argument(p, "print the report as JSON on stdout")


def config_from_args(args: argparse.Namespace) -> PrepareConfig:
    """The --config file with the flags given merged over it; every value is validated once, here (ConfigError)."""
    from pipeline.core.config import load_config

    cfg = load_config(args.config, *config_overrides(args))
    if not cfg.inputs:
        raise UserError("no inputs: give files, folders, globs or s3:// URIs, or inputs in --config")
    return cfg


def leading_assistant_lines(report: dict) -> list[str]:
    """What formats.leading_assistant did to chats whose assistant spoke first (a run-wide note)."""
    from pipeline.data.formats import leading_assistant_note

    leading = leading_assistant_note(((report["stages"].get("normalize") or {}).get("counters") or {}))
    return [f"note: {leading}"] if leading else []


def summary_text(report: dict, manifest_uri: str | None, run_dir: str) -> str:
    from pipeline.core.numfmt import number

    c = report["counts"]
    lines = [f"run directory: {run_dir}",
             f"records: {number(c['input'])} in, {number(c['kept'])} kept, {number(c['quarantined'])} quarantined, "
             f"{number(sum(c['dropped'].values()))} dropped",
             f"splits: train {number(c['splits']['train'])} rows, validation {number(c['splits']['validation'])} rows"]
    for reason, n in c["dropped"].items():
        lines.append(f"  dropped   {reason:<22} {number(n)}")
    for reason, n in c["quarantined_by_reason"].items():
        lines.append(f"  quarantined {reason:<20} {number(n)}")
    from pipeline.report.build import render_notes_text

    lines += render_notes_text(report) + leading_assistant_lines(report)
    measured = ((report.get("pii") or {}).get("residual_risk") or {}).get("measured")
    if measured and measured.get("copies"):
        from pipeline.data.pii.residual import measured_line

        lines.append(measured_line(measured))
    lengths = report.get("lengths")
    if lengths:
        from pipeline.data.lengths.draw import render_lengths_text

        lines.append(render_lengths_text(lengths))
        from pipeline.data.lengths.untrained import untrained_line

        line = untrained_line(lengths["untrained"]) if lengths.get("untrained") else None
        if line:  # the same line as `prepare precheck`
            lines.append(line)
    plan = report.get("plan")
    if plan:
        from pipeline.plan.gpus import render_plan_text

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
    from pipeline.runner import run_prepare
    from pipeline.runner.preflight import disk_full, preflight

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
