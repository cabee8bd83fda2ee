"""LLaMA-Factory's copy of a run's records: JSON Lines beside its config, one file per kind and split.

Why a copy: LLaMA-Factory 0.9.5 pins datasets<=4.0.0, which cannot read the shards' `messages` and `tools`
columns (the `arrow.json` extension type: "Arrow type extension<arrow.json> does not have a datasets dtype
equivalent"), and its cloud reader takes only .json/.jsonl. The copy is read from the shards where they are
(a run directory or S3), so the config needs no download step, and holds each record in the form LLaMA-Factory's
`sharegpt` converter reads: `messages` of role and content only, an assistant's tool calls as a `function_call`
turn whose content is the JSON list of the called functions, the results of one call turn as one `tool` turn
(joined as its `openai` converter joins them), and `tools` as one JSON text (its tool formatter json.loads it).
Not its `openai` converter, which would do the same but also writes "detailed thinking off" into the system prompt
of every chat without tools (LLaMA-Factory 0.9.5, data/converter.py): text the run never had. Plain text keeps
`text`. `id` is kept so that a record can be traced to its shard; LLaMA-Factory ignores it.
"""
from __future__ import annotations

import json
from pathlib import Path

from pipeline.core.records import from_table
from pipeline.train.rundata import read_shard

FOLDER = "llamafactory_data"


TOOL_RESULTS_JOIN = "\n</tool_response>\n<tool_response>\n"  # LLaMA-Factory's openai converter's


def chat_row(record: dict) -> dict:
    """One chat in the form of LLaMA-Factory's `sharegpt` dataset format (turns alternate: user or tool results,
    then assistant or function call)."""
    messages = []
    for m in record["messages"]:
        if m["role"] == "assistant" and m.get("tool_calls"):
            calls = [c["function"] for c in m["tool_calls"]]
            messages.append({"role": "function_call", "content": json.dumps(calls, ensure_ascii=False)})
        elif m["role"] == "tool" and messages and messages[-1]["role"] == "tool":
            messages[-1]["content"] += TOOL_RESULTS_JOIN + (m.get("content") or "")
        else:
            messages.append({"role": m["role"], "content": m.get("content") or ""})
    tools = [_with_schema(t) for t in record.get("tools") or []]
    return {"id": record["id"], "messages": messages, "tools": json.dumps(tools, ensure_ascii=False) if tools else ""}


def _with_schema(tool: dict) -> dict:
    """LLaMA-Factory's tool formatter reads `parameters.properties` (JSON Schema); a tool whose parameters are a
    bare name -> schema map (no `type`, no `properties`) is given as the object schema of those properties,
    which is what the map says."""
    function = tool.get("function", tool)
    params = function.get("parameters")
    if not isinstance(params, dict) or "properties" in params or "type" in params:
        return tool
    function = {**function, "parameters": {"type": "object", "properties": params}}
    return {**tool, "function": function} if "function" in tool else function


def _rows(paths: list[str], kind: str):
    """The records of one kind in the shards, in the run's order (a record is text exactly when it has no
    messages: the rule of write.split_by_kind)."""
    for path in paths:
        for record in from_table(read_shard(path)):
            is_text = record.get("messages") is None
            if is_text == (kind == "text"):
                yield {"id": record["id"], "text": record["text"]} if is_text else chat_row(record)


def write_copies(datasets: list[dict], out_dir: str | Path) -> dict[tuple[str, str], str]:
    """(kind, split) -> the JSON Lines file written under out_dir/llamafactory_data/ for each dataset's shards."""
    folder = Path(out_dir).resolve() / FOLDER
    written = {}
    for d in datasets:
        for split in ("train", "validation"):
            if not d[split]:
                continue
            path = folder / split / f"{d['kind']}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                for row in _rows(d[split], d["kind"]):
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")
            written[d["kind"], split] = str(path)
    return written
