"""The records' Arrow form: JSON list columns keep null, empty and key order through a round trip."""
from __future__ import annotations

import json

from pipeline.core.records import JSON_LIST_TYPE, content_of, from_table, to_table


def test_json_lists_round_trip_with_nulls_and_key_order():
    call = {"type": "function", "function": {"name": "f", "arguments": {"z": 1, "a": [2]}}}
    chat = {"id": "a", "kind": "chat", "text": None, "source": {"file": "f", "line": 1}, "meta": "{}",
            "messages": [{"role": "user", "content": "é ü"},
                         {"role": "assistant", "content": "",
                          "tool_calls": [call]}],
            "tools": [{"type": "function", "function": {"name": "f"}}]}
    text = {"id": "b", "kind": "text", "messages": None, "tools": None, "text": "t",
            "source": {"file": "f", "line": 2}, "meta": "{}"}
    table = to_table([chat, text, {**chat, "id": "c", "tools": []}])
    assert table.schema.field("messages").type == JSON_LIST_TYPE
    assert table.column("messages").to_pylist()[1] is None
    assert table.column("tools").null_count == 2  # no tools and an empty list are both written as null
    back = from_table(table)
    assert back[0] == chat and back[1] == text
    assert list(back[0]["messages"][1]["tool_calls"][0]["function"]["arguments"]) == ["z", "a"]


def test_content_of_is_the_sorted_compact_json_of_the_messages():
    rec = {"messages": [{"role": "user", "content": "ş", "name": None}], "tools": None}
    assert content_of(rec) == json.dumps([{"role": "user", "content": "ş"}], ensure_ascii=False, sort_keys=True,
                                         separators=(",", ":"))


def _chat(messages: list[dict]) -> dict:
    return {"id": "a", "kind": "chat", "text": None, "source": {"file": "f", "line": 1}, "meta": "{}",
            "messages": messages, "tools": None}


def test_message_texts_are_the_json_modules_bytes():
    # every code point up to U+3000 and beyond the BMP, in a message of strings (orjson's path) and nested
    # values with floats and long integers (the json module's): the texts the shards carry must not move
    odd = "".join(chr(i) for i in range(0x3000)) + "\u2028\u2029\ufeff\U0001F600\U0010FFFF"
    messages = [{"role": "user", "content": odd, "name": "n"}, {"role": "tool", "content": None, "tool_call_id": "x"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"type": "function", "function": {"name": "f", "arguments": {"b": 1.5e-7, "a": 10**30}}}]},
                {"role": "assistant", "content": "c", "tool_calls": []}]
    texts = to_table([_chat(messages)]).column("messages").to_pylist()[0]
    cleaned = [{k: v for k, v in m.items() if v is not None and not (k == "tool_calls" and not v)} for m in messages]
    assert texts == [json.dumps(m, ensure_ascii=False, separators=(",", ":")) for m in cleaned]


def test_decoded_values_are_json_loads_values():
    # long integers (orjson would read them as floats), NaN and infinities (orjson refuses them) as json.loads reads
    args = {"big": 10**30, "neg": -(2**63) - 1, "u64": 2**64 - 1, "nan": float("nan"), "inf": float("inf"), "f": 0.1}
    messages = [{"role": "assistant", "content": "",
                 "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": args}}]}]
    back = from_table(to_table([_chat(messages), {**_chat(messages), "id": "b"}]).slice(1, 1))
    got = back[0]["messages"][0]["tool_calls"][0]["function"]["arguments"]
    assert back[0]["id"] == "b" and len(back) == 1
    assert {k: type(v) for k, v in got.items()} == {k: type(v) for k, v in args.items()}
    assert json.dumps(got) == json.dumps(args)


def test_content_of_is_the_json_modules_text_for_odd_messages():
    # strings only (orjson's path, keys sorted), a lone surrogate and tool calls (the json module's): the ids
    # of earlier runs must not move
    odd = "".join(chr(i) for i in range(0x3000)) + "\U0001F600"
    call = {"type": "function", "function": {"name": "f", "arguments": {"z": 1.5, "a": [1]}}}
    cases = [[{"role": "user", "content": odd, "b": "x", "a": "y", "é": "z", "Z": "q"}],
             [{"role": "user", "content": "x\ud800"}],
             [{"role": "assistant", "content": None, "tool_calls": [call]}, {"role": "user", "content": "x",
                                                                             "tool_calls": []}]]
    for messages in cases:
        for tools in (None, [{"type": "function", "function": {"name": "f"}}]):
            kept = [{k: v for k, v in m.items() if v not in (None, [])} for m in messages]
            expected = json.dumps(kept, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
            if tools or any(m.get("tool_calls") for m in kept):
                expected += "\x00" + json.dumps([tools, [m.get("tool_calls") for m in kept]], ensure_ascii=False,
                                                separators=(",", ":"))
            assert content_of({"kind": "chat", "messages": messages, "tools": tools}) == expected
