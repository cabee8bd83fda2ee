"""The canonical record: one schema for chat, instruction and plain-text data.

In Python a record is a dict:
    {"id": str, "kind": "chat"|"instruction"|"text",
     "messages": [message] | None, "tools": [tool definition] | None,
     "text": str | None, "source": {"file": str, "line": int}, "meta": str (JSON)}
with messages and tools in the form transformers' apply_chat_template and trl document for tool use:
    {"role": "system"|"user"|"assistant"|"tool", "content": str,
     "tool_calls"?: [{"type": "function", "id"?: str, "function": {"name": str, "arguments": {object}}}],
     "tool_call_id"?: str, "name"?: str}                      # the last two on tool results
    tools: [{"type": "function", "function": {"name", "description"?, "parameters"?}}]
A key that does not apply is absent (never null): templates test for presence ('tool_calls' in message).
Keys starting with "_" are internal to a run (e.g. "_order", "_eval", "_tokens") and never written out.
schemas/record.schema.json is the contract; ARROW_SCHEMA is its Parquet form.

Parquet form: `messages` and `tools` are lists of Arrow JSON values (the `arrow.json` extension type, stored
as Parquet's JSON logical type): each message and each tool definition is one JSON text. Arbitrary tool
arguments and schemas have no stable Arrow struct type (a struct per shard would differ and break
concatenation; one union struct would give every message every key, null where absent, which Llama 3.x's
`'tool_calls' in message` test turns into an error, and would reorder argument keys). `datasets` reads the
extension as its `Json` feature, so `load_dataset("parquet", ...)` yields each message as exactly the dict
written here, argument key order included; pyarrow/pandas readers see JSON strings.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Literal, TypedDict

import pyarrow as pa


class Source(TypedDict):
    file: str
    line: int


class Record(TypedDict, total=False):
    """The canonical record at the seams between steps (the module docstring has the message form). The
    internal keys exist only inside a run: _order and _eval from normalize, _split from split, _tokens and
    _trainable from lengths, _chunk from the overflow policy."""

    id: str
    kind: Literal["chat", "instruction", "text"]
    messages: list[dict[str, Any]] | None
    tools: list[dict[str, Any]] | None
    text: str | None
    source: Source
    meta: str
    _order: int
    _eval: bool
    _split: Literal["train", "validation"]
    _tokens: int | None
    _trainable: int | None


KINDS = ("chat", "instruction", "text")
ROLES = ("system", "user", "assistant", "tool")
# the keys of an explicit column/role mapping (data.formats.convert_mapped reads them)
MAPPING_KEYS = ("text", "messages", "prompt", "response", "system", "tools", "role", "content",
                *(r for r in ROLES if r != "system"))
# the personal-data types the PII step finds; a removed value becomes "<TYPE>" in the text
ENTITY_TYPES = (
    "TCKN", "VKN", "INN", "SNILS", "OGRN", "OGRNIP", "CREDIT_CARD", "PHONE", "IBAN", "EMAIL", "IP_ADDRESS",
    "PASSPORT", "LICENSE_PLATE", "DATE_OF_BIRTH", "ADDRESS", "SECRET", "PERSON", "USER_ID", "SSN",
)

JSON_TYPE = pa.json_()
JSON_LIST_TYPE = pa.list_(JSON_TYPE)
SOURCE_TYPE = pa.struct([("file", pa.string()), ("line", pa.int64())])

ARROW_SCHEMA = pa.schema([
    ("id", pa.string()),
    ("kind", pa.string()),
    ("messages", JSON_LIST_TYPE),
    ("tools", JSON_LIST_TYPE),
    ("text", pa.string()),
    ("source", SOURCE_TYPE),
    ("meta", pa.string()),
])
COLUMNS = tuple(ARROW_SCHEMA.names)
# json.dumps builds an encoder per call: a few records' worth of them per batch of messages adds up, so the two
# forms the records are written in are built once (the same output as json.dumps with these arguments)
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_SORTED = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode


def clean_message(m: dict) -> dict:
    """A message as written and as chat templates get it: keys with None dropped, empty tool_calls dropped."""
    return {k: v for k, v in m.items() if v is not None and not (k == "tool_calls" and not v)}


def template_inputs(record: dict) -> tuple[list[dict], list[dict] | None]:
    """(messages, tools) exactly as a trainer passes them to apply_chat_template after loading the shards."""
    return [clean_message(m) for m in record["messages"]], record.get("tools") or None


def call_function(call: dict) -> tuple[str, object]:
    """(name, arguments) of a tool call in the record form."""
    fn = call.get("function") if isinstance(call.get("function"), dict) else call
    return fn.get("name") or "", fn.get("arguments")


def arguments_text(call: dict) -> str:
    """A tool call's arguments as JSON text, keys in their order (for lengths and text views)."""
    args = call_function(call)[1]
    if args is None:
        return ""
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


def content_of(record: dict) -> str:
    """The content that identifies a record: what the trainer sees, in a stable serialization."""
    if record.get("messages") is not None:
        msgs = [{k: v for k, v in m.items() if v not in (None, [])} for m in record["messages"]]
        out = _SORTED(msgs)
        tools = record.get("tools") or None
        if tools or any(m.get("tool_calls") for m in msgs):
            # Key order is content too: templates render arguments and schemas in the order given. Appended
            # only here, so the ids of records without tools are what they were.
            out += "\x00" + _COMPACT([tools, [m.get("tool_calls") for m in msgs]])
        return out
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
        out["messages"] = [clean_message(m) for m in out["messages"]]
    out["tools"] = out["tools"] or None
    return out


def _json_list(values: list) -> pa.Array:
    """Lists of JSON values (None: a null list) as one flat array of JSON texts and the list offsets: a list
    of lists of strings converted by pa.array costs about a third more."""
    offsets, texts, nulls = [0], [], []
    for v in values:
        if v is not None:
            texts.extend(map(_COMPACT, v))
        offsets.append(len(texts))
        nulls.append(v is None)
    items = pa.ExtensionArray.from_storage(JSON_TYPE, pa.array(texts, pa.string()))
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), items, type=JSON_LIST_TYPE, mask=pa.array(nulls))


def to_table(records: list[Record], extra: dict[str, pa.DataType] | None = None) -> pa.Table:
    """Records (with optional internal columns, e.g. {"_order": pa.int64()}) to an Arrow table."""
    columns = {name: [] for name in COLUMNS}
    for rec in records:
        for name, value in public(rec).items():
            columns[name].append(value)
    arrays = [_json_list(columns[f.name]) if f.type == JSON_LIST_TYPE else pa.array(columns[f.name], type=f.type)
              for f in ARROW_SCHEMA]
    schema = ARROW_SCHEMA
    for name, dtype in (extra or {}).items():
        arrays.append(pa.array([rec.get(name) for rec in records], type=dtype))
        schema = schema.append(pa.field(name, dtype))
    return pa.Table.from_arrays(arrays, schema=schema)


PLAIN_FIELD = {b"parquet": b"plain"}  # field metadata: written without dictionary or compression


def parquet_options(schema: pa.Schema) -> dict:
    """ParquetWriter options for a work table: zstd with dictionaries, except the fields marked PLAIN_FIELD
    (random hashes, which neither shrinks: trying took three times the rest of the write)."""
    plain = {f.name for f in schema if (f.metadata or {}).get(b"parquet") == b"plain"}
    if not plain:
        return {"compression": "zstd"}
    return {"use_dictionary": [n for n in schema.names if n not in plain],
            "compression": {n: "none" if n in plain else "zstd" for n in schema.names}}


def from_table(table: pa.Table) -> list[Record]:
    """Arrow table back to record dicts (internal columns kept): JSON values decoded, key order kept."""
    records = table.to_pylist()
    for rec in records:
        for name in ("messages", "tools"):
            if rec.get(name) is not None:
                rec[name] = [json.loads(x) for x in rec[name]]
    return records
