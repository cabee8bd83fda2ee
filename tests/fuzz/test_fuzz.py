"""Hostile input (issue 7, point 5): random bytes, deep nesting, huge strings, lone surrogates, NUL bytes,
mixed encodings and decompression bombs through the readers, the converters and a whole run.

The run never crashes (only UnreadableInput, for a whole file), never loses a row without a counted
reason, keeps memory bounded (per-record and per-file decompressed-size caps) and writes nothing outside
its run directory. Hypothesis runs derandomized (the same examples on every run, no example database),
so CI is reproducible; example counts keep the whole file to about a minute on two cores.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from conftest import ROOT, fast_config
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pipeline.core.config import PrepareConfig, ReadConfig
from pipeline.core.records import public, to_table
from pipeline.core.schemas import validate
from pipeline.core.textnorm import normalize_text
from pipeline.data.formats import ROLE_ALIASES, Invalid, to_record
from pipeline.data.normalize import Normalizer
from pipeline.data.readers import FileReader, UnreadableInput, describe, parse_json_row
from pipeline.runner import run_prepare

pytestmark = pytest.mark.fuzz

FUZZ = settings(deadline=None, derandomize=True, database=None, print_blob=False,
                suppress_health_check=list(HealthCheck))
MIB = 1 << 20


def fuzz(max_examples: int):
    return settings(FUZZ, max_examples=max_examples)


# --- helpers ----------------------------------------------------------------------------------------

def stage_counts(stats) -> dict:
    return {s.name: {k: v for k, v in s.to_dict().items() if k not in ("seconds", "cpu_seconds")} for s in stats}


def normalize_file(path: Path, cfg: PrepareConfig) -> tuple[int, Normalizer]:
    """All records of one file through read -> normalize -> clean; (records yielded, normalizer)."""
    normalizer = Normalizer(describe(str(path)), cfg)
    return sum(len(batch) for batch in normalizer.batches()), normalizer


def assert_accounted(yielded: int, normalizer: Normalizer) -> None:
    """read.records_in == yielded + everything quarantined + everything dropped, and each stage hands on
    exactly what it did not remove."""
    read, norm, clean, quality = normalizer.stats
    removed = sum(sum(s.quarantined.values()) + sum(s.dropped.values()) for s in normalizer.stats)
    assert read.records_in == yielded + removed, stage_counts(normalizer.stats)
    for before, stage in ((None, read), (read, norm), (norm, clean), (clean, quality)):
        if before is not None:
            assert stage.records_in == before.records_out
        assert stage.records_in == stage.records_out + sum(stage.quarantined.values()) + sum(stage.dropped.values())
    assert quality.records_out == yielded


def physical_lines(data: bytes) -> int:
    """Lines as the readers count them: ended by \n, \r\n or a lone \r; the last one may lack its end."""
    return len(data.splitlines())


def decoded_lines(data: bytes, encoding: str) -> int:
    """Lines of a file the reader decoded from another encoding (a UTF-16 BOM, cp1251, ...), counted in the
    decoded text as physical_lines counts bytes."""
    text = data.decode(encoding, errors="replace")
    return len(re.findall(r"\r\n|\r|\n", text)) + (not re.search(r"[\r\n]\Z", text) and bool(text))


def assert_balanced(counts: dict) -> None:
    assert counts["input"] == counts["kept"] + counts["quarantined"] + sum(counts["dropped"].values()), counts


def quarantine_lines(run_dir: Path) -> list[dict]:
    return [json.loads(line) for f in sorted((run_dir / "quarantine").glob("*.jsonl"))
            for line in f.read_text(encoding="utf-8").splitlines()]


def gzip_bomb(path: Path, total_mib: int, head: bytes = b"") -> None:
    """`total_mib` MiB of zeros (after `head`) as a multi-member gzip of 1 MiB members: about 1 KB per
    MiB on disk, written in milliseconds (gzip readers go on across members)."""
    member = gzip.compress(b"\0" * MIB, 9)
    with open(path, "wb") as fh:
        if head:
            fh.write(gzip.compress(head))
        for _ in range(total_mib):
            fh.write(member)


def zstd_bomb(path: Path, total_mib: int) -> None:
    frame = zstandard.ZstdCompressor(level=19).compress(b"\0" * MIB)
    with open(path, "wb") as fh:
        for _ in range(total_mib):
            fh.write(frame)


def deep(n: int, kind=list):
    """n nested lists (or dicts), built without recursion."""
    value = kind()
    for _ in range(n):
        value = [value] if kind is list else {"k": value}
    return value


# --- 1. random bytes through the Normalizer --------------------------------------------------------

FRAGMENTS = [
    b"\n", b"\r\n", b"\r", b"\x00", b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\\", b'"', b",", b"\t",
    b"[", b"]", b"{", b"}", b":", b"\n\n",
    b'{"text": "a perfectly ordinary document"}\n',
    b'{"instruction": "What is the capital of France?", "output": "Paris is the capital."}\n',
    b'{"messages": [{"role": "user", "content": "hi there"}, {"role": "assistant", "content": "hello!"}]}\n',
    b'{"conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]}\n',
    b'{"prompt": "p", "completion": "c"}\n', b'{"text": "\\ud800 lone \\udc00 surrogates \\u0000 nul"}\n',
    b'{"text": ' + b"[" * 3000 + b"]" * 3000 + b"}\n", b"[" * 5000, b'"' + b"x" * 3000 + b'"',
    b'{"text": 1e999}\n', b'{"text": ' + b"9" * 5000 + b"}\n", b"NaN", b"null\n", b'"just a string"\n',
    "Привет, как дела с заказом?\n".encode("cp1251"), "Şükrü çok güzel bir gün\n".encode("cp1254"),
    "Привет, как дела с заказом?\n".encode("utf-8"), "emoji 🙂\n".encode("utf-16"),
    b"question,answer\n", b'"a ""quoted"" field",x\n', b'"unterminated\n',
    b"\xed\xa0\x80",  # a surrogate encoded as UTF-8 (invalid)
]


def constants(values: list):
    """sampled_from(values) whose repr does not hold the values. Hypothesis renders a strategy's repr in
    warnings (for one, when a background thread of an earlier test touches `random` during a draw), and
    nested in one_of/flatmap the repr of the huge strings below grew to gigabytes: the pytest process
    was once OOM-killed at 23.6 GB that way."""
    return st.sampled_from(range(len(values))).map(lambda i: values[i])


random_content = st.lists(st.one_of(st.binary(max_size=48), constants(FRAGMENTS)), max_size=30).map(b"".join)
PREFIXES = {"jsonl": [b""], "txt": [b""], "json": [b"", b"[", b"{", b'{"train": [', b"[{"],
            "csv": [b"", b"text,lang\n", b"instruction,output\n"], "tsv": [b"", b"text\tlang\n"],
            "parquet": [b"", b"PAR1"]}


@st.composite
def fuzzed_file(draw):
    fmt = draw(st.sampled_from(sorted(PREFIXES)))
    data = draw(st.sampled_from(PREFIXES[fmt])) + draw(random_content)
    return fmt, data


@fuzz(250)
@given(fuzzed_file(), st.sampled_from(["line", "block"]), st.integers(1, 4))
# found by fuzzing: a UTF-16/32 BOM after the first line made the stream decoders raise UnicodeError
@example(("csv", b"text,lang\n\xff\xfe" + b"\x00" * 10), "line", 1)
@example(("csv", b"text,lang\n\xfe\xff" + b"\x00" * 10), "line", 1)
@example(("json", b'[{"text": "x"},\n\xff\xfe' + b"\x00" * 10), "line", 1)
@example(("jsonl", b'{"text": "x"}\n\xff\xfe' + b"\x00" * 10), "line", 1)
def test_normalizer_survives_random_bytes_and_counts_every_row(tmp_path_factory, file, txt_mode, batch_size):
    fmt, data = file
    d = tmp_path_factory.mktemp("bytes")
    cfg = PrepareConfig()
    cfg.read = ReadConfig(max_record_bytes=1024, batch_size=batch_size, txt_mode=txt_mode)
    results = []
    for name, payload in ((f"x.{fmt}", data), (f"x.{fmt}.gz", gzip.compress(data))):
        path = d / name
        path.write_bytes(payload)
        try:
            yielded, normalizer = normalize_file(path, cfg)
        except UnreadableInput as exc:  # a whole-file problem (not an array, bad header, not Parquet)
            assert str(path) in str(exc) and "\n" not in str(exc)
            results.append("unreadable")
            continue
        assert_accounted(yielded, normalizer)
        if fmt == "jsonl" or fmt == "txt" and txt_mode == "line":
            assert normalizer.read.records_in == physical_lines(data)  # one row per line, none skipped
        assert not normalizer.reader.unread
        results.append(stage_counts(normalizer.stats))
    if fmt != "parquet":
        assert results[0] == results[1]  # compressed or not, the same rows and reasons


def test_gzip_that_is_not_gzip_is_unreadable(tmp_path):
    for name in ("x.jsonl.gz", "x.csv.zst"):
        (tmp_path / name).write_bytes(b"\x1f\x8b\x08 definitely not a valid archive")
        with pytest.raises(UnreadableInput, match="not a valid"):
            FileReader(describe(str(tmp_path / name)), ReadConfig())


# --- 2. hostile JSON values through every converter, and normalize_text ---------------------------

HOSTILE_STRINGS = [
    "", " ", "\n\n", "\x00", "a\x00b", "\ud800", "\udc00", "x\ud83d", "\ud83d\ude00", "\ufeff", "\u200b", "\u2028",
    "\r\n\r\n", "\x1b[31m", "../../etc/passwd", "/etc/passwd", "C:\\Windows\\win.ini", "file:///etc/shadow",
    "Привет", "çğışöü", "🙂", "\U0010ffff", "human", "gpt", "user", "assistant", "system", "tool", "function_call",
    "observation", "developer", "text", "tool_call", "reasoning", '{"name": "f", "arguments": {"a": 1}}',
    '[{"name": "f"}]', "[1, 2]", "NaN", "null", "A perfectly ordinary sentence with enough characters.",
]
HUGE_STRINGS = ["x" * 300_000, "\x00" * 100_000, "\ud800" * 20_000, "ab \n" * 50_000, " " * 200_000 + "x",
                "\t \u00a0" * 50_000 + "\n"]
text = st.one_of(
    st.sampled_from(HOSTILE_STRINGS),
    st.text(st.characters(exclude_categories=()), max_size=40),  # includes lone surrogates and controls
    constants(HUGE_STRINGS),
)
KEYS = ["text", "content", "role", "from", "value", "instruction", "output", "input", "history", "system",
        "messages", "conversations", "prompt", "completion", "response", "tool_calls", "function", "name",
        "arguments", "type", "question", "answer", "source", "id", "_order", "_split", "meta", "../../x"]
key = st.one_of(st.sampled_from(KEYS), st.text(st.characters(exclude_categories=()), max_size=8))
scalar = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), text)
json_value = st.recursive(scalar, lambda c: st.lists(c, max_size=4) | st.dictionaries(key, c, max_size=4),
                          max_leaves=12)
V = st.one_of(text, json_value)
role = st.one_of(st.sampled_from(sorted(ROLE_ALIASES) + ["", " GPT ", "USER"]), V)
EXTRA = {"meta": json_value, "id": V, "source": V, "_order": V, "lang": V}

# Mostly well-formed rows with hostile values where content goes (so converters get past their first
# check and the records they build are exercised), and wrong types anywhere.


def weighted(*choices):
    """One of the strategies, drawn with the given weights (st.one_of does not take weights). Drawn by index,
    so that the repr stays short (see constants())."""
    table = [s for weight, s in choices for _ in range(weight)]
    return st.sampled_from(range(len(table))).flatmap(lambda i: table[i])


sentence = st.builds("A sentence with {} and {} inside.".format, text, text)
content = weighted((3, sentence), (1, text), (1, V))
USER, ASSISTANT = ["user", "human", "customer", " USER "], ["assistant", "gpt", "bot", "model", "chatgpt"]
call = weighted(
    (3, st.fixed_dictionaries({"name": content, "arguments": st.one_of(json_value, content)})),
    (3, st.fixed_dictionaries({"function": st.fixed_dictionaries({"name": content}, optional={"arguments": V})})),
    (1, st.fixed_dictionaries({}, optional={"name": V, "arguments": V, "function": V})))
part = st.one_of(text,
                 st.fixed_dictionaries({"type": st.sampled_from(["text", "reasoning", "thinking"]), "text": content}),
                 st.fixed_dictionaries({"type": st.just("tool_call"), "value": st.one_of(call, content)}),
                 st.fixed_dictionaries({}, optional={"type": V, "text": V, "value": V}))


def openai_turn(roles):
    turn = st.fixed_dictionaries(
        {"role": weighted((6, st.sampled_from(roles)), (1, role)),
         "content": weighted((3, content), (1, st.lists(part, max_size=3)))}, optional={"name": content})
    calls = st.fixed_dictionaries({"tool_calls": st.one_of(st.lists(call, min_size=1, max_size=2), V)})
    return weighted((5, turn), (1, st.tuples(turn, calls).map(lambda tc: {**tc[0], **tc[1]})))


def sharegpt_turn(roles):
    return st.fixed_dictionaries({"from": weighted((6, st.sampled_from(roles)), (1, role)), "value": content},
                                 optional={"name": st.one_of(content, V)})


def mapped_turn(roles):
    return st.fixed_dictionaries({"speaker": weighted((6, st.sampled_from(roles)), (1, role)), "utterance": content})


def conversation(turn, tool_turns=()):
    """User/assistant pairs (sometimes with a tool exchange), a list of anything, or not a list at all."""
    pair = st.tuples(turn(USER), turn(ASSISTANT)).map(list)
    exchanges = st.lists(weighted((2, pair), *[(1, t) for t in tool_turns]), min_size=1, max_size=3)
    flat = exchanges.map(lambda xs: [t for x in xs for t in x])
    anything = st.lists(st.one_of(turn(USER + ASSISTANT + ["system", "tool"]), V), max_size=5)
    return weighted((6, flat), (1, anything), (1, V))


openai_tool = st.tuples(
    openai_turn(USER),
    st.fixed_dictionaries({"role": st.just("assistant"), "content": content,
                           "tool_calls": st.lists(call, min_size=1, max_size=2)}),
    st.fixed_dictionaries({"role": st.just("tool"), "content": content}, optional={"name": V}),
    openai_turn(ASSISTANT)).map(list)
sharegpt_tool = st.tuples(sharegpt_turn(USER), st.fixed_dictionaries({
    "from": st.just("function_call"),
    "value": st.one_of(call.map(lambda c: json.dumps(c, ensure_ascii=False)), content)}),
    sharegpt_turn(["observation", "tool"]), sharegpt_turn(ASSISTANT)).map(list)


def without_last(turns):
    return turns[:-1] if isinstance(turns, list) else turns


SHAPES = {
    "alpaca": st.fixed_dictionaries(
        {"instruction": content, "output": content},
        optional={"input": content, "system": content, **EXTRA,
                  "history": st.one_of(st.lists(st.lists(content, min_size=2, max_size=2), max_size=2), V)}),
    "sharegpt": st.fixed_dictionaries({"conversations": conversation(sharegpt_turn, [sharegpt_tool])},
                                      optional={"system": content, **EXTRA}),
    "openai": st.fixed_dictionaries({"messages": conversation(openai_turn, [openai_tool])}, optional=EXTRA),
    "prompt_completion": st.one_of(
        st.fixed_dictionaries({"prompt": st.one_of(content, conversation(openai_turn).map(without_last)),
                               "completion": st.one_of(content, st.lists(openai_turn(ASSISTANT), max_size=2))},
                              optional={"system": content, **EXTRA}),
        st.fixed_dictionaries({"prompt": content, "response": content}, optional=EXTRA),
        st.fixed_dictionaries({"prompt": content}, optional=EXTRA)),  # a row without a response
    "text": st.one_of(text, st.fixed_dictionaries({"text": content}, optional=EXTRA),
                      st.fixed_dictionaries({}, optional={"text": V, "content": V, "body": V, **EXTRA})),
    "mapped": st.fixed_dictionaries({"dialog": conversation(mapped_turn)}),
}
MAPPING = {"messages": "dialog", "role": "speaker", "content": "utterance", "user": "customer",
           "assistant": "agent"}
SOURCE = {"file": "in/x.jsonl", "line": 1}


def check_record_or_invalid(row, fmt: str) -> dict | None:
    """to_record either raises Invalid or returns a record that validates, encodes as UTF-8 and is
    writable as Arrow; nothing else."""
    try:
        rec = to_record(row, fmt, MAPPING if fmt == "mapped" else {}, SOURCE)
    except Invalid as exc:
        assert re.fullmatch(r"[a-z_]+", exc.reason)
        return None
    validate(public(rec), "record")
    json.dumps(public(rec), ensure_ascii=False).encode("utf-8")
    json.loads(rec["meta"])
    assert to_table([rec]).num_rows == 1
    return rec


@pytest.mark.parametrize("fmt", sorted(SHAPES))
@fuzz(120)
@given(data=st.data())
def test_converters_return_valid_records_or_invalid(fmt, data):
    check_record_or_invalid(data.draw(SHAPES[fmt], label="row"), fmt)


@fuzz(80)
@given(st.sampled_from(sorted(SHAPES)), json_value)
def test_wrong_types_everywhere(fmt, value):
    """Any JSON value, in any format's converter."""
    check_record_or_invalid(value, fmt)


@fuzz(300)
@given(st.one_of(st.text(st.characters(exclude_categories=()), max_size=60),
                 st.text(st.sampled_from(" \t\n\r\x00\x85\u00a0\u2028\u3000\ufeff\ud800\udfff\u0301\u212bae"),
                         max_size=60)))
def test_normalize_text_output_is_clean_and_stable(value):
    out = normalize_text(value)
    out.encode("utf-8")  # no lone surrogates left
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\ufeff]", out)
    assert out == out.strip() and "\n\n\n" not in out
    assert normalize_text(out) == out


@pytest.mark.parametrize("value", [" " * MIB + "x", "\t " * (MIB // 2) + "x\n", ("word" + " " * 1000) * 1000,
                                   "\n" * MIB + "x", "\r" * MIB, "\x00 " * (MIB // 2), "\u00a0" * MIB + "\n"])
def test_normalize_text_is_linear_on_whitespace_runs(value):
    """r"[ \t]+\n" retried at every space of a run that does not end a line: 1 MB took half an hour."""
    start = time.perf_counter()
    normalize_text(value)
    assert time.perf_counter() - start < 2


DEEP_LIST, DEEP_DICT = deep(100_000), deep(100_000, dict)


@pytest.mark.parametrize("fmt", sorted(SHAPES))
def test_nesting_beyond_the_recursion_limit_in_every_field(fmt):
    examples = {
        "alpaca": {"instruction": "Why?", "output": "Because of reasons."},
        "sharegpt": {"conversations": [{"from": "human", "value": "q?"}, {"from": "gpt", "value": "answer"}]},
        "openai": {"messages": [{"role": "user", "content": "q?"}, {"role": "assistant", "content": "answer"}]},
        "prompt_completion": {"prompt": "q?", "completion": "an answer"},
        "text": {"text": "a perfectly ordinary document"},
        "mapped": {"dialog": [{"speaker": "customer", "utterance": "q?"}, {"speaker": "agent", "utterance": "a"}]},
    }
    base = examples[fmt]
    assert check_record_or_invalid(base, fmt) is not None
    fields = list(base) + ["meta"]
    for field in fields:
        for value in (DEEP_LIST, DEEP_DICT):
            check_record_or_invalid({**base, field: value}, fmt)
    turns_key = {"sharegpt": "conversations", "openai": "messages", "mapped": "dialog"}.get(fmt)
    if turns_key:
        for turn_field in ("content", "value", "tool_calls", "name", "utterance", "role", "from"):
            for value in (DEEP_LIST, DEEP_DICT):
                row = json.loads(json.dumps(base))
                row[turns_key][0][turn_field] = value
                check_record_or_invalid(row, fmt)
    # the same depth as text: a JSON line of 100k nested brackets is too_deep, not a crash
    line = '{"text": "x", "deep": ' + "[" * 100_000 + "]" * 100_000 + "}"
    assert parse_json_row(1, line).error == "too_deep"
    assert parse_json_row(1, "[" * 100_000).error == "too_deep"


# --- 3. mixed encodings ------------------------------------------------------------------------------

RU = "Привет, как дела? Заказ уже в пути, курьер позвонит вечером."
TR = "Şükrü bugün çok güzel bir gün geçirdi; ağaçlar yeşil, ılık bir rüzgâr."


@pytest.mark.parametrize("mix", ["utf8-cp1251-cp1254", "mostly-cp1251", "mostly-utf8"])
@pytest.mark.parametrize("fmt", ["jsonl", "txt"])
def test_mixed_encodings_in_one_file_are_counted_not_lost(tmp_path, mix, fmt):
    encodings = {"utf8-cp1251-cp1254": ["utf-8", "cp1251", "cp1254", "utf-8"],
                 "mostly-cp1251": ["cp1251"] * 5 + ["utf-8"],
                 "mostly-utf8": ["utf-8"] * 5 + ["cp1251"]}[mix]
    lines, expected = [], []
    for i in range(60):
        enc = encodings[i % len(encodings)]
        sentence = f"{TR if enc == 'cp1254' else RU} #{i}"
        expected.append((enc, sentence))
        lines.append((json.dumps({"text": sentence}, ensure_ascii=False) if fmt == "jsonl" else sentence).encode(enc))
    path = tmp_path / f"mixed.{fmt}"
    path.write_bytes(b"\n".join(lines) + b"\n")
    cfg = PrepareConfig()
    cfg.dedup.enabled = False
    normalizer = Normalizer(describe(str(path)), cfg)
    records = [r for batch in normalizer.batches() for r in batch]
    assert_accounted(len(records), normalizer)
    assert normalizer.read.records_in == len(lines)
    assert set(normalizer.read.quarantined) <= {"undecodable"}
    texts = {r["text"] for r in records}
    for enc, sentence in expected:
        if enc == "utf-8":  # UTF-8 lines come through intact, whatever the rest of the file is
            assert sentence in texts, (normalizer.reader.encoding, sentence)
    if mix == "mostly-cp1251":  # the legacy majority is detected and decoded, the UTF-8 lines are not mojibake
        assert normalizer.reader.encoding == "cp1251"
        assert len(records) == len(lines)
    for rec in records:
        assert rec["text"] in {s for _, s in expected}  # no mojibake: a record is some line's exact text


# --- 4. decompression bombs ------------------------------------------------------------------------

def test_gzip_and_zstd_bombs_stop_at_the_cap(tmp_path):
    cap = 32 * MIB
    gz, zst = tmp_path / "bomb.txt.gz", tmp_path / "bomb.jsonl.zst"
    gzip_bomb(gz, 1024)  # 1 GiB of zeros
    zstd_bomb(zst, 1024)
    assert gz.stat().st_size < 2 * MIB and zst.stat().st_size < 2 * MIB
    for path in (gz, zst):
        reader = FileReader(describe(str(path)), ReadConfig(max_decompressed_bytes=cap))
        start = time.perf_counter()
        rows = [r for batch in reader.batches() for r in batch]
        assert time.perf_counter() - start < 20  # stopped at 32 MiB, did not inflate the 1 GiB
        assert reader._stream.capped_reader.read_bytes == cap
        assert reader.unread
        assert [r.error for r in rows] == ["too_large"]  # one line of zeros over the record cap


def test_a_file_that_ends_exactly_at_the_cap_is_not_unread(tmp_path):
    p = tmp_path / "exact.jsonl.gz"
    data = b'{"text": "a perfectly ordinary document"}\n' * 100
    p.write_bytes(gzip.compress(data))
    reader = FileReader(describe(str(p)), ReadConfig(max_decompressed_bytes=len(data)))
    assert sum(len(b) for b in reader.batches()) == 100 and not reader.unread


def test_run_reports_the_bomb_as_unread_after_cap(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    d = tmp_path / "in"
    d.mkdir()
    gzip_bomb(d / "bomb.txt.gz", 1024)
    lines = b"".join(json.dumps({"text": f"line number {i} of a real file that was cut"}).encode() + b"\n"
                     for i in range(2000))
    (d / "lines.jsonl.gz").write_bytes(gzip.compress(lines))
    (d / "fine.jsonl").write_text(json.dumps({"text": "a perfectly ordinary document"}) + "\n")
    cfg = fast_config(tmp_path, [d])
    cfg.read.max_decompressed_bytes = 16 * 1024  # the lines file is cut mid-line too
    cfg.read.max_record_bytes = 4096
    report = run_prepare(cfg, progress=False, log=lambda msg: None).report
    files = report["files"]
    assert files["in/bomb.txt.gz"]["unread_after_cap"] and files["in/lines.jsonl.gz"]["unread_after_cap"]
    assert not files["in/fine.jsonl"]["unread_after_cap"]
    assert files["in/bomb.txt.gz"]["quarantined_by_reason"] == {"too_large": 1}
    assert files["in/lines.jsonl.gz"]["input"] == physical_lines(lines[:16 * 1024])
    assert_balanced(report["counts"])
    for counts in files.values():
        assert_balanced(counts)


MEMORY_SCRIPT = r"""
import gzip, json, resource, sys, time
from pathlib import Path
from pipeline.core.config import PrepareConfig, ReadConfig
from pipeline.data.normalize import Normalizer
from pipeline.data.readers import FileReader, describe, split_ranges

case, path = sys.argv[1], Path(sys.argv[2])
MIB = 1 << 20
# a regression fails with MemoryError here instead of taking the machine's memory
resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))
member = gzip.compress(b"\0" * MIB, 9)

def bomb(head, mib, tail=b""):
    with open(path, "wb") as fh:
        fh.write(gzip.compress(head))
        for _ in range(mib):
            fh.write(member)
        if tail:
            fh.write(gzip.compress(tail))

def chunked(head, chunk, n, tail):  # n copies of chunk between head and tail, gzip, a few KB on disk
    piece = gzip.compress(chunk * 64, 9)
    with open(path, "wb") as fh:
        fh.write(gzip.compress(head))
        for _ in range(n // 64):
            fh.write(piece)
        fh.write(gzip.compress(tail))

cfg = PrepareConfig()
if case == "csv-no-line-end":     # a CSV whose second line is 400 MiB of zeros
    bomb(b"text,lang\n", 400)
elif case == "txt-no-line-end":   # a text file of one 400 MiB line
    bomb(b"", 400)
elif case == "json-huge-item":    # a JSON array item of 6,400 strings of 64 KiB: 400 MiB in one record
    chunked(b'[{"text": "a document", "parts": [', b'"' + b"a" * (64 * 1024) + b'", ', 6400,
            b'"end"]}, "a fine text document"]')
elif case == "json-deep":         # items of 400,000 nested brackets (ijson.items took gigabytes for 100,000)
    nested = b"[" * 400_000 + b"]" * 400_000
    path.write_bytes(b"[" + nested + b', {"text": "a real document", "x": ' + nested + b'}, "a fine text document"]')
elif case == "split-no-line-end":  # an uncompressed .jsonl of 400 MiB with no newline, cut into ranges
    with open(path, "wb") as fh:
        fh.truncate(400 * MIB)     # sparse: no disk space, reads as zeros

base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
result = {}
if case == "split-no-line-end":
    result["ranges"] = len(split_ranges(describe(str(path)), 16 * MIB))
else:
    normalizer = Normalizer(describe(str(path)), cfg)
    result["yielded"] = sum(len(b) for b in normalizer.batches())
    result["stages"] = {s.name: {"in": s.records_in, "q": dict(s.quarantined), "d": dict(s.dropped)}
                        for s in normalizer.stats}
    result["unread"] = normalizer.reader.unread
result["growth_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
result["seconds"] = time.perf_counter() - start
print(json.dumps(result))
"""


@pytest.mark.parametrize("case", ["csv-no-line-end", "txt-no-line-end", "json-huge-item", "json-deep",
                                  "split-no-line-end"])
def test_memory_stays_bounded(tmp_path, case):
    """Each case in a fresh process (address space capped at 6 GB), so its peak RSS is its own: 400 MiB of
    input in one record or one line costs under 200 MB (the default 8 MiB record cap), and deep nesting is
    read in bounded memory and time. Before the fixes the CSV, JSON and split cases took 0.7-1.1 GB and
    the deep JSON was killed; the .txt case was already bounded and stays as a guard."""
    name = {"csv-no-line-end": "x.csv.gz", "txt-no-line-end": "x.txt.gz", "json-huge-item": "x.json.gz",
            "json-deep": "x.json", "split-no-line-end": "x.jsonl"}[case]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT, case, str(tmp_path / name)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["growth_mb"] < 200, result
    if case == "split-no-line-end":
        assert result["ranges"] == 1  # no line end: one range, found without holding the line
        return
    read = result["stages"]["read"]
    if case == "csv-no-line-end":
        assert read["in"] == 1 and read["q"] == {"too_large": 1}
    elif case == "txt-no-line-end":
        assert read["in"] == 1 and read["q"] == {"too_large": 1}
    elif case == "json-huge-item":
        assert read["in"] == 2 and read["q"] == {"too_large": 1} and result["yielded"] == 1
    elif case == "json-deep":  # both deep items stop at read.max_depth while they are parsed
        assert read["in"] == 3 and read["q"] == {"too_deep": 2} and result["yielded"] == 1
    assert result["seconds"] < 60


def test_block_mode_with_one_endless_block_is_linear(tmp_path):
    """Block mode summed the block's line lengths on every line: quadratic in lines per block."""
    p = tmp_path / "one_block.txt"
    p.write_bytes(b"word\n" * 200_000 + b"\nafter the block\n")
    cfg = PrepareConfig()
    cfg.read.txt_mode = "block"
    cfg.read.max_record_bytes = 512 * 1024
    start = time.perf_counter()
    yielded, normalizer = normalize_file(p, cfg)
    assert time.perf_counter() - start < 10
    assert_accounted(yielded, normalizer)
    # one too_large block (its rest skipped, not made a record of its own) and the block after it
    assert normalizer.read.records_in == 2 and normalizer.read.quarantined == {"too_large": 1}


# --- 5. records over the size cap are quarantined by reference ---------------------------------------

def test_records_over_the_cap_are_quarantined_by_reference(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    d = tmp_path / "in"
    d.mkdir()
    secret = "SECRET-CONTENT-" + "z" * 5000
    ok = [{"text": f"a perfectly ordinary document number {i}"} for i in range(3)]
    many_parts = {"text": "x", "parts": [secret[:900]] * 10}  # each value under the cap, the record over it
    (d / "array.json").write_text(json.dumps([ok[0], {"text": secret}, ok[1], many_parts, ok[2]]))
    pq.write_table(pa.Table.from_pylist([ok[0], {"text": secret}, ok[1], ok[2]]), d / "table.parquet")
    (d / "wide.csv").write_text("text,extra\n" + "\n".join([
        f"{ok[0]['text']},a", f'"{secret}",b', f"{ok[1]['text']},c", f"{secret[:900]}," + secret[:900],
        f"{ok[2]['text']},d"]) + "\n")
    (d / "lines.jsonl").write_text("\n".join(json.dumps(r) for r in [ok[0], {"text": secret}, ok[1], ok[2]]) + "\n")
    cfg = fast_config(tmp_path, [d])
    cfg.read.max_record_bytes = 1024
    cfg.dedup.enabled = False
    result = run_prepare(cfg, progress=False, log=lambda msg: None)
    report = result.report
    assert_balanced(report["counts"])
    too_large = {(q["file"], q["line"]) for q in quarantine_lines(result.run_dir) if q["reason"] == "too_large"}
    assert too_large == {("in/array.json", 2), ("in/array.json", 4), ("in/table.parquet", 2), ("in/wide.csv", 2),
                         ("in/wide.csv", 4), ("in/lines.jsonl", 2)}
    for q in quarantine_lines(result.run_dir):
        assert set(q) == {"file", "line", "reason"}
    for name, counts in report["files"].items():
        assert_balanced(counts)
        assert counts["kept"] == 3, (name, counts)
    for path in result.run_dir.rglob("*"):  # by reference: the content is nowhere in the run directory
        if path.is_file():
            assert b"SECRET-CONTENT" not in path.read_bytes(), path


# --- 6. paths from input data never become output paths ---------------------------------------------

PATHS = ["../../etc/passwd", "/etc/passwd", "..\\..\\windows", "~/.ssh/id_rsa", "a\x00b", "\x00", "/dev/null",
         "../run/../../escape", "s3://bucket/../../x", "file:///etc/shadow", "train/part-00000.parquet",
         "manifest.json", "../quarantine/00000.jsonl"]


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*") if p.is_file() or p.is_symlink()}


def path_rows(value: str) -> list[dict]:
    long_answer = f"The answer mentions {value} and goes on for a while."
    return [
        {"instruction": value, "input": value, "output": long_answer, "system": value, "history": [[value, value]],
         "file": value, "path": value, "source": {"file": value, "line": value}, "id": value, "_order": value,
         "_split": value, "out": value},
        {"conversations": [{"from": "human", "value": value, "name": value},
                           {"from": "function_call",
                            "value": json.dumps({"name": value, "arguments": {"path": value}})},
                           {"from": "observation", "value": value, "name": value},
                           {"from": "gpt", "value": long_answer}], "system": value, "tools": value},
        {"messages": [{"role": "user", "content": value},
                      {"role": "assistant", "content": long_answer,
                       "tool_calls": [{"function": {"name": value, "arguments": value}}]},
                      {"role": "tool", "content": value, "name": value},
                      {"role": "assistant", "content": long_answer}], "s3": value, "out": value},
        {"prompt": value, "completion": long_answer, "name": value},
        {"text": long_answer, "file": value, "uri": value, "run_dir": value},
    ]


ODD_NAMES = ["a b.jsonl", "-rf.jsonl", "ünïcødé ünd 中文.jsonl", "new\nline.jsonl", "tab\there.jsonl",
             "back\\slash.jsonl", "x" * 200 + ".jsonl", "00000.jsonl", "manifest.json", "report.json",
             "quote'\"name.jsonl", "semi;colon$(touch pwned).jsonl", "x..%2f..%2fescape.jsonl", "UPPER.JSONL",
             "dots...jsonl", "emoji🙂.jsonl"]


def test_no_path_from_input_data_writes_outside_the_run_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a relative path taken from the data would land here
    d = tmp_path / "in"
    (d / "sub dir" / "..." / "deeper").mkdir(parents=True)
    files = [d / n for n in ODD_NAMES] + [d / "sub dir" / "..." / "deeper" / "nested.jsonl",
                                          d / os.fsdecode(b"not-utf8-\xff\xfe.jsonl")]
    for i, path in enumerate(files):
        rows = [r for value in PATHS for r in path_rows(f"{value}#{i}")]
        if path.name in ("manifest.json", "report.json"):
            path.write_text(json.dumps(rows))
        else:
            path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    pq.write_table(pa.Table.from_pylist([{"text": f"Parquet row about {v} for a while", v: v} for v in PATHS]),
                   d / "paths.parquet")
    (d / "paths.csv").write_text("text,path\n" + "\n".join(f'"A row about {v!r} and more",{v!r}' for v in PATHS[:4]))
    # symlinks inside the input pointing outside: refused by default (issue 20); with follow_symlinks
    # read through, never written to
    outside = tmp_path.parent / f"{tmp_path.name}-outside.jsonl"
    outside.write_text(json.dumps({"text": "a document that lives outside the input folder"}) + "\n")
    (d / "link.jsonl").symlink_to(outside)
    before = snapshot(tmp_path)
    outside_before = outside.read_bytes()
    parent_before = set(os.listdir(tmp_path.parent))
    run_dir = tmp_path / "run"
    cfg = fast_config(tmp_path, [d])
    with pytest.raises(UnreadableInput, match="link.jsonl: symlink to outside the input folder"):
        run_prepare(cfg, progress=False, log=lambda msg: None)
    cfg.read.follow_symlinks = True
    report = run_prepare(cfg, progress=False, log=lambda msg: None).report
    after = snapshot(tmp_path)
    new_or_changed = {p for p, h in after.items() if before.get(p) != h}
    outside_run = {p for p in new_or_changed if not (tmp_path / p).resolve().is_relative_to(run_dir.resolve())}
    assert not outside_run
    assert {p for p in before if p not in after} == set()  # no input removed
    assert set(os.listdir(tmp_path.parent)) == parent_before and outside.read_bytes() == outside_before
    for value in PATHS:
        if value.startswith("/") and "\x00" not in value:
            assert not Path(value + "#0").exists()
    assert_balanced(report["counts"])
    assert report["counts"]["kept"] > 0
    assert len(report["files"]) == len(files) + 3
    quarantine = quarantine_lines(run_dir)
    assert len(quarantine) == report["counts"]["quarantined"]
    assert {q["file"] for q in quarantine} <= set(report["files"])
    assert "in/not-utf8-\\xff\\xfe.jsonl" in report["files"]  # a non-UTF-8 name, shown escaped
    for path in run_dir.rglob("*"):  # everything the run wrote is UTF-8 text or Parquet
        if path.suffix in (".json", ".jsonl", ".md"):
            path.read_text(encoding="utf-8")
        elif path.suffix == ".parquet":
            pq.read_table(path)


# --- 7. coverage-guided: atheris over the readers and the Normalizer --------------------------------

ATHERIS_HARNESS = r"""
import gzip, json, os, sys, tempfile
import atheris
import zstandard

with atheris.instrument_imports(include=["pipeline"]):
    from pipeline.core.config import PrepareConfig, ReadConfig
    from pipeline.data.normalize import Normalizer
    from pipeline.data.readers import UnreadableInput, describe
    from pipeline.core.records import public, to_table
from pipeline.core.schemas import validate

EXTS = ["jsonl", "json", "csv", "tsv", "txt", "jsonl.gz", "json.gz", "csv.gz", "txt.zst"]
DIR = tempfile.mkdtemp()
CONFIGS = []
for mode in ("line", "block"):
    cfg = PrepareConfig()
    cfg.read = ReadConfig(max_record_bytes=1024, batch_size=3, txt_mode=mode)
    CONFIGS.append(cfg)


def one_input(data: bytes):
    # byte 0 picks the file type, byte 1 the config, the rest is the file
    if len(data) < 2:
        return
    ext, cfg, body = EXTS[data[0] % len(EXTS)], CONFIGS[data[1] % 2], data[2:]
    if ext.endswith(".gz"):
        body = gzip.compress(body, 1)
    elif ext.endswith(".zst"):
        body = zstandard.ZstdCompressor().compress(body)
    path = os.path.join(DIR, "x." + ext)
    with open(path, "wb") as fh:
        fh.write(body)
    try:
        normalizer = Normalizer(describe(path), cfg)
        records = [r for batch in normalizer.batches() for r in batch]
    except UnreadableInput:
        return
    removed = sum(sum(s.quarantined.values()) + sum(s.dropped.values()) for s in normalizer.stats)
    assert normalizer.read.records_in == len(records) + removed
    if records:
        to_table(records)
        for rec in records:
            validate(public(rec), "record")
            json.dumps(public(rec), ensure_ascii=False).encode("utf-8")


atheris.Setup(sys.argv, one_input)
atheris.Fuzz()
"""
ATHERIS_SEEDS = [
    b"\x00\x00" + b'{"text": "hello world document"}\n{"instruction": "q?", "output": "answer"}\n',
    b"\x01\x00" + b'[{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}]',
    b"\x01\x00" + b'{"train": [{"text": "some document"}], "test": [{"prompt": "p", "completion": "c"}]}',
    b"\x02\x00" + b'instruction,output\n"What?","An answer here"\n',
    b"\x04\x01" + b"para one line\nline two\n\npara two\n",
    b"\x00\x00" + '{"text": "Привет мир"}\n'.encode("cp1251"),
]


def test_atheris_over_readers_and_normalizer(tmp_path):
    """A short coverage-guided run (fixed seed, a few thousand inputs): no exception but UnreadableInput,
    every row accounted for, every record valid. Longer runs: the same harness with -max_total_time."""
    pytest.importorskip("atheris")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i, seed in enumerate(ATHERIS_SEEDS):
        (corpus / f"seed{i}").write_bytes(seed)
    harness = tmp_path / "fuzz_readers.py"
    harness.write_text(ATHERIS_HARNESS, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(harness), str(corpus), "-seed=1", "-runs=2500", "-max_len=4096",
                           "-timeout=30", "-rss_limit_mb=4096"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-5000:]


# --- 8. end to end: a folder of fuzzed files -------------------------------------------------------

VALID_LINES = [
    {"text": "A perfectly ordinary document about parcels."},
    {"instruction": "Where is my order?", "output": "It left the warehouse this morning."},
    {"messages": [{"role": "user", "content": "Refund, please."}, {"role": "assistant", "content": "Done, 3 days."}]},
    {"conversations": [{"from": "human", "value": "Card declined?"}, {"from": "gpt", "value": "Try another card."}]},
    {"prompt": "Tariff options?", "completion": "Basic, plus and premium."},
]


def is_utf8(value: str) -> bool:
    try:
        value.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


utf8_text = st.one_of(st.sampled_from([s for s in HOSTILE_STRINGS if is_utf8(s)]),  # Arrow strings are UTF-8
                      st.text(st.characters(exclude_categories=("Cs",)), max_size=40))
parquet_rows = st.lists(st.fixed_dictionaries({}, optional={
    "text": st.one_of(st.none(), utf8_text), "content": st.one_of(st.none(), utf8_text),
    "raw": st.one_of(st.none(), st.binary(max_size=20)), "n": st.one_of(st.none(), st.integers(-2**63, 2**63 - 1)),
    "x": st.one_of(st.none(), st.floats()), "tags": st.one_of(st.none(), st.lists(utf8_text, max_size=3))}),
    max_size=8)


def parquet_bytes(rows: list[dict]) -> bytes:
    schema = pa.schema([("text", pa.string()), ("content", pa.string()), ("raw", pa.binary()), ("n", pa.int64()),
                        ("x", pa.float64()), ("tags", pa.list_(pa.string()))])
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), sink)
    return sink.getvalue().to_pybytes()


@st.composite
def fuzzed_folder(draw):
    files = []
    if draw(st.booleans()):  # a real Parquet file with hostile values of every column type
        rows = draw(parquet_rows)
        files.append(("table.parquet", len(rows), parquet_bytes(rows)))
    for i in range(draw(st.integers(1, 6))):
        fmt, data = draw(fuzzed_file())
        if fmt in ("jsonl", "txt") and draw(st.booleans()):  # valid rows mixed with the noise
            good = [json.dumps(r, ensure_ascii=False).encode() for r in draw(st.lists(st.sampled_from(VALID_LINES),
                                                                                       max_size=5))]
            good = [g if fmt == "jsonl" else json.loads(g).get("text", "plain line of text").encode() for g in good]
            data = b"\n".join(good + [data])
        ext = draw(st.sampled_from(["", ".gz", ".zst"]))
        if ext == ".gz":
            payload = gzip.compress(data)
        elif ext == ".zst":
            payload = zstandard.ZstdCompressor().compress(data)
        else:
            payload = data
        files.append((f"f{i}.{fmt}{ext}", data, payload))
    return files


@fuzz(20)
@given(fuzzed_folder())
def test_run_over_fuzzed_files_balances_per_file(tmp_path_factory, files):
    root = tmp_path_factory.mktemp("e2e")
    d = root / "in"
    d.mkdir()
    for name, _, payload in files:
        (d / name).write_bytes(payload)
    cfg = fast_config(root, [d])
    cfg.allow_empty = True  # a folder of noise may keep no record: that is not what is tested here
    cfg.read.skip_unreadable = True
    cfg.read.max_record_bytes = 2048
    cfg.read.shard_bytes = 1024  # large plain .jsonl/.txt files are read as several byte ranges
    result = run_prepare(cfg, progress=False, log=lambda msg: None)
    report = result.report
    assert_balanced(report["counts"])
    unreadable = {Path(u["file"]).name for u in report["unreadable_inputs"]}
    for name, data, _ in files:
        key = f"in/{name}"
        assert (key in report["files"]) != (name in unreadable), name  # read, or reported unreadable: not both
        if key in report["files"]:
            counts = report["files"][key]
            assert_balanced(counts)
            if name == "table.parquet":
                assert counts["input"] == data  # the number of rows
            elif name.split(".")[1] in ("jsonl", "txt"):
                lines = physical_lines(data) if counts["encoding"] in (None, "utf-8") \
                    else decoded_lines(data, counts["encoding"])
                assert counts["input"] == lines, name
    quarantine = quarantine_lines(result.run_dir)
    assert len(quarantine) == report["counts"]["quarantined"]
    assert all(set(q) == {"file", "line", "reason"} for q in quarantine)
    assert {p.name for p in result.run_dir.iterdir()} <= {
        "manifest.json", "quarantine", "report.json", "report.md", "report.html", "train", "validation",
        "dedup_removed.parquet", "dedup_index.parquet", "version_basis.json", ".prepare-run"}


# --- 7. issue 20: cut streams, deep records, stray quotes, BOMs, hostile folder entries --------------

LINES = [json.dumps({"text": f"record number {i}: a perfectly ordinary document"}).encode() + b"\n"
         for i in range(400)]


def compressed(data: bytes, kind: str, members: int) -> tuple[bytes, set[int]]:
    """`data` as `members` gzip members or zstd frames (readers go on across both), and the offsets
    where a member ends (a file cut there is a valid, shorter archive: no reader can tell)."""
    step = -(-len(data) // members) or 1
    pieces = [data[i:i + step] for i in range(0, len(data), step)] or [b""]
    packed = [gzip.compress(p) if kind == "gz" else zstandard.ZstdCompressor(write_checksum=True).compress(p)
              for p in pieces]
    ends, total = set(), 0
    for p in packed:
        total += len(p)
        ends.add(total)
    return b"".join(packed), ends


@fuzz(120)
@given(st.integers(1, 400), st.sampled_from(["gz", "zst"]), st.integers(1, 3), st.floats(0, 1))
@example(400, "gz", 1, 0.999)    # only the gzip trailer (CRC, size) cut
@example(400, "zst", 1, 0.999)   # only the zstd checksum cut
@example(400, "zst", 3, 1.0)     # whole: not truncated
def test_cut_compressed_streams_keep_the_rows_before_the_cut(tmp_path_factory, n, kind, members, fraction):
    """A download cut anywhere: the rows before the cut are read (each exactly as written, in order), the
    file says it is truncated exactly when bytes are missing, or it is unreadable when nothing at all
    could be decoded. A cut .zst was taken as complete; a cut .gz failed the run."""
    data = b"".join(LINES[:n])
    payload, ends = compressed(data, kind, members)
    cut = int(len(payload) * fraction)
    path = tmp_path_factory.mktemp("cut") / f"a.jsonl.{kind}"
    path.write_bytes(payload[:cut])
    try:
        reader = FileReader(describe(str(path)), ReadConfig())
    except UnreadableInput as exc:
        assert cut < len(payload) and "\n" not in str(exc)
        return
    rows = [r for batch in reader.batches() for r in batch]
    assert reader.truncated == (cut not in ends and cut > 0), (cut, ends)  # a 0-byte file is empty
    good = [r for r in rows if r.error is None]
    assert [r.line for r in good] == list(range(1, len(good) + 1))
    assert [json.dumps(r.value).encode() + b"\n" for r in good] == LINES[:len(good)]
    assert len(rows) - len(good) <= 1  # at most the line the cut went through
    if cut == len(payload):
        assert len(good) == n


@fuzz(40)
@given(st.integers(1, 990), st.sampled_from(["list", "dict"]), st.sampled_from(["jsonl", "json"]),
       st.sampled_from(["meta", "text", "messages", "content"]))
@example(520, "list", "jsonl", "meta")
@example(990, "dict", "json", "meta")
@example(99, "dict", "jsonl", "meta")   # at the limit: kept
@example(100, "list", "json", "meta")   # one over
def test_nesting_of_any_depth_is_cut_at_the_one_limit(tmp_path_factory, depth, kind, fmt, field):
    """A row nested deeper than read.max_depth is quarantined as too_deep while it is read, whatever the
    field and format; a row at the limit or below is not (520-990 deep used to reach the PII walk)."""
    limit = ReadConfig().max_depth
    value = "@DEEP@"  # a field value `depth - 1` levels deep: the row is level 1 (spliced in as text)
    base = {"messages": [{"role": "user", "content": "q?"}, {"role": "assistant", "content": "an answer"}]}
    if field == "content":
        row = {"messages": [{"role": "user", "content": "q?"}, {"role": "assistant", "content": "an answer",
                                                                "extra": value}]}
        depth_of_row = 3 + depth  # the row, the messages list, the message, then the value's levels
    else:
        row = {**base, field: value} if field != "messages" else {"messages": base["messages"] + [value]}
        depth_of_row = 1 + depth if field != "messages" else 2 + depth
    path = tmp_path_factory.mktemp("deep") / f"a.{fmt}"
    placeholder = '"@DEEP@"'
    line = json.dumps(row).replace(json.dumps("@DEEP@"), placeholder)  # json.dumps recurses: text below
    opener, closer = ("[", "]") if kind == "list" else ('{"k": ', "}")
    line = line.replace(placeholder, opener * (depth - 1) + ("[]" if kind == "list" else "{}") + closer * (depth - 1))
    path.write_text(line + "\n" if fmt == "jsonl" else f"[{line}]")
    cfg = PrepareConfig()
    cfg.dedup.enabled = False
    yielded, normalizer = normalize_file(path, cfg)
    assert_accounted(yielded, normalizer)
    assert normalizer.read.records_in == 1
    assert (normalizer.read.quarantined.get("too_deep", 0) == 1) == (depth_of_row > limit), depth_of_row


def test_records_nested_520_to_990_deep_do_not_stop_a_run_with_pii(tmp_path, monkeypatch):
    """The attack's shape: JSON 520-990 deep in a field stopped the run with RecursionError in the PII
    walk; each such record is quarantined as too_deep and the run goes on."""
    monkeypatch.chdir(tmp_path)
    d = tmp_path / "in"
    d.mkdir()
    lines = [json.dumps({"text": f"a perfectly ordinary document number {i}"}) for i in range(3)]
    for n in (520, 700, 990):  # written as text: json.dumps itself recurses
        lines.append(f'{{"text": "a document with a deep field of {n}", "meta": ' + '{"k": ' * n + "{}" + "}" * n + "}")
        lines.append('{"instruction": "Why?", "output": "Because.", "history": ' + "[" * n + "]" * n + "}")
    (d / "a.jsonl").write_text("\n".join(lines) + "\n")
    cfg = fast_config(tmp_path, [d])
    cfg.pii.enabled, cfg.dedup.enabled = True, False
    report = run_prepare(cfg, progress=False, log=lambda m: None).report
    assert report["counts"]["quarantined_by_reason"] == {"too_deep": 6} and report["counts"]["kept"] == 3


@fuzz(60)
@given(st.integers(1, 300), st.data())
def test_a_stray_quote_costs_its_own_row_only(tmp_path_factory, n, data):
    k = data.draw(st.integers(0, n - 1))
    cell = data.draw(st.sampled_from([0, 1]))
    closing = data.draw(st.sampled_from(["", 'later",x,y']))  # never closed, or closed with too many cells
    rows = [[f"question {i}", f"answer {i}"] for i in range(n)] + [["the last", "row"]]
    lines = [",".join(r) for r in rows]  # (a quote in the last line takes nothing else: it is not tested)
    lines[k] = ",".join('"' + c if j == cell else c for j, c in enumerate(rows[k]))
    if closing:
        lines.insert(n, closing)
    path = tmp_path_factory.mktemp("csv") / "a.csv"
    path.write_text("question,answer\n" + "\n".join(lines) + "\n")
    reader = FileReader(describe(str(path)), ReadConfig())
    out = [r for batch in reader.batches() for r in batch]
    good = [r.value for r in out if r.error is None]
    assert good == [dict(zip(["question", "answer"], r)) for i, r in enumerate(rows) if i != k]
    assert out[k].error == "bad_csv_row"


bom_text = st.text(st.characters(categories=("L", "N", "Zs"), exclude_characters="\x85\xa0\u2028\u2029"),
                   min_size=1, max_size=30).filter(lambda t: t.strip() == t and t)


@fuzz(60)
@given(st.lists(bom_text, min_size=1, max_size=20), st.sampled_from(["utf-16", "utf-32", "utf-8-sig"]),
       st.sampled_from(["jsonl", "json", "csv", "tsv", "txt"]), st.sampled_from(["", ".gz"]))
def test_files_with_a_bom_are_read_whole(tmp_path_factory, texts, encoding, fmt, ext):
    body = {"jsonl": "".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts),
            "json": json.dumps({"train": [{"text": t} for t in texts]}, ensure_ascii=False),
            "csv": "text,n\n" + "".join(f'"{t}",{i}\n' for i, t in enumerate(texts)),
            "tsv": "text\tn\n" + "".join(f"{t}\t{i}\n" for i, t in enumerate(texts)),
            "txt": "".join(t + "\n" for t in texts)}[fmt]
    payload = body.encode(encoding)
    path = tmp_path_factory.mktemp("bom") / f"a.{fmt}{ext}"
    path.write_bytes(gzip.compress(payload) if ext else payload)
    reader = FileReader(describe(str(path)), ReadConfig())
    out = [r for batch in reader.batches() for r in batch]
    assert [r.value if fmt == "txt" else r.value["text"] for r in out] == texts


HOSTILE_ENTRIES = ["fifo", "loop", "outside_link", "outside_folder_link", "cut_gz", "cut_zst", "utf16", "deep",
                   "stray_quote", "pii_name", "cr_only", "newlines_gz", "dup_columns", "nan_parquet", "pii_direct"]


@fuzz(12)
@given(st.sets(st.sampled_from(HOSTILE_ENTRIES), min_size=1))
def test_run_over_hostile_folder_entries_ends_and_accounts(tmp_path_factory, entries):
    """FIFOs, symlink loops, links out of the input folder, cut archives, UTF-16, deep records, stray
    quotes and a file name holding personal data, in one folder: the run ends (no blocking open, no
    endless walk), reports what it refused, and balances per file; nothing outside the folder is read."""
    import os

    root = tmp_path_factory.mktemp("hostile")
    d = root / "in"
    d.mkdir()
    (root / "outside").mkdir()
    (root / "outside" / "secret.jsonl").write_text('{"text": "SECRET-OUTSIDE a document not given"}\n')
    (d / "ok.jsonl").write_text('{"text": "a perfectly ordinary document"}\n')
    data = b"".join(LINES)
    made = {"fifo": lambda: os.mkfifo(d / "pipe.jsonl"),
            "loop": lambda: ((d / "sub").mkdir(), os.symlink("..", d / "sub" / "up"), os.symlink(".", d / "here")),
            "outside_link": lambda: os.symlink(root / "outside" / "secret.jsonl", d / "link.jsonl"),
            "outside_folder_link": lambda: os.symlink(root / "outside", d / "elsewhere"),
            "cut_gz": lambda: (d / "cut.jsonl.gz").write_bytes(gzip.compress(data)[:-100]),
            # (several blocks: zstd decodes whole blocks of up to 128 KiB; one cut block alone is unreadable)
            "cut_zst": lambda: (d / "cut.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(b"".join(
                json.dumps({"text": f"{i} {os.urandom(16).hex()}"}).encode() + b"\n" for i in range(3000)))[:-100]),
            "utf16": lambda: (d / "wide.jsonl").write_bytes(data.decode().encode("utf-16")),
            "deep": lambda: (d / "deep.jsonl").write_text('{"text": "a deep one", "m": ' + "[" * 700 + "]" * 700 + "}\n"),
            "stray_quote": lambda: (d / "q.csv").write_text('text,n\n"open,1\n' + "".join(
                f"row number {i} of the table,{i}\n" for i in range(50))),
            "pii_name": lambda: (d / "musteri_ahmet_yilmaz_27384619550.jsonl").write_bytes(LINES[0]),
            "cr_only": lambda: (d / "mac.jsonl").write_bytes(b"\r".join(
                json.dumps({"text": f"an old Mac line number {i}"}).encode() for i in range(3)) + b"\r"),
            "newlines_gz": lambda: (d / "nl.jsonl.gz").write_bytes(gzip.compress(
                b"\n" * 200_000 + b'{"text": "the one record among newlines"}\n', compresslevel=1)),
            "dup_columns": lambda: (d / "dup.csv").write_text("text,note,note\na csv document,first,second\n"),
            "nan_parquet": lambda: pq.write_table(pa.table({"text": ["a parquet document with a NaN score"],
                                                            "score": [float("nan")], "hi": [float("inf")]}),
                                                  d / "nan.parquet"),
            "pii_direct": lambda: (root / "John_Smith_12345678901.jsonl").write_bytes(LINES[0])}
    for entry in sorted(entries):
        made[entry]()
    cfg = fast_config(root, [d] + ([root / "John_Smith_12345678901.jsonl"] if "pii_direct" in entries else []))
    cfg.read.skip_unreadable = True
    cfg.pii.enabled = bool({"pii_name", "pii_direct"} & entries)  # the name check is the PII engine's
    report = run_prepare(cfg, progress=False, log=lambda msg: None).report
    assert_balanced(report["counts"])
    for counts in report["files"].values():
        assert_balanced(counts)
    refused = {os.path.basename(u["file"]) for u in report["unreadable_inputs"]}
    assert refused == ({"pipe.jsonl"} if "fifo" in entries else set()) | (
        {"link.jsonl"} if "outside_link" in entries else set()) | (
        {"elsewhere"} if "outside_folder_link" in entries else set())
    files = report["files"]
    assert files["in/ok.jsonl"]["input"] == 1 and not any("secret" in name for name in files)
    for name in ("cut.jsonl.gz", "cut.jsonl.zst"):
        if f"in/{name}" in files:
            assert files[f"in/{name}"]["truncated"] and 0 < files[f"in/{name}"]["input"] < 3200
    if "utf16" in entries:
        assert files["in/wide.jsonl"]["input"] == 400 and files["in/wide.jsonl"]["quarantined"] == 0
    if "deep" in entries:
        assert files["in/deep.jsonl"]["quarantined_by_reason"] == {"too_deep": 1}
    if "stray_quote" in entries:
        assert files["in/q.csv"]["quarantined_by_reason"] == {"bad_csv_row": 1} and files["in/q.csv"]["input"] == 51
    if "pii_name" in entries:
        assert not any("27384619550" in name or "ahmet" in name for name in files)
        assert sum(name.startswith("redacted-") for name in files) == 1 + ("pii_direct" in entries)
    if "cr_only" in entries:
        assert files["in/mac.jsonl"]["input"] == 3 and files["in/mac.jsonl"]["quarantined"] == 0
    if "newlines_gz" in entries:
        assert files["in/nl.jsonl.gz"]["input"] == 200_001
        assert files["in/nl.jsonl.gz"]["dropped"] == {"empty_line": 200_000}
    if "dup_columns" in entries:
        assert any("renamed" in w for w in files["in/dup.csv"]["warnings"])
    metas = [row["meta"] for split in ("train", "validation") if (root / "run" / split).is_dir()
             for row in pq.read_table(root / "run" / split).to_pylist()]
    for meta in metas:  # strict JSON: no bare NaN or Infinity
        json.loads(meta, parse_constant=lambda c: pytest.fail(f"{c} in meta"))
    if "dup_columns" in entries:
        assert {"note": "first", "note.1": "second", "lang": "en"} in [json.loads(m) for m in metas]
    if "nan_parquet" in entries:
        assert {"score": None, "hi": None, "lang": "en"} in [json.loads(m) for m in metas]
    text = (root / "run" / "report.json").read_text() + (root / "run" / "report.md").read_text()
    text += (root / "run" / "manifest.json").read_text() if (root / "run" / "manifest.json").exists() else ""
    assert "SECRET-OUTSIDE" not in text and "27384619550" not in text and "12345678901" not in text
    if "pii_direct" in entries:
        assert "John" not in text and "Smith" not in text


LINE_ENDS = st.lists(st.tuples(st.sampled_from(["", "  ", '{"text": "a record"}', '{"text": "x\\ry"}', "[1]", "no"]),
                               st.sampled_from(["\n", "\r\n", "\r"])), max_size=40)


@fuzz(60)
@given(LINE_ENDS, st.sampled_from([1, 2, 3, 5, 8, 64, 1 << 20]), st.booleans())
def test_any_mix_of_line_ends_and_empty_runs_is_counted_line_by_line(tmp_path_factory, lines, block, cut_last):
    """\n, \r\n and lone \r in any mix, runs of empty lines, a last line without its end, read in blocks
    of any size: the rows are exactly the lines bytes.splitlines() sees, each counted once."""
    import pipeline.data.readers.text as readers_text

    data = "".join(text + end for text, end in lines)
    if cut_last and lines:
        data = data[: -len(lines[-1][1])]
    path = tmp_path_factory.mktemp("ends") / "a.jsonl"
    path.write_bytes(data.encode())
    old, readers_text.LINE_BLOCK = readers_text.LINE_BLOCK, block
    try:
        out = [r for batch in FileReader(describe(str(path)), ReadConfig()).batches() for r in batch]
    finally:
        readers_text.LINE_BLOCK = old
    expected = data.encode().splitlines()
    assert sum(r.count for r in out) == len(expected)
    flat = []
    for r in out:
        flat += [(r.line + i, r.error) for i in range(r.count)] if r.error == "empty_line" else [(r.line, r.error)]
    assert [n for n, _ in flat] == list(range(1, len(expected) + 1))
    assert [e == "empty_line" for _, e in flat] == [not line.strip() for line in expected]


LARGE_RECORDS_RUN = r"""
import gzip, json, random, resource, sys
from pathlib import Path
from pipeline.core.config import PrepareConfig
from pipeline.runner import run_prepare

tmp = Path(sys.argv[1])
(tmp / "in").mkdir()
rng = random.Random(0)
words = "order delivery refund payment customer product support ticket invoice sipariş kargo заказ".split()
with gzip.open(tmp / "in" / "big.jsonl.gz", "wt", encoding="utf-8", compresslevel=1) as fh:
    for i in range(8):  # 8 distinct records of 3 MB: 24 MB, in one 2,000-row batch before
        fh.write(json.dumps({"text": f"{i} " + " ".join(rng.choices(words, k=400_000))[:3_000_000]},
                            ensure_ascii=False) + "\n")
cfg = PrepareConfig(inputs=[str(tmp / "in")], out=str(tmp / "run"), workers=1)
cfg.pii.enabled = cfg.lengths.enabled = cfg.estimate.enabled = False  # dedup on: its keys hold the most
cfg.read.batch_bytes = 2 << 20
cfg.quality.repetition = "off"  # the 3 MB records repeat one sentence: they would be dropped as repetitive
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
report = run_prepare(cfg, progress=False, log=lambda m: None).report
print(json.dumps({"kept": report["counts"]["kept"],
                  "growth_mb": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024}))
"""


def test_a_run_over_large_records_holds_a_batch_of_bytes_not_of_rows(tmp_path):
    """Memory followed record size x batch rows (100 records of 7 MB: 24 GB, OOM-killed): batches end at
    read.batch_bytes in the readers and in the runner's per-shard loops. 8 records of 3 MB with a 2 MiB
    cap: 408 MB of growth (one record at a time, the dedup keys' peak), 1,061 MB before."""
    proc = subprocess.run([sys.executable, "-c", LARGE_RECORDS_RUN, str(tmp_path)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["kept"] == 8 and result["growth_mb"] < 700, result
