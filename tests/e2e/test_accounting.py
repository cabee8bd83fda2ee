"""Every input row is accounted for: input == kept + quarantined + sum(dropped), per run and per file."""
import gzip
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, fast_config

from pipeline.runner import run_prepare

WORDS = ("invoice refund order parcel courier address password account tariff bonus delivery warehouse "
         "payment card subscription upgrade discount coupon receipt customer support ticket status").split()


def sentence(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize()


def write_corrupted_inputs(d):
    import random

    rng = random.Random(7)
    d.mkdir()
    lines = [json.dumps({"instruction": sentence(rng, 12) + "?", "output": sentence(rng, 20) + "."}) for i in range(40)]
    lines[5] = '{"instruction": "broken'                                   # invalid JSON
    lines[6] = json.dumps({"instruction": "", "output": "no question"})       # empty turn
    lines[7] = json.dumps({"instruction": "x", "output": 12})                  # non-string
    lines[8] = json.dumps({"instruction": "hi", "output": "ok"})               # too short
    lines[9] = lines[10]                                                       # exact duplicate
    lines[11] = ""                                                             # empty line
    lines[12] = json.dumps({"instruction": "big " + "y" * 3000, "output": "z"})  # over the size cap
    (d / "alpaca.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (d / "chat.jsonl").write_bytes(
        (json.dumps({"messages": [{"role": "user", "content": "Привет, как дела с заказом?"},
                                  {"role": "assistant", "content": "Заказ уже в пути."}]}) + "\n").encode()
        + b'{"messages": [{"role": "assistant", "content": "first"}]}\n'   # bad role order
        + b"\xff\xfe garbage that is not json \x00\n")
    (d / "notes.txt.gz").write_bytes(gzip.compress("Long enough note number one.\nshort\n\nAnother long note.\n".encode()))
    return d


def assert_balanced(counts):
    assert counts["input"] == counts["kept"] + counts["quarantined"] + sum(counts["dropped"].values()), counts


def test_accounting_invariant_on_corrupted_files(tmp_path):
    inputs = write_corrupted_inputs(tmp_path / "in")
    cfg = fast_config(tmp_path, [inputs])
    cfg.read.max_record_bytes = 2048
    cfg.clean.min_chars = 8
    report = run_prepare(cfg, progress=False).report
    counts = report["counts"]
    assert_balanced(counts)
    for name, file_counts in report["files"].items():
        assert_balanced(file_counts)
    assert counts["input"] == 40 + 3 + 4
    assert counts["quarantined_by_reason"]["invalid_json"] == 2
    assert counts["quarantined_by_reason"]["too_large"] == 1
    assert counts["quarantined_by_reason"]["bad_role_order"] == 1
    assert counts["quarantined_by_reason"]["empty_turn"] == 1
    assert counts["quarantined_by_reason"]["non_string_content"] == 1
    assert counts["dropped"]["too_short"] == 2
    assert counts["dropped"]["exact_duplicate"] == 1
    assert counts["dropped"]["empty_line"] == 2
    quarantine = [json.loads(line) for f in sorted((tmp_path / "run" / "quarantine").glob("*.jsonl"))
                  for line in f.read_text().splitlines()]
    assert len(quarantine) == counts["quarantined"]
    assert {"file", "line", "reason"} == set(quarantine[0])
    assert {(q["file"], q["line"]) for q in quarantine} >= {("in/alpaca.jsonl", 6), ("in/chat.jsonl", 3)}


def cli(*args, cwd):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.integration  # the CLI in a subprocess
def test_unreadable_input_stops_before_output_with_one_line(tmp_path):
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"text": "a perfectly fine document"}) + "\n")
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(b"not gzip at all")
    out = tmp_path / "run"
    proc = cli("run", str(good), str(bad), "--out", str(out), "--no-pii", "--no-lengths", "--no-estimate",
               cwd=tmp_path)
    assert proc.returncode != 0
    assert proc.stderr.strip().count("\n") == 0, proc.stderr
    assert "bad.jsonl.gz" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()
    proc = cli("run", str(good), str(bad), "--out", str(out), "--no-pii", "--no-lengths", "--no-estimate",
               "--skip-unreadable", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["unreadable_inputs"][0]["file"].endswith("bad.jsonl.gz")
    assert report["counts"]["kept"] == 1


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_permission_denied_is_unreadable(tmp_path):
    p = tmp_path / "secret.jsonl"
    p.write_text("{}\n")
    p.chmod(0)
    proc = cli("run", str(p), "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert proc.returncode != 0 and "permission denied" in proc.stderr
