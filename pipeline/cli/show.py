"""`prepare show DATA_OR_RUN`: records as the trainer will see them (pipeline.data.show renders them)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from pipeline.cli.args import add_config_argument
from pipeline.cli.errors import UserError


def register(sub) -> None:
    p = sub.add_parser("show", help="records as the trainer sees them: template rendered, trainable tokens marked, "
                                    "the max-length cut")
    p.add_argument("target", metavar="DATA_OR_RUN", help="a run directory, a Parquet shard, or data files/folder")
    p.add_argument("--n", type=int, default=5, help="records to print (default 5); every record is checked")
    p.add_argument("--ids", nargs="+", metavar="ID", help="print these records instead of the first N")
    p.add_argument("--model", help="model (default: the run's, else llama-3.1-8b)")
    p.add_argument("--tokenizer", help="tokenizer path, hub id or alias (default: the run's, else from --model)")
    p.add_argument("--max-seq-len", type=int, help="where the trainer cuts (default: the run's max_seq_len)")
    p.add_argument("--split", choices=["train", "validation", "all"], default="train",
                   help="which shards of a run directory (default train)")
    add_config_argument(p, "JSON or YAML config, for data files (formats, lengths)")
    p.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                   help="mark trainable tokens in colour (auto: on a terminal) or with [[...]]")
    p.add_argument("--allow-untrained", action="store_true",
                   help="do not fail when most records have no trainable token after the cut")
    p.add_argument("--max-untrained-share", type=float, default=0.5, metavar="SHARE",
                   help="fail when more than this share of the records trains nothing (default 0.5: most)")
    p.set_defaults(func=cmd_show)


def cmd_show(args) -> int:
    from pipeline.data.show import ShowError, open_target, run_show

    if args.n < 0 or (args.max_seq_len is not None and args.max_seq_len < 1) \
            or not 0 <= args.max_untrained_share <= 1:
        raise UserError("--n must be >= 0, --max-seq-len >= 1 and --max-untrained-share within 0..1")
    if not Path(args.target).exists() and not args.target.startswith("s3://") and not any(
            c in args.target for c in "*?["):
        raise UserError(f"no such file or folder: {args.target}")
    splits = ("train", "validation") if args.split == "all" else (args.split,)
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty()
                                       and os.environ.get("NO_COLOR") is None)
    try:
        target = open_target(args.target, args.model, args.tokenizer, args.max_seq_len, args.config, splits)
        run_show(target, args.n, args.ids, color, args.allow_untrained, args.max_untrained_share)
    except ShowError as exc:
        raise UserError(str(exc)) from None
    return 0
