"""Decontamination through `prepare run --eval-sets` (the CLI's main(), in this process): a training record that copies an eval item, as it is or
in another format, is removed in phase 1 and listed by reference in decontam_removed.parquet; the eval files
are only read, and an edited eval file makes a resumed run redo phase 1's work."""
import hashlib
import json
import random

import pyarrow.parquet as pq
from conftest import prepare_in_process
from test_readers import PII_FILE
from test_run_wiring import rows_of, write_jsonl

from pipeline.core.config import PrepareConfig
from pipeline.runner.phases import normalize_shard, plan_shards
from pipeline.runner.run import build_eval_index

TOPICS = ("the harbour", "a mountain village", "the old library", "a river delta", "the night market",
          "a desert observatory", "the railway museum", "a coastal forest")
VERBS = ("describes", "explains", "compares", "summarises", "questions", "recalls")
EVAL = [
    {"instruction": "Which river did the expedition follow to reach the northern lakes in the spring of the "
                    "third year of the survey", "output": "They followed the Copper River upstream for eleven "
                                                          "days until the ice broke on the lakes."},
    {"instruction": "Why did the committee approve the new bridge design after the second public hearing in "
                    "the old town hall", "output": "Engineers showed that the steel arches would survive a "
                                                   "flood twice as high as the one recorded in 1953."},
]


def training_rows(seed: int = 3) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(24):
        topic, verb = rng.choice(TOPICS), rng.choice(VERBS)
        rows.append({"instruction": f"Write a note {i} that {verb} {topic} for a visitor who arrives on day {i}.",
                     "output": f"Note {i}: the guide {verb} {topic}, its history and what to see first, "
                               f"then suggests a walk of {i + 2} kilometres before lunch."})
    return rows


def write_inputs(tmp_path):
    rows = training_rows()
    rows.insert(5, {**EVAL[0], "id": "copied-as-is"})  # the eval item, as it is
    # the other one re-templated: one text, a prefix of its own, other case and spacing
    rows.insert(12, {"text": f"QUESTION:  {EVAL[1]['instruction'].upper()}?\nANSWER: {EVAL[1]['output']}",
                     "id": "re-templated"})
    data = write_jsonl(tmp_path / "train.jsonl", rows)
    evals = write_jsonl(tmp_path / "eval.jsonl", EVAL)
    return data, evals


def run(tmp_path, name, *args):
    out = tmp_path / name
    proc = prepare_in_process("run", str(tmp_path / "train.jsonl"), "--out", str(out), "--workers", "1", "--no-pii",
                       "--no-lengths", "--no-estimate", *args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out, proc


def texts(run_dir) -> str:
    return json.dumps(rows_of(run_dir), ensure_ascii=False).lower()


def test_eval_sets_remove_the_planted_copies_that_a_run_without_them_keeps(tmp_path):
    data, evals = write_inputs(tmp_path)
    eval_bytes = hashlib.sha256(evals.read_bytes()).hexdigest()

    plain, _ = run(tmp_path, "plain")
    assert "copper river" in texts(plain) and "steel arches" in texts(plain)
    assert "decontam" not in json.loads((plain / "report.json").read_text())["stages"]
    assert not (plain / "decontam_removed.parquet").exists()

    checked, proc = run(tmp_path, "checked", "--eval-sets", str(evals))
    assert "eval index" in proc.stderr  # the build has a progress line of its own
    assert "copper river" not in texts(checked) and "steel arches" not in texts(checked)
    report = json.loads((checked / "report.json").read_text())
    assert report["stages"]["decontam"]["dropped"] == {"eval_ngram": 2}
    assert report["counts"]["kept"] == json.loads((plain / "report.json").read_text())["counts"]["kept"] - 2
    audit = pq.read_table(checked / "decontam_removed.parquet").to_pylist()
    assert sorted((a["source_line"], a["reason"], a["duplicate_of_file"], a["duplicate_of_line"]) for a in audit) \
        == [(6, "eval_ngram", "eval.jsonl", 1), (13, "eval_ngram", "eval.jsonl", 2)]
    assert all(a["source_file"] == "train.jsonl" for a in audit)
    assert not any("Copper" in json.dumps(a) for a in audit)  # references, never text
    assert hashlib.sha256(evals.read_bytes()).hexdigest() == eval_bytes  # only read

    # a later run in the same directory without eval sets leaves no stale audit behind
    run(tmp_path, "checked")
    assert not (checked / "decontam_removed.parquet").exists()


def test_an_edited_eval_file_makes_phase_1_redo_its_shards(tmp_path):
    data, evals = write_inputs(tmp_path)
    cfg = PrepareConfig(inputs=[str(data)], out=str(tmp_path / "run"), workers=1,
                        decontam={"eval_sets": [str(evals)]}, pii={"enabled": False})
    work = tmp_path / "work"
    (task,), _ = plan_shards(cfg)

    def phase1():
        build_eval_index(cfg, work)  # as the run does before phase 1
        return normalize_shard(task, cfg, str(tmp_path / "run"), str(work))

    first = phase1()
    assert not first.get("reused") and first["stages"]["decontam"]["dropped"] == {"eval_ngram": 2}
    assert phase1().get("reused")  # same inputs, same eval files: the shard's work is reused
    write_jsonl(evals, EVAL[:1])  # the second eval item taken out
    again = phase1()
    assert not again.get("reused") and again["stages"]["decontam"]["dropped"] == {"eval_ngram": 1}


def test_an_eval_set_that_cannot_be_read_stops_the_run_before_any_output(tmp_path):
    write_inputs(tmp_path)
    proc = prepare_in_process("run", str(tmp_path / "train.jsonl"), "--out", str(tmp_path / "run"), "--no-pii",
                       "--eval-sets", str(tmp_path / "missing.jsonl"), cwd=tmp_path)
    assert proc.returncode != 0 and "missing.jsonl: no such file" in proc.stderr
    assert not (tmp_path / "run").exists()


def test_an_eval_file_named_with_personal_data_is_a_label_in_every_output(tmp_path):
    write_inputs(tmp_path)
    (tmp_path / "train.jsonl").rename(tmp_path / "train-in.jsonl")
    named = tmp_path / PII_FILE
    (tmp_path / "eval.jsonl").rename(named)
    proc = prepare_in_process("run", "train-in.jsonl", "--out", "run", "--no-lengths", "--no-estimate", "--eval-sets", PII_FILE,
                       cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    (shown,) = manifest["config"]["decontam"]["eval_sets"]
    assert shown.startswith("redacted-")
    audit = pq.read_table(tmp_path / "run" / "decontam_removed.parquet").to_pylist()
    assert len(audit) == 2 and all(a["duplicate_of_file"].startswith("redacted-") for a in audit)
    secret = PII_FILE.split(".")[0].encode()
    assert secret not in (proc.stdout + proc.stderr).encode()
    assert not [p for p in (tmp_path / "run").rglob("*") if p.is_file() and secret in p.read_bytes()]
