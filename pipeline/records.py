"""The canonical record: one schema for chat, instruction and plain-text data.

In Python a record is a dict:
    {"id": str, "kind": "chat"|"instruction"|"text",
     "messages": [{"role", "content", "tool_calls"?: [{"name", "arguments"}], "name"?}] | None,
     "text": str | None, "source": {"file": str, "line": int}, "meta": str (JSON)}
Keys starting with "_" are internal to a run (e.g. "_order", "_eval", "_tokens") and never written out.
schemas/record.schema.json is the contract; ARROW_SCHEMA is its Parquet form.
"""
from __future__ import annotations

import hashlib
import json

import pyarrow as pa

KINDS = ("chat", "instruction", "text")
ROLES = ("system", "user", "assistant", "tool")

TOOL_CALL_TYPE = pa.struct([("name", pa.string()), ("arguments", pa.string())])
MESSAGE_TYPE = pa.struct([
    ("role", pa.string()),
    ("content", pa.string()),
    ("tool_calls", pa.list_(TOOL_CALL_TYPE)),
    ("name", pa.string()),
])
SOURCE_TYPE = pa.struct([("file", pa.string()), ("line", pa.int64())])

ARROW_SCHEMA = pa.schema([
    ("id", pa.string()),
    ("kind", pa.string()),
    ("messages", pa.list_(MESSAGE_TYPE)),
    ("text", pa.string()),
    ("source", SOURCE_TYPE),
    ("meta", pa.string()),
])
COLUMNS = tuple(ARROW_SCHEMA.names)


def content_of(record: dict) -> str:
    """The content that identifies a record: what the trainer sees, in a stable serialization."""
    if record.get("messages") is not None:
        return json.dumps(
            [{k: v for k, v in m.items() if v not in (None, [])} for m in record["messages"]],
            ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return record.get("text") or ""


def record_id(record: dict) -> str:
    """Stable id from the kind and content: the same example gets the same id in every run."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(record["kind"].encode())
    digest.update(b"\x00")
    digest.update(content_of(record).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def public(record: dict) -> dict:
    """The record as written: canonical columns only, internal "_" keys removed."""
    out = {name: record.get(name) for name in COLUMNS}
    if out["messages"] is not None:
        out["messages"] = [
            {"role": m["role"], "content": m.get("content", ""),
             "tool_calls": m.get("tool_calls") or None, "name": m.get("name")}
            for m in out["messages"]
        ]
    return out


def to_table(records: list[dict], extra: dict[str, pa.DataType] | None = None) -> pa.Table:
    """Records (with optional internal columns, e.g. {"_order": pa.int64()}) to an Arrow table."""
    columns = {name: [] for name in COLUMNS}
    for rec in records:
        for name, value in public(rec).items():
            columns[name].append(value)
    arrays = [pa.array(columns[f.name], type=f.type) for f in ARROW_SCHEMA]
    schema = ARROW_SCHEMA
    for name, dtype in (extra or {}).items():
        arrays.append(pa.array([rec.get(name) for rec in records], type=dtype))
        schema = schema.append(pa.field(name, dtype))
    return pa.Table.from_arrays(arrays, schema=schema)


def from_table(table: pa.Table) -> list[dict]:
    """Arrow table back to record dicts (internal columns kept), with empty optional fields removed."""
    records = table.to_pylist()
    for rec in records:
        for m in rec.get("messages") or ():
            if not m.get("tool_calls"):
                m.pop("tool_calls", None)
            if m.get("name") is None:
                m.pop("name", None)
    return records
