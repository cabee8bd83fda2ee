"""`--append-to PREVIOUS`: a new version of an earlier dataset (a run directory or the s3:// prefix of its
manifest) that references the earlier shards instead of copying them, plus this run's new records.

    before the run   read_previous: the earlier manifest; check_append refuses an output that would overwrite
                     it and a pseudonym salt other than the one it was written with (salt_check); the earlier
                     version's max_seq_len becomes this run's (version_config), since its shards were shaped
                     at it; the earlier dataset is an --against dataset too (history.against_refs)
    phase 4          version_manifest: the earlier shards (with `base`, where they are), then this run's; the
                     counts of the whole version with this run's apart (`added`); `previous` names the earlier
                     manifest and lists every earlier dedup index, so a later --against covers the whole version;
                     write_version_basis: the figures of this version a later one's report reads, and
                     read_version_basis reads them of the earlier one (run directory or S3 alike)

Old records keep their ids, split and pseudonyms because their shards are the very files the earlier manifest
lists (same sha256). Only the new records go through this run.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from pipeline.core.config import PrepareConfig
from pipeline.core.errors import PrepareError
from pipeline.core.files import atomic_write_text, sha256_file
from pipeline.core.s3 import open_object, read_json
from pipeline.core.schemas import validate
from pipeline.plan.from_lengths import plan_for_lengths
from pipeline.report.version import BASIS_FILE, PLAN_SUM, combined_packing, version_basis, version_section
from pipeline.runner.rundir import claim

# scrypt: a salt guess costs ~16 MiB and tens of milliseconds, so the stored digest is of little use for
# testing guesses of a salt that is not weak already; the nonce (the writing run directory's id) makes a
# precomputed table useless
SCRYPT = {"n": 1 << 14, "r": 8, "p": 1}


def location(ref: str) -> str:
    """Where the earlier dataset is, as the version's manifest names it: its s3:// prefix, or its run directory
    as an absolute path (a relative one would mean nothing to a reader elsewhere)."""
    return ref.rstrip("/") if ref.startswith("s3://") else str(Path(ref).absolute())


def read_manifest(ref: str, flag: str) -> dict:
    try:
        return read_json(ref.rstrip("/") + "/manifest.json") if ref.startswith("s3://") \
            else json.loads((Path(ref) / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PrepareError(f"{flag} {ref}: no readable manifest.json there ({type(exc).__name__})") from None


def read_previous(cfg: PrepareConfig) -> dict | None:
    """The earlier manifest of `--append-to`, with its "location"; None without the flag."""
    if not cfg.append_to:
        return None
    if not cfg.dedup.enabled:
        raise PrepareError("--append-to needs the dedup step (new records are checked against the earlier ones)")
    return {**read_manifest(cfg.append_to, "--append-to"), "location": location(cfg.append_to)}


def uses_pseudonyms(cfg: PrepareConfig) -> bool:
    return cfg.pii.enabled and (cfg.pii.operator == "pseudonym" or "pseudonym" in cfg.pii.operators.values())


def salt_digest(salt: str, nonce: str) -> str:
    return hashlib.scrypt(salt.encode(), salt=nonce.encode(), **SCRYPT, dklen=16).hex()


def salt_check(cfg: PrepareConfig, run_dir_id: str) -> dict | None:
    """What the manifest keeps of the pseudonym salt, so that a later --append-to can tell whether it uses the
    same one: a slow keyed digest of the user's salt (never the salt), or {"source": "run"} for the random salt
    of a run without one (gone with work/: no later run can have it). None without pseudonyms."""
    if not uses_pseudonyms(cfg):
        return None
    salt = os.environ.get(cfg.pii.salt_env)
    if not salt:
        return {"source": "run"}
    return {"source": "env", "kdf": "scrypt", **SCRYPT, "nonce": run_dir_id, "digest": salt_digest(salt, run_dir_id)}


def check_append(cfg: PrepareConfig, previous: dict, log) -> None:
    """Refuse, before any output is touched, a version that would overwrite the earlier dataset's files or
    give its old records' people other pseudonyms than the new records'."""
    where = previous["location"]
    if where.startswith("s3://"):
        if cfg.s3 and cfg.s3.rstrip("/") == where:
            raise PrepareError(f"--append-to {cfg.append_to}: --s3 must be another prefix (the new version "
                               "references the earlier shards there; uploading over them would replace them)")
    else:
        if Path(cfg.out).absolute() == Path(where):
            raise PrepareError(f"--append-to {cfg.append_to}: --out must be another run directory (the new "
                               "version references the earlier shards there; a run rewrites the shards of its --out)")
        if cfg.s3:
            raise PrepareError(f"--append-to {cfg.append_to}: with --s3, append to the earlier version's s3:// "
                               "prefix (an uploaded version must not reference shards on this machine)")
    if not uses_pseudonyms(cfg):
        return
    earlier = previous.get("pii_salt") or {}
    salt = os.environ.get(cfg.pii.salt_env)
    if earlier.get("source") == "env":
        if not salt or salt_digest(salt, earlier["nonce"]) != earlier["digest"]:
            raise PrepareError(f"--append-to {cfg.append_to}: the pseudonym salt (${cfg.pii.salt_env}) is not the "
                               "one the earlier version was written with: the same person would get other "
                               "pseudonyms in the new records; set the earlier salt")
    else:
        log(f"prepare: --append-to {cfg.append_to}: the earlier version recorded no salt of its own (a random "
            "per-run salt, or no pseudonyms): the new records' pseudonyms cannot match its old records'")


def version_config(cfg: PrepareConfig, previous: dict | None) -> PrepareConfig:
    """This run's config for an appended version: the earlier max_seq_len where it chose one and the user set
    none, since its shards were written (truncated, dropped, chunked) at that length. A max_seq_len the user
    sets is kept under overflow: keep only (the earlier shards are whole, the trainer cuts)."""
    if previous is None or not previous.get("max_seq_len") or not cfg.lengths.enabled:
        return cfg
    if cfg.lengths.max_seq_len is None:
        return cfg.model_copy(update={"lengths": cfg.lengths.model_copy(
            update={"max_seq_len": previous["max_seq_len"]})})
    if cfg.lengths.max_seq_len != previous["max_seq_len"] and cfg.lengths.overflow != "keep":
        raise PrepareError(f"--append-to {cfg.append_to}: lengths.max_seq_len {cfg.lengths.max_seq_len} is not the "
                           f"earlier version's {previous['max_seq_len']}, at which its shards were written "
                           f"(lengths.overflow: {cfg.lengths.overflow}); leave it unset or use overflow: keep")
    return cfg


def _summed(a, b):
    """Counts of two parts as one: numbers added, dicts key by key."""
    if isinstance(a, dict) and isinstance(b, dict):
        return {k: _summed(a.get(k, 0 if not isinstance(b.get(k), dict) else {}),
                           b.get(k, 0 if not isinstance(a.get(k), dict) else {})) for k in {**a, **b}}
    return (a or 0) + (b or 0)


def _sorted(d):
    return {k: _sorted(d[k]) for k in sorted(d)} if isinstance(d, dict) else d


def summed_kinds(a: dict, b: dict) -> dict:
    """The manifests' kinds (kind -> split -> figures) of two parts as the version's. A figure one part has for
    a kind and split and the other lacks (tokens of a run without the lengths step) is left out: half a sum
    would read as the whole."""
    out: dict = {}
    for kind in {*a, *b}:
        for split in {*a.get(kind, {}), *b.get(kind, {})}:
            x, y = a.get(kind, {}).get(split), b.get(kind, {}).get(split)
            keys = set(x) & set(y) if x and y else set(x or y)
            out.setdefault(kind, {})[split] = {k: (x or {}).get(k, 0) + (y or {}).get(k, 0) for k in keys}
    return out


def earlier_indexes(manifest: dict, where: str) -> list[dict]:
    """Every dedup index of an earlier version, each with its run_id and `base`: its own, then those its own
    `previous` lists (already with theirs)."""
    own = [{"run_id": manifest["run_id"], "base": where, **manifest["dedup_index"]}] \
        if manifest.get("dedup_index") else []
    return own + list((manifest.get("previous") or {}).get("dedup_indexes", []))


def version_manifest(manifest: dict, previous: dict) -> dict:
    """This run's manifest (as write_run_manifest builds it) as the new version of `previous`."""
    where = previous["location"]
    old_shards = [{**s, "base": s.get("base", where)} for s in previous["shards"]]
    earlier_totals = {k: v for k, v in previous.get("counts", {}).items() if k != "added"}
    counts = _sorted(_summed(earlier_totals, manifest["counts"]))
    counts["added"] = manifest["counts"]
    # an earlier version older than the per-kind counts has none: this run's alone would read as the version's
    # (a trainer config would take its steps from them), so the version has none either
    kinds = _sorted(summed_kinds(previous["kinds"], manifest.get("kinds") or {})) if "kinds" in previous else None
    version = {k: v for k, v in manifest.items() if k != "kinds"}
    return {**version, "counts": counts, "shards": old_shards + manifest["shards"],
            **({"kinds": kinds} if kinds else {}),
            "previous": {"run_id": previous["run_id"], "location": where,
                         "shards": len(old_shards), "dedup_indexes": earlier_indexes(previous, where)}}


def write_version_basis(run: Path, rep: dict) -> dict:
    """version_basis.json (report/version.py: the figures a later version's report reads, no timing) beside
    the report; its manifest entry, listed with report.html and uploaded with it."""
    basis = version_basis(rep)
    validate(basis, "version_basis")
    claim(run, [BASIS_FILE])
    atomic_write_text(run / BASIS_FILE, json.dumps(basis, indent=2, ensure_ascii=False) + "\n")
    return {"path": BASIS_FILE, "bytes": (run / BASIS_FILE).stat().st_size, "sha256": sha256_file(run / BASIS_FILE)}


def read_version_basis(previous: dict) -> dict | None:
    """The earlier version's version_basis.json, in its run directory or under its s3:// prefix alike; None
    where its manifest lists none (written before prepare wrote one), it cannot be read, or it is not the file
    the manifest lists (sha256)."""
    entry = next((r for r in previous.get("reports", []) if r["path"] == BASIS_FILE), None)
    if entry is None:
        return None
    where = previous["location"]
    try:
        data = open_object(f"{where}/{BASIS_FILE}").read() if where.startswith("s3://") \
            else (Path(where) / BASIS_FILE).read_bytes()
        return json.loads(data) if hashlib.sha256(data).hexdigest() == entry["sha256"] else None
    except (OSError, ValueError):
        return None


def version_plan(cfg: PrepareConfig, earlier: dict | None,
                 summary: dict | None) -> tuple[dict | None, dict | None, str]:
    """The version's packing and GPU plan (both None where they cannot be had) and what is approximate of them,
    or why there are none."""
    if not (cfg.estimate.enabled and summary and summary.get("max_seq_len")):
        return None, None, "no plan after: this run has no estimate or no max_seq_len"
    before = ((earlier or {}).get("version") or {}).get("packing", {}).get("after") \
        or ((earlier or {}).get("lengths") or {}).get("packing")
    if not before:
        return None, None, f"no plan after: the earlier {BASIS_FILE} (or its packing figures) cannot be read"
    if before.get("max_seq_len") != summary["max_seq_len"]:
        return None, None, (f"no plan after: the earlier records were packed at {before.get('max_seq_len')}, "
                            f"this run's at {summary['max_seq_len']}")
    packing = combined_packing(before, summary["packing"])
    return packing, plan_for_lengths(cfg, {"max_seq_len": summary["max_seq_len"], "packing": packing}), PLAN_SUM


def add_version_section(cfg: PrepareConfig, rep: dict, previous: dict, summary: dict | None,
                        max_len: int | None) -> None:
    """report.json's `version` section (report/version.py), in place, before the reports are written."""
    earlier = read_version_basis(previous)
    packing, plan, note = version_plan(cfg, earlier, summary)
    rep["version"] = version_section(previous, earlier, rep, max_len, plan, note, packing)
