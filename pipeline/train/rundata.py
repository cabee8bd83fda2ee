"""The run a trainer config trains on, read from the run itself (manifest.json, report.json): its shards by split
and by kind, the max length it cut them at, its overflow policy and its packing counts.

Trainers take chat and plain-text records as separate datasets (a chat set trains on the assistant turns, a text
set on every token, and trl refuses a mix), so the shards are grouped by kind: from the shard sets of
`write.split_by_kind`, else from the manifest's per-kind counts (`kinds`), or, for a local run older than those, the
records' `messages` column; `split_kind_copies` then writes the kinds apart. The manifest's counts also give each
kind's packed sequences: the steps of the config that trains on it.
"""
from __future__ import annotations

import json
from pathlib import Path

from pipeline.core.config import ConfigError
from pipeline.core.s3 import open_object, read_json

KINDS = ("chat", "text")
SPLITS = ("train", "validation")


class RunDataError(ConfigError):
    """The run cannot be read or handed off as it is: one line."""


def _load(where: str) -> tuple[str, dict, dict]:
    """(root, manifest, report.json or {}) of a local run directory or its s3://bucket/prefix."""
    if where.startswith("s3://"):
        root = where[:-len("/manifest.json")] if where.endswith("/manifest.json") else where.rstrip("/")
        try:
            manifest = read_json(root + "/manifest.json")
        except OSError:
            raise RunDataError(f"no manifest at {root}/manifest.json (run `prepare run ... --s3 {root}` first)") \
                from None
        try:
            report = read_json(root + "/report.json")
        except OSError:  # an older run uploaded no report: the precheck's counts stand in
            report = {}
        return root, manifest, report
    path = Path(where)
    if path.name == "manifest.json":
        path = path.parent
    if not (path / "manifest.json").is_file():
        raise RunDataError(f"no manifest.json in {where} (the output of a finished `prepare run`)")
    manifest = json.loads((path / "manifest.json").read_text())
    report = json.loads((path / "report.json").read_text()) if (path / "report.json").is_file() else {}
    return str(path.resolve()), manifest, report


def shard_location(shard: dict, root: str) -> str:
    """Where a shard is: at its `base` (an appended version's earlier shards, --append-to), else in the run."""
    return f"{shard.get('base') or root}/{shard['path']}"


def shard_bases(manifest: dict, root: str) -> list[str]:
    """The run directories or s3:// prefixes the shards are read from, in the manifest's order: the run's own
    root only, except for an appended version."""
    return list(dict.fromkeys(shard.get("base") or root for shard in manifest["shards"]))


def run_packing(report: dict) -> dict | None:
    """The packing counts of the records the run's shards hold: for an appended version, the whole version's
    (its report's `version` section), not the new records' alone (None where the version could not sum them)."""
    if report.get("version"):
        return (report["version"].get("packing") or {}).get("after")
    return (report.get("lengths") or {}).get("packing")


def read_run(where: str) -> dict:
    """The run's shard locations per split (as the trainer opens them), per kind where it can tell, and what
    the run decided: max length, overflow policy, packing counts. An appended version's shards are read where
    each is (`bases`)."""
    root, manifest, report = _load(where)
    splits: dict[str, list[str]] = {s: [] for s in SPLITS}
    for shard in manifest["shards"]:
        splits[shard["split"]].append(shard_location(shard, root))
    if not splits["train"]:
        raise RunDataError(f"the run at {where} has no train shards")
    s3 = root.startswith("s3://")
    split_by_kind = any("kind" in shard for shard in manifest["shards"])
    overflow = (manifest.get("config") or {}).get("lengths", {}).get("overflow")
    # shards on S3 of one shard set are told apart by kind through the manifest's counts (older runs have none)
    on_s3 = any(p.startswith("s3://") for s in SPLITS for p in splits[s])
    readable = split_by_kind or not on_s3 or "kinds" in manifest
    return {"run_id": manifest["run_id"], "root": root, "s3": s3, **splits, "bases": shard_bases(manifest, root),
            "rows": {s: sum(x["rows"] for x in manifest["shards"] if x["split"] == s) for s in SPLITS},
            "max_seq_len": manifest.get("max_seq_len"), "tokenizer": manifest.get("tokenizer"),
            "overflow": overflow, "packing": run_packing(report), "split_by_kind": split_by_kind,
            "kinds": _kinds(manifest, root) if readable else None}


def _kinds(manifest: dict, root: str) -> dict:
    """kind -> {train: [paths], validation: [paths], rows: {split: n}, mixed, counts}, for the kinds the run
    has. Shards that hold both kinds are listed under each (`mixed`: split_kind_copies writes them apart);
    `counts` is the manifest's entry of the kind (records, tokens, packed sequences; None for older runs)."""
    written = manifest.get("kinds")
    kinds: dict = {}
    for shard in manifest["shards"]:
        path = shard_location(shard, root)
        if "kind" in shard:
            held = {shard["kind"]: shard["rows"]}
        elif written is not None:  # the kinds of the split: each of its shards may hold them
            held = {k: c[shard["split"]]["records"] for k, c in written.items() if shard["split"] in c}
        else:
            held = _kind_counts(path)
        held = {k: n for k, n in held.items() if n}
        for kind in held:
            entry = kinds.setdefault(kind, {"train": [], "validation": [], "rows": dict.fromkeys(SPLITS, 0),
                                            "mixed": False, "counts": (written or {}).get(kind)})
            entry[shard["split"]].append(path)
            entry["mixed"] |= len(held) > 1
            if written is None or "kind" in shard:
                entry["rows"][shard["split"]] += held[kind]
            else:
                entry["rows"][shard["split"]] = held[kind]
    return {k: kinds[k] for k in KINDS if k in kinds}


def _kind_counts(path: str) -> dict[str, int]:
    """Chat and text rows of a shard that holds both: a record is text exactly when it has no messages (the
    rule of write.split_by_kind)."""
    import pyarrow.parquet as pq

    messages = pq.read_table(path, columns=["messages"]).column("messages")
    text = messages.null_count
    return {"chat": len(messages) - text, "text": text}


def read_shard(path: str):
    """A shard as an Arrow table, local or on S3."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if path.startswith("s3://"):  # whole: a shard is at most write.shard_bytes
        return pq.read_table(pa.BufferReader(open_object(path).read()))
    return pq.read_table(path)


def split_kind_copies(run: dict, out_dir: str | Path) -> dict:
    """The kinds of a run whose shards mix them, written apart under out_dir/data/<split>/<kind>.parquet (the
    records unchanged, in the run's order, which is the order trainers pack them in; shards on S3 are read from
    there); kinds already apart are returned as they are."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    kinds = run["kinds"]
    if not any(k["mixed"] for k in kinds.values()):
        return kinds
    data = Path(out_dir).resolve() / "data"
    writers: dict[tuple[str, str], pq.ParquetWriter] = {}
    try:
        for split in SPLITS:
            for path in run[split]:
                table = read_shard(path)
                is_text = pc.is_null(table.column("messages"))
                for kind in kinds:
                    part = table.filter(is_text if kind == "text" else pc.invert(is_text))
                    if not part.num_rows:
                        continue
                    if (split, kind) not in writers:
                        (data / split).mkdir(parents=True, exist_ok=True)
                        writers[split, kind] = pq.ParquetWriter(data / split / f"{kind}.parquet", part.schema)
                    writers[split, kind].write_table(part)
    finally:
        for writer in writers.values():
            writer.close()
    return {kind: {**entry, "mixed": False,
                   **{split: [str(data / split / f"{kind}.parquet")] if (split, kind) in writers else []
                      for split in SPLITS}}
            for kind, entry in kinds.items()}
