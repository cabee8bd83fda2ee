"""The largest inputs the record caps let through, in a real `prepare run`: memory per process stays bounded.

Each case is one `python -m pipeline.cli run` with every stage at its defaults, started from a small wrapper
process that reports the peak RSS of its largest descendant (RUSAGE_CHILDREN): the CLI process and, with
more workers, each worker; so the figure is the peak of one process, not a sum."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import ROOT

from pipeline.core.config import ReadConfig

PEAK_LIMIT_MB = 2048

RUN = r"""
import json, resource, subprocess, sys
proc = subprocess.run([sys.executable, "-m", "pipeline.cli", "run", *sys.argv[1:]], capture_output=True, text=True)
print(json.dumps({"rc": proc.returncode, "stderr": proc.stderr[-3000:],
                  "peak_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def run_cli(tmp_path, inputs: list, *flags: str) -> tuple[dict, dict]:
    """(the run's report, {"rc", "stderr", "peak_mb"}) of `prepare run` over `inputs`."""
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-c", RUN, *map(str, inputs), "--out", str(out), "--workers", "1",
                           "--no-estimate", *flags],
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"peak RSS {result['peak_mb']:.0f} MB")  # the figure, with pytest -s
    assert result["rc"] == 0, result["stderr"]
    return json.loads((out / "report.json").read_text()), result


def no_space_text(rng: random.Random, chars: int) -> str:
    """Letters without a space: one word, shingled by characters (one shingle per character)."""
    return "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=chars))


def test_the_largest_record_without_spaces_stays_bounded(tmp_path):
    """A record just under read.max_record_bytes, no spaces (one shingle per character): MinHash held a
    128 x 8M matrix for it (4.4 GB for a 7 MB record), and shingling 60 bytes a character; the lengths step's
    BPE over the one 8M-character word held a Python object per token (+640 MB: 2,030 MB peak). Text chunking is
    off here: cutting the word into 2,889 chunks measures each (about 2 minutes); its memory, the windowed
    piece_ends, was measured by hand at 1,587 MB (2,617 MB before)."""
    cap = ReadConfig().max_record_bytes
    line = json.dumps({"text": no_space_text(random.Random(0), cap - 64)})
    assert cap - 1024 < len(line) < cap
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "big.jsonl").write_text(line + "\n")
    (tmp_path / "no_chunks.json").write_text('{"lengths": {"text_chunking": "off"}}')
    report, result = run_cli(tmp_path, [tmp_path / "in"], "--config", str(tmp_path / "no_chunks.json"))
    assert report["counts"]["kept"] == 1
    assert result["peak_mb"] < PEAK_LIMIT_MB, result


@pytest.fixture(scope="module")
def quarantined_run(tmp_path_factory):
    """One run over the two records the caps quarantine unbuilt (a Parquet row of a million messages, a JSON
    record of 200,000 turns), each beside an ordinary record: (report, result) as run_cli gives them."""
    tmp_path = tmp_path_factory.mktemp("quarantined")
    (tmp_path / "in").mkdir()
    turns = pa.array([[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}] * 500_000])
    pq.write_table(pa.table({"messages": turns}), tmp_path / "in" / "chat.parquet", compression="zstd")
    ok = [{"messages": [{"role": "user", "content": "Where is my order?"},
                        {"role": "assistant", "content": "It ships tomorrow morning."}]}]
    (tmp_path / "in" / "ok.jsonl").write_text(json.dumps(ok[0]) + "\n")
    rows = [{"messages": chat(200_000, lambda i: "a")}, {"messages": chat(2, lambda i: f"an ordinary turn {i}")}]
    (tmp_path / "in" / "long.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run_cli(tmp_path, [tmp_path / "in"])


def test_a_parquet_row_of_a_million_messages_is_quarantined_unbuilt(quarantined_run):
    """A 2.5 KB Parquet file whose one row holds 1,000,000 messages (30 MB as JSON): only message text counted
    toward the cap, so it was built as Python objects and ran past 300 s at 2.9 GB without a report."""
    report, result = quarantined_run
    assert report["files"]["in/chat.parquet"]["quarantined_by_reason"] == {"too_large": 1}
    assert report["files"]["in/ok.jsonl"]["kept"] == 1
    assert result["peak_mb"] < PEAK_LIMIT_MB, result


def chat(turns: int, content=lambda i: f"message {i}") -> list[dict]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": content(i)} for i in range(turns)]


def test_records_over_max_turns_are_quarantined_in_every_chat_format(tmp_path):
    """No limit on turns per record: one of 200,000 turns took 250 s in PII alone. read.max_turns
    quarantines a longer conversation as too_many_turns, whichever format it came in."""
    from pipeline.core.config import PrepareConfig
    from pipeline.data.normalize import Normalizer
    from pipeline.data.readers import describe

    sharegpt = [{"from": "human" if m["role"] == "user" else "gpt", "value": m["content"]} for m in chat(6)]
    history = [["question 1", "answer 1"]]  # with the instruction and output: 4 turns
    rows = [{"messages": chat(4)}, {"messages": chat(6)}, {"conversations": sharegpt[:4]},
            {"conversations": sharegpt}, {"instruction": "q", "output": "a", "history": history},
            {"instruction": "q", "output": "a", "history": history + [["question 2", "answer 2"]]},
            {"text": "a plain document has one turn"}]
    cfg = PrepareConfig()
    cfg.read.max_turns = 4
    reasons = []
    for i, row in enumerate(rows):  # one file per row: a file has one format
        p = tmp_path / f"{i}.jsonl"
        p.write_text(json.dumps(row) + "\n")
        normalizer = Normalizer(describe(str(p)), cfg)
        kept = sum(len(b) for b in normalizer.batches())
        reasons.append(dict(normalizer.normalize.quarantined) or kept)
    assert reasons == [1, {"too_many_turns": 1}, 1, {"too_many_turns": 1}, 1, {"too_many_turns": 1}, 1]


def test_a_record_of_200000_turns_is_quarantined_in_a_run(quarantined_run):
    report, _ = quarantined_run
    counts = report["files"]["in/long.jsonl"]
    assert counts["quarantined_by_reason"] == {"too_many_turns": 1} and counts["kept"] == 1
    assert report["counts"]["quarantined_by_reason"] == {"too_large": 1, "too_many_turns": 1}
    assert report["counts"]["kept"] == 2


def test_a_record_of_max_turns_just_under_the_byte_cap_stays_bounded(tmp_path):
    """The most turns the caps allow, each as long as the byte cap leaves it: through every stage."""
    read = ReadConfig()
    rng = random.Random(1)
    words = "order delivery refund payment customer product support ticket invoice sipariş kargo заказ".split()
    turn_bytes = read.max_record_bytes // read.max_turns - 64  # the rest: role, keys, JSON punctuation
    record = {"messages": chat(read.max_turns, lambda i: " ".join(rng.choices(words, k=turn_bytes // 4))
                                                          .encode()[:turn_bytes].decode(errors="ignore"))}
    line = json.dumps(record, ensure_ascii=False).encode()
    assert read.max_record_bytes - 64 * 1024 < len(line) < read.max_record_bytes
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "turns.jsonl").write_bytes(line + b"\n")
    report, result = run_cli(tmp_path, [tmp_path / "in"])
    assert report["counts"]["kept"] == 1
    assert result["peak_mb"] < PEAK_LIMIT_MB, result
