"""`prepare checkpoints sync|pull` (trainer checkpoints to S3 and back) and `prepare calibrate` (a trial run's
measured speed corrects the plan)."""
from __future__ import annotations

import json
import sys

from pipeline.cli.args import add_json_argument
from pipeline.cli.errors import UserError


def register(sub) -> None:
    p = sub.add_parser("checkpoints", help="trainer checkpoints to S3 and back (sync: watch a folder; pull: restore)")
    cmds = p.add_subparsers(dest="checkpoints_command", required=True)
    s = cmds.add_parser("sync", help="upload each saved checkpoint of a trainer's output folder to S3 (for "
                                     "trainers without callbacks); ends when the final model is saved")
    s.add_argument("dir", metavar="DIR", help="the trainer's output_dir (holds checkpoint-N folders)")
    s.add_argument("uri", metavar="s3://bucket/prefix")
    s.add_argument("--keep", type=int, default=2,
                   help="checkpoints kept on S3 while training, besides the best (default 2)")
    s.add_argument("--keep-final", type=int, default=1,
                   help="checkpoints kept at the end: the best (or the last) and keep-final - 1 more (default 1)")
    s.add_argument("--once", action="store_true", help="one pass over DIR, then the end-of-training pruning")
    s.add_argument("--poll", type=float, default=30.0, help="seconds between looks at DIR (default 30)")
    s.add_argument("--wait", type=float, default=3600.0, metavar="SECONDS",
                   help="how long to wait for DIR to appear when the trainer has not made it yet (default 3600)")
    s.add_argument("--stable", type=float, default=10.0,
                   help="a checkpoint is uploaded once its files are this many seconds old (default 10)")
    s.set_defaults(func=cmd_sync)
    q = cmds.add_parser("pull", help="download the latest complete checkpoint, for resume_from_checkpoint")
    q.add_argument("uri", metavar="s3://bucket/prefix")
    q.add_argument("dir", metavar="DIR", help="where checkpoint-N is written")
    q.add_argument("--name", help="a given checkpoint (checkpoint-N or final) instead of the latest")
    q.set_defaults(func=cmd_pull)
    c = sub.add_parser("calibrate", help="read a short trial run and print the corrected time and cost of the plan")
    c.add_argument("trial", metavar="TRIAL_DIR", help="the trial's output_dir (trainer_state.json, checkpoint-N)")
    c.add_argument("--plan", metavar="FILE", help="prepare-plan.json written by `precheck --emit` "
                                                  "(default: in TRIAL_DIR or above it)")
    c.add_argument("--no-store", action="store_true", help="do not record the measured point")
    add_json_argument(c, "print JSON on stdout")
    c.set_defaults(func=cmd_calibrate)


def _check(uri: str) -> None:
    from pipeline.core.s3 import check_bucket, check_destination_uri

    check_destination_uri(uri)
    check_bucket(uri)


def cmd_sync(args) -> int:
    from pipeline.train.checkpoints import sync

    _check(args.uri)
    try:
        sync(args.dir, args.uri, keep=args.keep, keep_final=args.keep_final, once=args.once,
             poll_seconds=args.poll, stable_seconds=args.stable, log=lambda m: print(m, file=sys.stderr),
             wait_seconds=0.0 if args.once else args.wait)
    except FileNotFoundError as exc:
        raise UserError(str(exc)) from None
    return 0


def cmd_pull(args) -> int:
    from pipeline.train.checkpoints import pull

    _check(args.uri)
    print(pull(args.uri, args.dir, args.name))
    return 0


def cmd_calibrate(args) -> int:
    from pipeline.train.calibrate import CalibrateError, calibrate, render

    try:
        result = calibrate(args.trial, args.plan, record=not args.no_store)
    except CalibrateError as exc:  # every value is checked: anything else is a bug, shown as one
        raise UserError(str(exc)) from None
    print(json.dumps(result, allow_nan=False) if args.json else render(result))
    return 0
