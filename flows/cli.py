"""`prepare serve`: the Prefect deployment prepare/dataset as a subcommand of `prepare`. Registered through the
entry point group prepare.commands (pyproject.toml), so the library's CLI finds it without importing flows/;
loading this module imports neither Prefect nor the flow until the command runs."""
from __future__ import annotations


def register(sub) -> None:
    from pipeline.cli.args import add_config_flag

    p = sub.add_parser("serve", help="serve the Prefect deployment prepare/dataset (needs PREFECT_API_URL)")
    p.add_argument("--limit", type=int, default=2, help="concurrent flow runs")
    p.add_argument("--config", metavar="FILE", help="default parameters of the deployment (JSON or YAML config)")
    add_config_flag(p, "--s3", "s3", metavar="URI")  # the deployment's default destination
    p.set_defaults(func=cmd_serve)


def cmd_serve(args) -> int:
    from flows.prepare import DEMO_DEFAULTS, serve  # the Prefect front end
    from pipeline.cli.args import config_overrides
    from pipeline.core.config import load_config

    defaults = DEMO_DEFAULTS
    if args.config or args.s3:
        defaults = load_config(args.config, *config_overrides(args))
        defaults.inputs = defaults.inputs or DEMO_DEFAULTS.inputs
    if defaults.s3:
        from pipeline.core.s3 import check_destination_uri

        check_destination_uri(defaults.s3)
    serve(limit=args.limit, defaults=defaults)
    return 0
