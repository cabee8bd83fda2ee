"""Issue 30, formats as a new user meets them: a file mixing formats, columns of no known format, a .json
holding one record, LLaMA-Factory v1's DPO rows, and chats whose agent speaks first."""
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, fast_config

from pipeline.core.config import PrepareConfig
from pipeline.data.formats import Invalid, to_record
from pipeline.data.normalize import Normalizer
from pipeline.data.readers import UnreadableInput, describe

FAST = ("--no-pii", "--no-lengths", "--no-estimate", "--workers", "1")


def cli(*args, cwd):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def normalize(path, **formats):
    normalizer = Normalizer(describe(str(path)), PrepareConfig(formats=formats))
    return [r for batch in normalizer.batches() for r in batch], normalizer


TOPICS = ["the weather in Ankara", "sorting a list in Python", "the boiling point of water", "how tides work",
          "planting tomatoes in spring", "the rules of chess castling", "baking sourdough bread",
          "changing a bicycle tyre", "the history of the printing press", "learning to swim as an adult"]


def alpaca(i):
    return {"instruction": f"Tell me about {TOPICS[i % 10]}, part {i}.",
            "output": f"Here is what matters about {TOPICS[i % 10]} in part {i}: it takes patience and care."}


def sharegpt(i):
    return {"conversations": [{"from": "human", "value": f"What should I know about {TOPICS[i % 10]}? ({i})"},
                              {"from": "gpt", "value": f"Item {i}: {TOPICS[i % 10]} is simpler than it looks."}]}


# --- 1. a file mixing formats -------------------------------------------------------------------------

def mixed_rows(n=20):
    return [row for i in range(n) for row in (alpaca(i), sharegpt(i))]


def test_each_row_of_a_mixed_file_goes_through_the_converter_its_keys_match(tmp_path):
    """Half Alpaca, half ShareGPT: the ShareGPT half was quarantined as missing_fields (the file's Alpaca
    converter found no instruction); now every row is a record and the counts say which format each was."""
    records, normalizer = normalize(write_jsonl(tmp_path / "mixed.jsonl", mixed_rows()))
    assert len(records) == 40 and not normalizer.normalize.quarantined
    assert normalizer.normalize.counters["formats"] == {"alpaca": 20, "sharegpt": 20}
    assert {r["kind"] for r in records} == {"instruction", "chat"}


def test_a_configured_format_still_applies_to_every_row(tmp_path):
    records, normalizer = normalize(write_jsonl(tmp_path / "mixed.jsonl", mixed_rows(5)), format="alpaca")
    assert len(records) == 5 and normalizer.normalize.quarantined == {"empty_turn": 5}  # no instruction


def test_a_run_on_a_mixed_file_says_so_on_the_terminal_and_in_the_report(tmp_path):
    (tmp_path / "in").mkdir()
    write_jsonl(tmp_path / "in" / "mixed.jsonl", mixed_rows())
    proc = cli("run", "in", "--out", "run", *FAST, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert ("  in/mixed.jsonl: rows of 2 formats (alpaca 20, sharegpt 20), each read by its own converter"
            in proc.stdout.splitlines()), proc.stdout
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    (entry,) = report["files"].values()
    assert entry["formats"] == {"alpaca": 20, "sharegpt": 20} and entry["quarantined"] == 0
    assert "rows of 2 formats" in (tmp_path / "run" / "report.md").read_text()


# --- 2. columns of no known format --------------------------------------------------------------------

def unknown_rows(n=5):
    return [{"frage": f"Wie spät ist es in Zimmer {i}?", "antwort": f"Es ist {i} Uhr geheim."} for i in range(n)]


def test_rows_of_no_known_format_name_their_columns_and_formats_mapping(tmp_path):
    """A run of a file with wrong column names said `unknown_format 5` only: now the error names the columns
    found (names, never values) and shows a formats.mapping for them."""
    (tmp_path / "in").mkdir()
    write_jsonl(tmp_path / "in" / "wrong.jsonl", unknown_rows())
    proc = cli("run", "in", "--out", "run", *FAST, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("prepare: error: ") and "unknown_format 5" in last
    assert "columns found: frage, antwort" in last and "formats.mapping" in last
    assert '{"formats": {"mapping": {"prompt": "frage", "response": "antwort"}}}' in last
    assert "Zimmer" not in proc.stderr + proc.stdout and "geheim" not in proc.stderr + proc.stdout


def test_a_run_that_keeps_records_notes_the_unknown_columns_too(tmp_path):
    (tmp_path / "in").mkdir()
    write_jsonl(tmp_path / "in" / "good.jsonl", [alpaca(i) for i in range(10)])
    write_jsonl(tmp_path / "in" / "wrong.jsonl", unknown_rows(3))
    proc = cli("run", "in", "--out", "run", *FAST, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    note = next(line for line in proc.stdout.splitlines() if "wrong.jsonl" in line)
    assert note.startswith("  ") and "3 row(s) of no known format" in note
    assert "columns found: frage, antwort" in note and "formats.mapping" in note
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    entry = next(f for name, f in report["files"].items() if name.endswith("wrong.jsonl"))
    assert entry["unknown_columns"] == ["frage", "antwort"]
    assert "Zimmer" not in json.dumps(report, ensure_ascii=False)


def test_a_column_name_that_looks_like_personal_data_is_withheld(tmp_path):
    """A CSV without a header row has a record as its column names: with the PII step on, such a name is not
    shown in the report or on the terminal."""
    path = tmp_path / "crm.csv"
    path.write_text("Ahmet Yılmaz,ahmet.yilmaz@example.com\nMehmet Kaya,mehmet.kaya@example.com\n", encoding="utf-8")
    records, normalizer = normalize(path)
    assert not records and normalizer.normalize.quarantined == {"unknown_format": 1}
    shown = normalizer.normalize.counters["unknown_columns"]
    assert "Ahmet Yılmaz" not in shown and "ahmet.yilmaz@example.com" not in shown and sum(shown.values()) == 2


# --- 3. a .json holding one record ----------------------------------------------------------------------

@pytest.mark.parametrize("record", [
    alpaca(0), sharegpt(1),
    {"messages": [{"role": "user", "content": "Is one record a dataset?"},
                  {"role": "assistant", "content": "Yes, a dataset of one record."}], "id": 7},
])
def test_a_json_file_of_one_object_is_read_as_that_record(tmp_path, record):
    """Its scalars were skipped (0 records, "no records"), or its turns read as records of their own."""
    path = tmp_path / "one.json"
    path.write_text(json.dumps(record, indent=2), encoding="utf-8")
    records, normalizer = normalize(path)
    assert normalizer.read.records_in == 1 and len(records) == 1


def test_a_json_object_of_splits_or_keyed_records_is_still_read_as_records(tmp_path):
    path = tmp_path / "splits.json"
    path.write_text(json.dumps({"train": [alpaca(0), alpaca(1)], "test": [alpaca(2)]}), encoding="utf-8")
    assert len(normalize(path)[0]) == 3
    path.write_text(json.dumps({"a": alpaca(0), "b": alpaca(1)}), encoding="utf-8")
    assert len(normalize(path)[0]) == 2


# --- 4. LLaMA-Factory v1 DPO rows -------------------------------------------------------------------------

def v1_message(role, text):
    return {"role": role, "content": [{"type": "text", "value": text}], "loss_weight": 1.0 if role == "assistant" else 0.0}


def v1_dpo_rows(n=10):
    """LLaMA-Factory v1's DPOSample: chosen_messages and rejected_messages, each the whole conversation."""
    return [{"chosen_messages": [v1_message("user", f"Explain {TOPICS[i]}."),
                                 v1_message("assistant", f"A careful explanation of {TOPICS[i]}.")],
             "rejected_messages": [v1_message("user", f"Explain {TOPICS[i]}."),
                                   v1_message("assistant", f"REJECTED nonsense {i}.")]} for i in range(n)]


def test_v1_dpo_rows_are_refused_as_preference_data_naming_the_file(tmp_path):
    """They were quarantined as unknown_format 10, the run leaving empty train/ and validation/ folders."""
    (tmp_path / "in").mkdir()
    write_jsonl(tmp_path / "in" / "v1_dpo_demo.jsonl", v1_dpo_rows())
    proc = cli("run", "in", "--out", "run", *FAST, cwd=tmp_path)
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode != 0 and last.startswith("prepare: error: "), proc.stderr[-3000:]
    assert "v1_dpo_demo.jsonl" in last and "preference data" in last and "formats.preference" in last
    assert not (tmp_path / "run" / "train").exists()


def test_v1_dpo_rows_keep_the_chosen_conversation_under_preference_chosen(tmp_path):
    records, normalizer = normalize(write_jsonl(tmp_path / "dpo.jsonl", v1_dpo_rows()), preference="chosen")
    assert len(records) == 10 and normalizer.normalize.counters["preference"] == {"paired": 10}
    assert [(m["role"], m["content"]) for m in records[0]["messages"]] == [
        ("user", f"Explain {TOPICS[0]}."), ("assistant", f"A careful explanation of {TOPICS[0]}.")]
    assert "REJECTED" not in json.dumps(records, ensure_ascii=False)


# --- 5. chats whose agent speaks first ----------------------------------------------------------------------

GREETING = {"role": "assistant", "content": "Hello, thank you for contacting support. How can I help?"}
CHAT = [{"role": "user", "content": "My order has not arrived yet."},
        {"role": "assistant", "content": "I am sorry, let me check the tracking number for you."}]
SRC = {"file": "f", "line": 1}


def turns(rec):
    return [(m["role"], m["content"]) for m in rec["messages"]]


def test_a_leading_greeting_is_dropped_by_default():
    rec = to_record({"messages": [GREETING, *CHAT]}, "openai", {}, SRC)
    assert turns(rec) == [(m["role"], m["content"]) for m in CHAT] and rec["_leading_assistant"] == 1


def test_a_leading_greeting_can_become_the_system_message():
    rec = to_record({"messages": [GREETING, *CHAT]}, "openai", {}, SRC, leading_assistant="system")
    assert turns(rec)[0] == ("system", GREETING["content"]) and turns(rec)[1:] == [
        (m["role"], m["content"]) for m in CHAT]
    rec = to_record({"messages": [{"role": "system", "content": "Be kind."}, GREETING, *CHAT]}, "openai", {}, SRC,
                    leading_assistant="system")
    assert turns(rec)[0] == ("system", "Be kind.\n\n" + GREETING["content"])


def test_reject_keeps_the_old_refusal_and_a_chat_of_assistant_turns_alone_is_refused_anyway():
    with pytest.raises(Invalid, match="bad_role_order"):
        to_record({"messages": [GREETING, *CHAT]}, "openai", {}, SRC, leading_assistant="reject")
    with pytest.raises(Invalid, match="bad_role_order"):
        to_record({"messages": [GREETING, GREETING]}, "openai", {}, SRC)


def test_a_run_counts_and_reports_the_dropped_greetings(tmp_path):
    from pipeline.cli.run import leading_assistant_lines
    from pipeline.runner import run_prepare

    rows = [{"messages": [GREETING, {"role": "user", "content": f"Where is my order number {i} for {t}?"},
                          {"role": "assistant", "content": f"Order {i} for {t} ships tomorrow morning."}]}
            for i, t in enumerate(TOPICS)]
    path = write_jsonl(tmp_path / "crm.jsonl", rows)
    report = run_prepare(fast_config(tmp_path, [path]), progress=False).report
    assert report["counts"]["kept"] == 10
    assert report["stages"]["normalize"]["counters"]["leading_assistant"] == {"drop": {"records": 10, "turns": 10}}
    assert ("note: 10 assistant turn(s) before the first user turn dropped in 10 chat(s) "
            "(formats.leading_assistant: drop)") in leading_assistant_lines(report)
