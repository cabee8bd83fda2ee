import json

import pytest
from conftest import PEER_FORMATS

from pipeline.core.config import PrepareConfig
from pipeline.core.records import from_table, public, to_table
from pipeline.core.schemas import validate
from pipeline.data.formats import Invalid, detect_format, to_record
from pipeline.data.normalize import Normalizer
from pipeline.data.readers import describe

SRC = {"file": "f", "line": 1}


def convert(row, fmt=None, mapping=None):
    return to_record(row, fmt or detect_format([row], "auto", mapping), mapping or {}, SRC)


def test_alpaca_with_input_system_and_history():
    rec = convert({"instruction": "Translate", "input": "merhaba", "output": "hello", "system": "Be brief",
                   "history": [["hi", "hey"]], "lang": "tr"})
    assert rec["kind"] == "instruction"
    assert [m["role"] for m in rec["messages"]] == ["system", "user", "assistant", "user", "assistant"]
    assert rec["messages"][3]["content"] == "Translate\nmerhaba"
    assert json.loads(rec["meta"]) == {"lang": "tr"}


def test_sharegpt_tool_calls_in_the_transformers_form_and_tools_column():
    row = {"conversations": [
        {"from": "human", "value": "weather?"},
        {"from": "function_call", "value": '{"name": "get_weather", "arguments": {"unit": "C", "city": "Ankara"}}'},
        {"from": "observation", "value": '{"temp": 3}'},
        {"from": "gpt", "value": "3 degrees"}], "tools": '[{"name": "get_weather", "parameters": {"type": "object"}}]',
        "lang": "en"}
    rec = convert(row)
    assert [m["role"] for m in rec["messages"]] == ["user", "assistant", "tool", "assistant"]
    # arguments a JSON object in the source's key order; an id generated where the source has none
    assert rec["messages"][1]["tool_calls"] == [{"id": "call00001", "type": "function", "function": {
        "name": "get_weather", "arguments": {"unit": "C", "city": "Ankara"}}}]
    assert list(rec["messages"][1]["tool_calls"][0]["function"]["arguments"]) == ["unit", "city"]
    assert rec["messages"][2] == {"role": "tool", "content": '{"temp": 3}', "tool_call_id": "call00001",
                                  "name": "get_weather"}
    assert rec["tools"] == [{"type": "function", "function": {"name": "get_weather",
                                                             "parameters": {"type": "object"}}}]
    assert json.loads(rec["meta"]) == {"lang": "en"}
    validate(public(rec), "record")


@pytest.mark.parametrize("arguments", ['"a string"', "[1, 2]", '{"n": NaN}', '{"n": 1e999}',
                                       '{"n": 123456789012345678901234567890}'])
def test_tool_arguments_that_are_no_json_object_or_unreadable_by_datasets_are_refused(arguments):
    row = {"conversations": [
        {"from": "human", "value": "go"},
        {"from": "function_call", "value": '{"name": "f", "arguments": ' + arguments + "}"},
        {"from": "observation", "value": "ok"}, {"from": "gpt", "value": "done"}]}
    with pytest.raises(Invalid) as exc:
        convert(row)
    assert exc.value.reason == "invalid_tool_call"


@pytest.mark.parametrize("tools,expected", [
    ("", None), ("[]", None), ([], None), (None, None),
    ('[{"name": "f"}]', [{"type": "function", "function": {"name": "f"}}]),
    ([{"type": "function", "function": {"name": "f", "description": "d"}}],
     [{"type": "function", "function": {"name": "f", "description": "d"}}]),
    ({"name": "f"}, [{"type": "function", "function": {"name": "f"}}]),
])
def test_tool_definitions_forms(tools, expected):
    rec = convert({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
                   "tools": tools})
    assert rec["tools"] == expected and "tools" not in json.loads(rec["meta"])


@pytest.mark.parametrize("tools", ["not json", "[1]", '[{"description": "no name"}]', "5"])
def test_bad_tool_definitions_are_quarantined(tools):
    with pytest.raises(Invalid) as exc:
        convert({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
                 "tools": tools})
    assert exc.value.reason == "invalid_tools"


def test_ids_and_key_order_are_content():
    def rec(args):
        return convert({"conversations": [
            {"from": "human", "value": "go"}, {"from": "function_call", "value": json.dumps({"name": "f", "arguments": args})},
            {"from": "observation", "value": "ok"}, {"from": "gpt", "value": "done"}]})
    # the same arguments in another order render differently, so they are different records
    assert rec({"a": 1, "b": 2})["id"] != rec({"b": 2, "a": 1})["id"]
    assert rec({"a": 1, "b": 2})["id"] == rec({"a": 1, "b": 2})["id"]
    plain = convert({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]})
    with_tools = convert({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
                          "tools": '[{"name": "f"}]'})
    assert plain["id"] != with_tools["id"]


def test_openai_string_and_typed_parts_both_forms():
    rec = convert({"messages": [
        {"role": "user", "content": [{"type": "text", "text": "2+2?"}]},
        {"role": "assistant", "content": [{"type": "reasoning", "value": "add"}, {"type": "text", "value": "4"}]}]})
    assert rec["messages"][1]["content"] == "<think>\nadd\n</think>\n4"
    rec = convert({"messages": [
        {"role": "user", "content": "call it"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]},
        {"role": "tool", "name": "f", "content": "ok"},
        {"role": "assistant", "content": "done"}]})
    assert rec["messages"][1]["tool_calls"] == [
        {"id": "call00001", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]
    assert rec["messages"][2]["name"] == "f"
    # ids the source has are kept, and the results keep theirs
    rec = convert({"messages": [
        {"role": "user", "content": "call both"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_abc", "type": "function", "function": {"name": "f", "arguments": {"z": 1, "a": 2}}},
            {"id": "call_def", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_def", "content": "G"},
        {"role": "tool", "tool_call_id": "call_abc", "content": "F"},
        {"role": "assistant", "content": "done"}]})
    calls = rec["messages"][1]["tool_calls"]
    assert [c["id"] for c in calls] == ["call_abc", "call_def"] and calls[1]["function"]["arguments"] == {}
    assert list(calls[0]["function"]["arguments"]) == ["z", "a"]
    assert rec["messages"][2]["tool_call_id"] == "call_def" and rec["messages"][3]["tool_call_id"] == "call_abc"


@pytest.mark.parametrize("row,kind", [
    ({"prompt": "p", "completion": "c"}, "instruction"),
    ({"prompt": "p", "response": "r"}, "instruction"),
    ({"prompt": [{"role": "user", "content": "p"}], "completion": [{"role": "assistant", "content": "c"}]}, "chat"),
    ({"question": "q", "answer": "a"}, "instruction"),
    ({"text": "plain"}, "text"),
])
def test_pairs_and_text(row, kind):
    rec = convert(row)
    assert rec["kind"] == kind
    validate(public(rec), "record")


def test_explicit_mapping():
    mapping = {"messages": "dialog", "role": "speaker", "content": "utterance", "user": "customer", "assistant": "agent"}
    rec = convert({"dialog": [{"speaker": "customer", "utterance": "hi"}, {"speaker": "agent", "utterance": "hello"}]},
                  mapping=mapping)
    assert [m["role"] for m in rec["messages"]] == ["user", "assistant"]
    rec = convert({"q": "a?", "r": "b"}, mapping={"prompt": "q", "response": "r"})
    assert rec["messages"][1]["content"] == "b"
    # a tools column under another name (LLaMA-Factory's columns.tools)
    rec = convert({"dialog": [{"speaker": "customer", "utterance": "hi"}, {"speaker": "agent", "utterance": "hello"}],
                   "functions": '[{"name": "f"}]'}, mapping={**mapping, "tools": "functions"})
    assert rec["tools"] == [{"type": "function", "function": {"name": "f"}}] and json.loads(rec["meta"]) == {}


@pytest.mark.parametrize("row,reason", [
    ({"messages": [{"role": "assistant", "content": "no question"}]}, "bad_role_order"),
    ({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}, "bad_role_order"),
    ({"messages": [{"role": "user", "content": "a"}, {"role": "wizard", "content": "b"}]}, "unknown_role"),
    ({"messages": [{"role": "user", "content": ""}, {"role": "assistant", "content": "b"}]}, "empty_turn"),
    ({"messages": [{"role": "user", "content": 5}, {"role": "assistant", "content": "b"}]}, "non_string_content"),
    ({"messages": [{"role": "user", "content": "a"}]}, "no_final_answer"),
    ({"messages": [{"role": "user", "content": "a"}, {"role": "system", "content": "s"},
                   {"role": "assistant", "content": "b"}]}, "bad_role_order"),
])
def test_invalid_conversations_have_reasons(row, reason):
    with pytest.raises(Invalid) as exc:
        convert(row)
    assert exc.value.reason == reason


def test_text_normalization_and_stable_ids():
    a = convert({"text": "Cafe\u0301\r\n\x00with  \u00a0space \n\n\n\nend "})
    assert a["text"] == "Café\nwith   space\n\nend"
    b = convert({"text": "Café\nwith   space\n\nend"})
    assert a["id"] == b["id"] and len(a["id"]) == 32


@pytest.mark.parametrize("name,fmt,expected", [
    ("alpaca_en_demo.json", "alpaca", 999),
    ("identity.json", "alpaca", 91),
    ("glaive_toolcall_en_demo.json", "sharegpt", 300),
    ("c4_demo.jsonl", "text", 300),
    ("wiki_demo.txt", "text", 30),
])
def test_peer_format_files_convert_completely(name, fmt, expected):
    cfg = PrepareConfig()
    normalizer = Normalizer(describe(str(PEER_FORMATS / name)), cfg)
    records = [r for batch in normalizer.batches() for r in batch]
    assert normalizer.format == fmt
    read, norm, clean, quality = normalizer.stats
    assert read.records_in == expected
    removed = sum(norm.quarantined.values()) + sum(clean.dropped.values()) + sum(quality.dropped.values())
    assert len(records) + removed == expected
    # c4_demo's record 139 is phone-number spam ("Access All Records Of 213-484-04NN Now!" 20 times)
    assert dict(quality.dropped) == ({"repetitive": 1} if name == "c4_demo.jsonl" else {})
    assert len(records) >= expected * 0.98, (norm.quarantined, clean.dropped)
    for rec in records:
        validate(public(rec), "record")
    # the Arrow round trip keeps records intact
    back = from_table(to_table(records[:50]))
    assert [public(r) for r in back] == [public(r) for r in records[:50]]


def test_glaive_tool_calls_are_structured():
    normalizer = Normalizer(describe(str(PEER_FORMATS / "glaive_toolcall_en_demo.json")), PrepareConfig())
    records = [r for batch in normalizer.batches() for r in batch]
    calls = [c for r in records for m in r["messages"] for c in m.get("tool_calls") or ()]
    assert calls and all(isinstance(c["function"]["arguments"], dict) and c["type"] == "function" for c in calls)
    with_tools = [r for r in records if r["tools"]]
    assert len(with_tools) == 191 and all(t["type"] == "function" and t["function"]["name"]  # 109 rows: "[]"
                                         for r in with_tools for t in r["tools"])
    assert not any("tools" in json.loads(r["meta"]) for r in records)


# --- preference and multimodal rows (issue 19, item 2) ---------------------------------------------------

def _kto_rows(n=6):
    """LLaMA-Factory's kto_en_demo shape: messages and a boolean label, half of them undesirable."""
    return [{"messages": [{"role": "user", "content": f"Question number {i}?"},
                          {"role": "assistant", "content": f"{'Good' if i % 2 == 0 else 'Bad'} answer {i}."}],
             "label": i % 2 == 0} for i in range(n)]


def _dpo_rows(n=4):
    """LLaMA-Factory's dpo_en_demo shape: the prompt turns, and one chosen and one rejected answer turn."""
    return [{"conversations": [{"from": "human", "value": f"Explain topic {i}."}],
             "chosen": {"from": "gpt", "value": f"A careful explanation of topic {i}."},
             "rejected": {"from": "gpt", "value": f"REJECTED nonsense {i}."}} for i in range(n)]


def _normalize_rows(tmp_path, rows, **formats):
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    cfg = PrepareConfig(formats=formats)
    normalizer = Normalizer(describe(str(path)), cfg)
    return [r for batch in normalizer.batches() for r in batch], normalizer


@pytest.mark.parametrize("rows,what", [(_kto_rows(), "KTO data"), (_dpo_rows(), "preference data")])
def test_preference_files_are_refused_by_default_in_one_line(tmp_path, rows, what):
    from pipeline.data.readers import UnreadableInput

    with pytest.raises(UnreadableInput) as exc:  # the CLI prints these as one line, exit 1
        _normalize_rows(tmp_path, rows)
    message = str(exc.value)
    assert "\n" not in message and "data.jsonl" in message and what in message
    assert 'formats.preference to "chosen"' in message


def test_kto_keeps_desirable_answers_and_counts_the_undesirable_as_dropped(tmp_path):
    records, normalizer = _normalize_rows(tmp_path, _kto_rows(), preference="chosen")
    assert [r["messages"][-1]["content"] for r in records] == ["Good answer 0.", "Good answer 2.", "Good answer 4."]
    assert normalizer.normalize.dropped == {"undesirable": 3}
    assert normalizer.normalize.counters["preference"] == {"unpaired": 3}
    assert all("label" not in json.loads(r["meta"]) for r in records)


@pytest.mark.parametrize("row,prompt,kind", [
    (_dpo_rows(1)[0], "Explain topic 0.", "chat"),
    ({"prompt": "Explain topic 0.", "chosen": "A careful explanation of topic 0.", "rejected": "REJECTED 0."},
     "Explain topic 0.", "instruction"),
    ({"prompt": [{"role": "user", "content": "Explain topic 0."}],
      "chosen": [{"role": "assistant", "content": "A careful explanation of topic 0."}],
      "rejected": [{"role": "assistant", "content": "REJECTED 0."}]}, "Explain topic 0.", "chat"),
    ({"chosen": [{"role": "user", "content": "Explain topic 0."},
                 {"role": "assistant", "content": "A careful explanation of topic 0."}],
      "rejected": [{"role": "user", "content": "Explain topic 0."}, {"role": "assistant", "content": "REJECTED 0."}]},
     "Explain topic 0.", "chat"),
    ({"instruction": "Explain topic 0.", "input": "", "chosen": "A careful explanation of topic 0.",
      "rejected": "REJECTED 0."}, "Explain topic 0.", "instruction"),
])
def test_pairs_keep_the_chosen_answer_only(tmp_path, row, prompt, kind):
    """DPO rows were quarantined as no_final_answer; with preference "chosen" each is the prompt and the chosen
    answer, in LLaMA-Factory's and trl's shapes (explicit and implicit prompt); the rejected text is nowhere."""
    records, normalizer = _normalize_rows(tmp_path, [row, row], preference="chosen")
    assert len(records) == 2 and not normalizer.normalize.quarantined
    rec = records[0]
    assert rec["kind"] == kind
    assert [(m["role"], m["content"]) for m in rec["messages"]] == [
        ("user", prompt), ("assistant", "A careful explanation of topic 0.")]
    assert "REJECTED" not in json.dumps(rec, ensure_ascii=False)
    assert normalizer.normalize.counters["preference"] == {"paired": 2}
    validate(public(rec), "record")


def test_multimodal_rows_are_quarantined_not_kept_with_placeholders(tmp_path):
    rows = [  # LLaMA-Factory's mllm_demo shape, an OpenAI image part, and one text row that stays
        {"messages": [{"role": "user", "content": "<image>Who are they?"},
                      {"role": "assistant", "content": "They are football players."}], "images": ["mllm/1.jpg"]},
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "What is this?"},
                                                   {"type": "image_url", "image_url": {"url": "x.png"}}]},
                      {"role": "assistant", "content": "A cat."}]},
        {"messages": [{"role": "user", "content": "Just text here?"},
                      {"role": "assistant", "content": "Yes, only text."}], "images": []},
    ]
    records, normalizer = _normalize_rows(tmp_path, rows)
    assert normalizer.normalize.quarantined == {"multimodal": 2}
    assert [r["messages"][0]["content"] for r in records] == ["Just text here?"]


def test_a_run_on_kto_and_dpo_files_counts_what_was_done(tmp_path):
    from conftest import fast_config

    from pipeline.runner import run_prepare

    folder = tmp_path / "in"
    folder.mkdir()
    for name, rows in (("kto.jsonl", _kto_rows(10)), ("dpo.jsonl", _dpo_rows(6))):
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cfg = fast_config(tmp_path, [folder], formats={"preference": "chosen"})
    cfg.split.validation_fraction = 0.0
    report = run_prepare(cfg, progress=False).report
    counts = report["counts"]
    assert counts["input"] == 16 and counts["dropped"].get("undesirable") == 5
    assert counts["input"] == counts["kept"] + counts["quarantined"] + sum(counts["dropped"].values())
    assert report["stages"]["normalize"]["counters"]["preference"] == {"paired": 6, "unpaired": 5}


def test_a_preference_file_stops_the_run_before_any_output(tmp_path):
    from conftest import fast_config

    from pipeline.data.readers import UnreadableInput
    from pipeline.runner import run_prepare

    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "kto.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _kto_rows()), encoding="utf-8")
    (folder / "sft.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _kto_rows()[::2]).replace(
        ', "label": true', ""), encoding="utf-8")
    cfg = fast_config(tmp_path, [folder])
    with pytest.raises(UnreadableInput, match=r"kto\.jsonl: KTO data .*formats\.preference"):
        run_prepare(cfg, progress=False)
    assert not (tmp_path / "run").exists()
    # with --skip-unreadable the file is recorded, and the rest of the inputs are used
    cfg.read.skip_unreadable = True
    report = run_prepare(cfg, progress=False).report
    assert report["counts"]["kept"] == 3
    assert [(u["file"].endswith("kto.jsonl"), "KTO data" in u["reason"]) for u in report["unreadable_inputs"]] == [
        (True, True)]
