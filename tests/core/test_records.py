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
