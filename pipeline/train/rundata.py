"""The run a trainer config trains on, read from the run itself (manifest.json, report.json): its shards by split
and by kind, the max length it cut them at, its overflow policy and its packing counts.

Trainers take chat and plain-text records as separate datasets (a chat set trains on the assistant turns, a text
set on every token, and trl refuses a mix), so the shards are grouped by kind: from the shard sets of
`write.split_by_kind`, else from the records' `messages` column (local runs), which `split_kind_copies` then writes
apart.
"""
from __future__ import annotations

import json
from pathlib import Path

from pipeline.core.config import ConfigError
from pipeline.core.s3 import read_json

KINDS = ("chat", "text")
SPLITS = ("train", "validation")


class RunDataError(ConfigError):
    """The run cannot be read or handed off as it is: one line."""


def _load(where: str) -> tuple[str, dict, dict]:
    """(root, manifest, report lengths) of a local run directory or its s3://bucket/prefix."""
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
        return root, manifest, report.get("lengths") or {}
    path = Path(where)
    if path.name == "manifest.json":
        path = path.parent
    if not (path / "manifest.json").is_file():
        raise RunDataError(f"no manifest.json in {where} (the output of a finished `prepare run`)")
    manifest = json.loads((path / "manifest.json").read_text())
    report = json.loads((path / "report.json").read_text()) if (path / "report.json").is_file() else {}
    return str(path.resolve()), manifest, report.get("lengths") or {}


def read_run(where: str) -> dict:
    """The run's shard locations per split (as the trainer opens them), per kind where it can tell, and what
    the run decided: max length, overflow policy, packing counts."""
    root, manifest, lengths = _load(where)
    splits: dict[str, list[str]] = {s: [] for s in SPLITS}
    for shard in manifest["shards"]:
        splits[shard["split"]].append(f"{root}/{shard['path']}")
    if not splits["train"]:
        raise RunDataError(f"the run at {where} has no train shards")
    s3 = root.startswith("s3://")
    split_by_kind = any("kind" in shard for shard in manifest["shards"])
    overflow = (manifest.get("config") or {}).get("lengths", {}).get("overflow")
    return {"run_id": manifest["run_id"], "root": root, "s3": s3, **splits,
            "rows": {s: sum(x["rows"] for x in manifest["shards"] if x["split"] == s) for s in SPLITS},
            "max_seq_len": manifest.get("max_seq_len"), "tokenizer": manifest.get("tokenizer"),
            "overflow": overflow, "packing": lengths.get("packing"), "split_by_kind": split_by_kind,
            "kinds": _kinds(manifest, root) if split_by_kind or not s3 else None}


def _kinds(manifest: dict, root: str) -> dict:
    """kind -> {train: [paths], validation: [paths], rows: {split: n}}, for the kinds the run has. Shards that
    hold both kinds are listed under each (`mixed`: split_kind_copies writes them apart)."""
    kinds: dict = {}
    for shard in manifest["shards"]:
        path = f"{root}/{shard['path']}"
        counts = {shard["kind"]: shard["rows"]} if "kind" in shard else _kind_counts(path)
        for kind, rows in counts.items():
            if not rows:
                continue
            entry = kinds.setdefault(kind, {"train": [], "validation": [], "rows": dict.fromkeys(SPLITS, 0),
                                            "mixed": False})
            entry[shard["split"]].append(path)
            entry["rows"][shard["split"]] += rows
            entry["mixed"] |= len([n for n in counts.values() if n]) > 1
    return {k: kinds[k] for k in KINDS if k in kinds}


def _kind_counts(path: str) -> dict[str, int]:
    """Chat and text rows of a shard that holds both: a record is text exactly when it has no messages (the
    rule of write.split_by_kind)."""
    import pyarrow.parquet as pq

    messages = pq.read_table(path, columns=["messages"]).column("messages")
    text = messages.null_count
    return {"chat": len(messages) - text, "text": text}


def split_kind_copies(run: dict, out_dir: str | Path) -> dict:
    """The kinds of a run whose shards mix them, written apart under out_dir/data/<split>/<kind>.parquet (the
    records unchanged); kinds already apart are returned as they are."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    kinds = run["kinds"]
    if not any(k["mixed"] for k in kinds.values()):
        return kinds
    data = Path(out_dir).resolve() / "data"
    apart = {}
    for kind, entry in kinds.items():
        apart[kind] = {**entry, "mixed": False}
        for split in SPLITS:
            if not entry[split]:
                continue
            table = pq.read_table(entry[split])
            is_text = pc.is_null(table.column("messages"))
            part = table.filter(is_text if kind == "text" else pc.invert(is_text))
            target = data / split / f"{kind}.parquet"
            target.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(part, target)
            apart[kind][split] = [str(target)]
    return apart
