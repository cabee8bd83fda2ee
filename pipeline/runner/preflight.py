"""Checks that run before a record is read, and the check that a finished run kept something.

A mistake the user can fix (a model name typo, a tokenizer that does not load, a malformed --s3 URI, a bucket
that does not exist, an endpoint that is down) must fail before any work, not after the whole run with shards
written and nothing uploaded. `preflight(cfg)` finds each of them first, in one line; every front end calls it
before `run_prepare` (the CLI, the Prefect flow).
"""
from __future__ import annotations

import difflib
import errno
import os
from pathlib import Path
from typing import Callable

from pipeline.core.config import PrepareConfig
from pipeline.core.errors import PrepareError
from pipeline.core.models import builtin_models, builtin_table, load_model_spec
from pipeline.core.s3 import check_bucket, check_destination_uri, check_prefix_owner, parse_uri
from pipeline.data.formats import unknown_format_hint
from pipeline.data.lengths.step import LengthStep
from pipeline.data.lengths.tokenizer.resolve import fallback_warning
from pipeline.data.readers import NameMap, is_data_file, name_holds_pii, printable_name
from pipeline.runner.rundir import MARKER, check_out, read_ledger


class PreflightError(PrepareError):
    """Something the user must fix before the run can start; str() is one line."""


def disk_full(exc: BaseException) -> bool:
    """ENOSPC or EDQUOT, also from pyarrow, whose IO errors carry the errno only in their text."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return isinstance(exc, OSError) and ("[errno 28]" in str(exc).lower() or "no space left" in str(exc).lower())


def preflight(cfg: PrepareConfig, log: Callable[[str], None] | None = None) -> None:
    """The run directory (free, not refused), the cache folder, model, tokenizer, S3 URIs and S3 reachability;
    unsupported files in input folders are logged. The run directory comes first: a busy or refused --out
    fails at once, not after the tokenizer and the PII engine have loaded (seconds)."""
    check_out(cfg.out, [*cfg.inputs, *cfg.validation_inputs])
    check_cache()
    if cfg.estimate.enabled or cfg.lengths.enabled:
        check_model(cfg.estimate.model)
    warning = check_tokenizer(cfg) if cfg.lengths.enabled else None
    check_s3(cfg)
    if log is not None and warning:  # once, after every check, so the user can stop and fetch the tokenizer
        log(f"prepare: warning: {warning}")
    if log is not None:
        skipped = unsupported_files([*cfg.inputs, *cfg.validation_inputs], cfg)
        if skipped:
            shown = ", ".join(skipped[:10]) + (f" and {len(skipped) - 10} more" if len(skipped) > 10 else "")
            log(f"prepare: warning: {len(skipped)} file(s) of unsupported type in the input folders are skipped "
                f"(listed in the report): {shown}")


def check_cache() -> None:
    """PREPARE_CACHE (the token cache) must be a folder or creatable as one: a file there failed every
    shard of the lengths step, blaming the input."""
    cache = Path(os.environ.get("PREPARE_CACHE") or ".cache/prepare")
    existing = next((p for p in (cache, *cache.absolute().parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise PreflightError(f"PREPARE_CACHE {cache}: {existing} is not a folder; point PREPARE_CACHE at a folder")
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        raise PreflightError(f"PREPARE_CACHE {cache}: {existing} is not writable; point PREPARE_CACHE at a "
                             "writable folder")


def check_model(model: str) -> None:
    try:
        load_model_spec(model)
    except ValueError as exc:
        if Path(model).expanduser().exists() or "/" in model:
            raise PreflightError(f"--model: {exc}") from None
        names = _model_names()
        close = difflib.get_close_matches(model.lower(), names, n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(close)}?" if close else f"built-in: {', '.join(builtin_models())}"
        raise PreflightError(f"--model: unknown model {model!r}; {hint} (or a config.json path, or a hub id "
                             f"org/name)") from None


def _model_names() -> list[str]:
    names = []
    for name, entry in builtin_table().items():
        names += [name.lower(), *(a.lower() for a in entry.get("aliases", []))]
    return list(dict.fromkeys(names))


def check_tokenizer(cfg: PrepareConfig) -> str | None:
    """The tokenizer resolves and, unless it is the built-in default, loads (a hub id, a folder, a chat template
    override): a failure here would otherwise fail every shard of the lengths step. Returns the warning that
    the counts are approximate (lengths.tokenizer.resolve.fallback_warning), if they are."""
    try:
        step = LengthStep(cfg.lengths, None, model=cfg.estimate.model)
        if cfg.lengths.tokenizer or cfg.lengths.chat_template or step.spec.kind != "mistral-32k":
            step.handle  # noqa: B018 - loads it (once per process; an inline run reuses it)
    except Exception as exc:  # noqa: BLE001 - any loader failure is the user's tokenizer setting
        what = cfg.lengths.tokenizer or f"of the model {cfg.estimate.model}"
        text = " ".join(str(exc).split())[:300]
        raise PreflightError(f"tokenizer {what}: cannot load ({type(exc).__name__}: {text})") from None

    return fallback_warning(step.spec.summary())


def check_s3(cfg: PrepareConfig) -> None:
    """URI syntax of the destination and of every s3:// input, then one HeadBucket per bucket (cfg.s3_check)."""
    buckets: dict[str, str] = {}
    if cfg.s3:
        check_destination_uri(cfg.s3)
        buckets.setdefault(parse_uri(cfg.s3)[0], "destination")
    for item in [*cfg.inputs, *cfg.validation_inputs]:
        if item.startswith("s3://"):
            buckets.setdefault(parse_uri(item)[0], "input")
    if cfg.s3_check:
        for bucket, purpose in buckets.items():
            check_bucket(f"s3://{bucket}", purpose)
        if cfg.s3 and not cfg.s3_overwrite:
            check_prefix_owner(cfg.s3, _run_dir_id(cfg.out))


def _run_dir_id(out: str) -> str:
    """The id of an existing run directory (a resumed or repeated run), "" for a new one."""
    return read_ledger(out).id if os.path.lexists(Path(out) / MARKER) else ""


def unsupported_files(inputs: list[str], cfg: PrepareConfig | None = None) -> list[str]:
    """Files in local input folders that are not of a supported type (and not hidden): the run skips them.
    With the PII step on, a name holding personal data is its label (file names are data: these names go to
    stderr and the report)."""
    found = []
    for item in inputs:
        if item.startswith("s3://") or not os.path.isdir(item):
            continue
        root = Path(item)
        for path in sorted(root.rglob("*")):  # rglob does not descend into directory symlinks
            if path.is_file() and not path.name.startswith(".") and not is_data_file(str(path)):
                found.append(printable_name(str(path.relative_to(root.parent))))
    if cfg is not None and cfg.pii.enabled:
        names = NameMap.of(cfg.out)
        found = [names.label(name) if name_holds_pii(name, cfg) else name for name in found]
    return found


def refuse_empty_run(cfg: PrepareConfig, run_dir: str | Path, report: dict) -> None:
    """A run that kept no record fails (before the upload) unless cfg.allow_empty: an empty dataset is almost
    always a wrong input (an unknown format, a preference file), not a result. The local manifest goes, so
    nothing downstream takes the empty run for a dataset; report.json stays for the reasons."""
    if cfg.allow_empty or report["counts"]["kept"]:
        return
    parts = []
    for name, counts in report.get("files", {}).items():
        reasons = {**counts.get("quarantined_by_reason", {}), **counts.get("dropped", {})}
        why = ", ".join(f"{r} {n}" for r, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:3]) or "no records"
        if "unknown_format" in reasons:
            why += f"; {unknown_format_hint(counts)}"
        parts.append(f"{name}: {counts.get('input', 0)} in ({why})")
    parts += [f"{u['file']}: {u['reason']}" for u in report.get("unreadable_inputs", [])]
    shown = "; ".join(parts[:5]) + (f"; and {len(parts) - 5} more" if len(parts) > 5 else "")
    (Path(run_dir) / "manifest.json").unlink(missing_ok=True)
    raise PrepareError(f"no usable record, nothing written as a dataset (see {Path(run_dir) / 'report.json'}): "
                       f"{shown or 'no input'}; --allow-empty to accept an empty run")


# Checks of a cluster's workers, before any shard task (the Prefect flow on Dask, flows.prepare.check_workers):
# worker_view runs in every worker process (distributed's Client.run) and says what that worker sees;
# check_worker_views compares it with this machine. Workers get paths, never records, so a path must mean the
# same file on every machine and the PII salt must be the same in every process.

PROBE_PREFIX = ".prepare-probe-"


def absolute_paths(cfg: PrepareConfig) -> PrepareConfig:
    """Inputs, validation inputs, --out and a local tokenizer or model config as absolute paths; s3:// URIs and
    hub ids as given. A worker started in another folder would read a relative path against its own folder."""
    def local(item: str) -> str:
        return item if item.startswith("s3://") else os.path.abspath(os.path.expanduser(item))

    def if_local(name: str | None) -> str | None:
        return local(name) if name and os.path.exists(os.path.expanduser(name)) else name

    update = {"inputs": [local(i) for i in cfg.inputs], "out": local(cfg.out),
              "validation_inputs": [local(i) for i in cfg.validation_inputs],
              "lengths": cfg.lengths.model_copy(update={"tokenizer": if_local(cfg.lengths.tokenizer)}),
              "estimate": cfg.estimate.model_copy(update={"model": if_local(cfg.estimate.model)})}
    return cfg.model_copy(update=update)


def salt_digest(value: str | None, token: str) -> str | None:
    """What a worker reports of its salt: a hash keyed with the probe's one-time token, which tells equal salts
    apart and is of no use in another run; never the salt."""
    if not value:
        return None
    import hashlib

    return hashlib.blake2b(value.encode("utf-8", "surrogatepass"), key=token.encode(), digest_size=16).hexdigest()


def _visible(item: str) -> bool:
    import glob

    return bool(glob.glob(item, recursive=True)) if glob.has_magic(item) else os.access(item, os.R_OK)


def worker_view(paths: list[str], probe_dir: str, token: str, salt_env: str) -> dict:
    """Run in a worker: the paths it cannot see, a digest of its salt, and whether it shares probe_dir with the
    client (reads the client's probe file, writes its own and reads it back; the client then sees it)."""
    import uuid

    view: dict = {"missing": [p for p in paths if not _visible(p)], "shared": None, "wrote": None,
                  "salt": salt_digest(os.environ.get(salt_env), token)}
    probe = Path(probe_dir) / f"{PROBE_PREFIX}{token}"
    try:
        if probe.read_text() != token:
            view["shared"] = f"reads another probe file at {probe} (is {probe_dir} a copy, not a shared folder?)"
            return view
        mine = probe.with_name(f"{probe.name}-{uuid.uuid4().hex}")
        mine.write_text(token)
        view["wrote"] = mine.name
        if mine.read_text() != token:
            view["shared"] = f"cannot read back what it wrote in {probe_dir}"
    except OSError as exc:
        view["shared"] = f"cannot read and write {probe_dir} ({exc.strerror or type(exc).__name__})"
    return view


def write_probe(probe_dir: str) -> tuple[str, bool]:
    """The client's probe file in probe_dir (created if missing); returns its token and whether the folder was
    created here."""
    import secrets

    folder = Path(probe_dir)
    created = not folder.exists()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        token = secrets.token_hex(8)
        (folder / f"{PROBE_PREFIX}{token}").write_text(token)
    except OSError as exc:
        raise PreflightError(f"{probe_dir}: cannot write the run directory ({exc.strerror})") from None
    return token, created


def remove_probe(probe_dir: str, token: str, created: bool) -> None:
    folder = Path(probe_dir)
    for path in folder.glob(f"{PROBE_PREFIX}{token}*"):
        path.unlink(missing_ok=True)
    if created:
        try:
            folder.rmdir()
        except OSError:
            pass


def check_worker_views(cfg: PrepareConfig, views: dict, probe_dir: str, token: str) -> None:
    """One line for the first worker that cannot run this run: an error in the probe, a path it cannot see, a
    run directory it does not share with this machine, a PII salt other than this machine's."""
    mine = salt_digest(os.environ.get(cfg.pii.salt_env), token)
    env = cfg.pii.salt_env
    for worker, view in sorted(views.items()):
        where = f"the Dask worker {worker}"
        if not isinstance(view, dict):
            raise PreflightError(f"{where} failed the check before the run ({type(view).__name__})")
        if view["missing"]:
            raise PreflightError(f"{where} cannot see {_shown_path(view['missing'][0], cfg)}; every worker needs "
                                 "the inputs and --out at the same path as this machine (a shared folder)")
        if view["shared"] is None and not (Path(probe_dir) / view["wrote"]).exists():
            view["shared"] = f"writes to a {probe_dir} of its own (its probe file is not seen here)"
        if view["shared"]:
            raise PreflightError(f"{where} {view['shared']}; --out must be a folder that every worker and this "
                                 "machine share at the same path")
        if cfg.pii.enabled and view["salt"] != mine:
            if not view["salt"]:
                why = f"{env} is set here but not on {where}; export it before starting `dask worker`"
            elif not mine:
                why = f"{env} is set on {where} but not here; export the same value here, or unset it on the workers"
            else:
                why = f"{env} on {where} differs from this machine's; set the same value everywhere"
            raise PreflightError(f"{why} (one salt per run: pseudonyms must match across shards)")


def _shown_path(path: str, cfg: PrepareConfig) -> str:
    """A path for a message: an input whose name holds personal data as its label (readers.NameMap)."""
    if cfg.pii.enabled and path != cfg.out and name_holds_pii(Path(path).name, cfg):
        return NameMap.of(cfg.out).label(path)
    return printable_name(path)
