"""The `prepare` command: prepare fine-tuning data, check it and plan the GPU.

One module per subcommand (run, precheck, estimate, catalog: gpus/models, show, train: checkpoints/calibrate);
front ends add theirs through the entry point group prepare.commands (flows: `serve`).

Errors are one line on stderr and a non-zero exit, never a traceback (errors.py). With --json, stdout holds only
the JSON document; logs and progress go to stderr.

The command modules import the library inside the functions that run a command: `prepare --help`, and each
command, load only what that command uses (the PII package alone loads Presidio and torch for seconds).
"""
from __future__ import annotations

import argparse
import os
import sys

from pipeline.cli.errors import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_POLICY,
    UserError,
    describe_error,
    fail,
    internal_error,
)
from pipeline.cli.run import config_from_args, summary_text

__all__ = ["EXIT_ERROR", "EXIT_POLICY", "UserError", "build_parser", "config_from_args", "describe_error", "fail",
           "main", "summary_text"]

COMMANDS_GROUP = "prepare.commands"  # entry points: name = "module:register", register(subparsers) adds a command


def build_parser() -> argparse.ArgumentParser:
    from importlib.metadata import entry_points

    from pipeline.cli import catalog, estimate, precheck, run, show, train

    parser = argparse.ArgumentParser(prog="prepare", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for module in (run, precheck, estimate, catalog, train, show):
        module.register(sub)
    for ep in sorted(entry_points(group=COMMANDS_GROUP), key=lambda ep: ep.name):
        ep.load()(sub)
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
        return fail("interrupted", EXIT_INTERRUPTED)
    except BrokenPipeError:
        # stdout closed by the reader (`prepare gpus | head`): not an error. Python would report the broken pipe
        # again when it flushes stdout at exit, hence stdout pointed at /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # noqa: BLE001 - every user error is one line; see describe_error
        message, code = describe_error(exc)
        if message is None:
            if os.environ.get("PREPARE_DEBUG") == "1":
                raise
            message = internal_error(exc)
        return fail(message, code)
