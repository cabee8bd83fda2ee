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

import orjson
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


def _sorted_text(messages: list[dict]) -> str:
    """_SORTED of the messages without their None and [] values. Messages of strings only (most: nothing to
    drop) go through orjson, ~5x faster and the same text (no floats, whose text differs; keys sorted by code
    point either way); the rest, and a lone surrogate, through the json module."""
    if all(all(type(v) is str for v in m.values()) for m in messages):
        try:
            return orjson.dumps(messages, option=orjson.OPT_SORT_KEYS).decode()
        except TypeError:
            pass
    return _SORTED(_kept_values(messages))


def _kept_values(messages: list[dict]) -> list[dict]:
    return [{k: v for k, v in m.items() if v not in (None, [])} for m in messages]


def content_of(record: dict) -> str:
    """The content that identifies a record: what the trainer sees, in a stable serialization."""
    if record.get("messages") is not None:
        out = _sorted_text(record["messages"])
        tools = record.get("tools") or None
        if tools or any(m.get("tool_calls") for m in record["messages"]):
            # Key order is content too: templates render arguments and schemas in the order given. Appended
            # only here, so the ids of records without tools are what they were.
            msgs = _kept_values(record["messages"])
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


def _json_text(value) -> str | bytes:
    """A JSON value's text exactly as _COMPACT writes it (bytes or str: Arrow takes both). A dict whose values are
    all strings goes through orjson, ~8x faster: for such a dict its bytes are _COMPACT's (the same escapes; only
    floats, not possible here, are written differently); a lone surrogate, a non-string key or anything nested
    goes through the json module."""
    if type(value) is dict and all(type(v) is str for v in value.values()):
        try:
            return orjson.dumps(value)
        except TypeError:
            pass
    return _COMPACT(value)


def _message_text(message: dict) -> str | bytes:
    """A message as written (clean_message), as JSON text; a message of strings without tool_calls is clean."""
    if "tool_calls" in message or not all(type(v) is str for v in message.values()):
        message = clean_message(message)
    return _json_text(message)


def _json_list(values: list, encode=_json_text) -> pa.Array:
    """Lists of JSON values (None: a null list) as one flat array of JSON texts and the list offsets: a list
    of lists of strings converted by pa.array costs about a third more."""
    offsets, texts, nulls = [0], [], []
    for v in values:
        if v is not None:
            texts.extend(map(encode, v))
        offsets.append(len(texts))
        nulls.append(v is None)
    items = pa.ExtensionArray.from_storage(JSON_TYPE, pa.array(texts, pa.string()))
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), items, type=JSON_LIST_TYPE, mask=pa.array(nulls))


def _column(records: list[Record], field: pa.Field) -> pa.Array:
    """One canonical column of to_table, as public() gives it: messages cleaned, an empty tools list null."""
    if field.name == "messages":
        return _json_list([rec.get("messages") for rec in records], _message_text)
    if field.name == "tools":
        return _json_list([rec.get("tools") or None for rec in records])
    return pa.array([rec.get(field.name) for rec in records], type=field.type)


def to_table(records: list[Record], extra: dict[str, pa.DataType] | None = None) -> pa.Table:
    """Records (with optional internal columns, e.g. {"_order": pa.int64()}) to an Arrow table: the columns of
    public(record) for each record, taken a column at a time (no dict per record)."""
    arrays = [_column(records, f) for f in ARROW_SCHEMA]
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


def _decoded_lists(column: pa.ChunkedArray) -> list[list | None]:
    """A list<json> column's values decoded, one list (None: a null list) a row."""
    lists = column.combine_chunks()
    offsets = lists.offsets.to_numpy()
    offsets = (offsets - offsets[0]).tolist()
    items = lists.flatten()  # the slice's values only
    # json.loads: orjson reads these texts (long contents) no faster, and an integer past 64 bits as a float
    values = [json.loads(t) for t in (items.storage if isinstance(items, pa.ExtensionArray) else items).to_pylist()]
    nulls = lists.is_null().to_pylist()
    return [None if null else values[a:b] for null, a, b in zip(nulls, offsets, offsets[1:])]


def from_table(table: pa.Table) -> list[Record]:
    """Arrow table back to record dicts (internal columns kept, keys in column order): JSON values decoded, key
    order kept. Built a column at a time: to_pylist made a list of JSON texts per row to decode after."""
    if not table.num_rows:
        return []
    columns = [_decoded_lists(table.column(name)) if name in ("messages", "tools") else table.column(name).to_pylist()
               for name in table.column_names]
    names = table.column_names
    return [dict(zip(names, row)) for row in zip(*columns)]
