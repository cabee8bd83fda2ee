"""Through `prepare run`: canned answers counted and capped across the run, the validation split stratified by
language (the same in any shard count, and after a kill and resume), and the zero-trainable check failing a
run whose answers lie past the max length."""
import json
import os
import random
import subprocess
import sys
from collections import Counter

import pyarrow.parquet as pq
import pytest
from conftest import ROOT, fast_config, prepare_in_process
from slowshards import start_and_kill
from test_lang import SENTENCES

from pipeline.runner import run_prepare

pytestmark = pytest.mark.integration

WORDS = ("kargo fatura iade şifre sipariş teslimat invoice refund parcel courier account upgrade coupon receipt "
         "ticket status warehouse payment address delivery order return label box tracking").split()
CANNED = "Thank you for contacting us, your request has been forwarded to the team."


def rows_of(run_dir, split=None):
    manifest = json.loads((run_dir / "manifest.json").read_text())
    out = []
    for shard in manifest["shards"]:
        if split is None or shard["split"] == split:
            out += [{**r, "_split": shard["split"]} for r in pq.read_table(run_dir / shard["path"]).to_pylist()]
    return out


def answer_of(row) -> str:
    last = row["messages"][-1]
    return (json.loads(last) if isinstance(last, str) else last)["content"]  # a shard holds messages as JSON


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    return path


# ---------------------------------------------------------------------------------------- canned answers

def canned_corpus(path, repeats: int, others: int = 30, seed: int = 1):
    """`repeats` records with one answer (case and spacing varied) among `others` with answers of their own;
    the prompts are distinct enough that no two records are near duplicates."""
    rng = random.Random(seed)
    rows = []
    for i in range(repeats + others):
        rows.append({"instruction": " ".join(rng.choice(WORDS) for _ in range(18)) + f" {i}", "output": None})
    canned_at = sorted(rng.sample(range(len(rows)), repeats))
    for n, i in enumerate(canned_at):
        rows[i]["output"] = CANNED.upper() if n % 3 == 1 else CANNED.replace(" ", "  ") if n % 3 == 2 else CANNED
    for i, row in enumerate(rows):
        if row["output"] is None:
            row["output"] = " ".join(rng.choice(WORDS) for _ in range(25)) + f" answer {i}"
    write_jsonl(path, rows)
    return canned_at


def canned_run(tmp_path, repeats: int, **quality):
    data = tmp_path / "in.jsonl"
    canned_at = canned_corpus(data, repeats)
    cfg = fast_config(tmp_path, [data], quality={"canned_min_count": 20, **quality})
    return run_prepare(cfg, progress=False), canned_at


def test_a_planted_canned_answer_is_counted_in_the_run(tmp_path):
    result, canned_at = canned_run(tmp_path, 25)
    canned = result.report["quality"]["canned"]
    assert (canned["answers"], canned["records"], canned["capped"], canned["mode"]) == (1, 25, 0, "count")
    top = canned["top"][0]
    assert top["records"] == 25 and top["chars"] == len(CANNED) and len(top["example_ids"]) == 5
    assert result.report["counts"]["kept"] == 55 and "canned_answer" not in result.report["counts"]["dropped"]
    for name in ("report.json", "report.md", "report.html"):  # a hash, a length, ids: never the text
        page = (result.run_dir / name).read_text()
        assert top["answer_hash"] in page and "forwarded to the team" not in page.lower(), name
    assert result.report["stages"]["canned"]["records_in"] == 55


def test_cap_keeps_the_first_records_of_a_canned_answer_and_drops_the_rest(tmp_path):
    result, canned_at = canned_run(tmp_path, 25, canned="cap", canned_cap=20)
    counts = result.report["counts"]
    assert counts["dropped"]["canned_answer"] == 5 and counts["kept"] == 50
    assert counts["input"] == counts["kept"] + counts["quarantined"] + sum(counts["dropped"].values())
    assert result.report["quality"]["canned"]["capped"] == 5
    kept = [r for r in rows_of(result.run_dir)
            if " ".join(answer_of(r).split()).casefold() == CANNED.casefold()]
    assert sorted(r["source"]["line"] for r in kept) == [i + 1 for i in canned_at[:20]]  # the first 20, in input order


def test_nineteen_repeats_are_not_canned(tmp_path):
    result, _ = canned_run(tmp_path, 19, canned="cap", canned_cap=5)
    canned = result.report["quality"]["canned"]
    assert (canned["answers"], canned["records"], canned["capped"], canned["top"]) == (0, 0, 0, [])
    assert "canned_answer" not in result.report["counts"]["dropped"] and result.report["counts"]["kept"] == 49


def test_canned_off_writes_nothing(tmp_path):
    result, _ = canned_run(tmp_path, 25, canned="off")
    assert "canned" not in result.report["quality"] and "canned" not in result.report["stages"]
    assert result.report["counts"]["kept"] == 55


# -------------------------------------------------------------------------------- the stratified split

PER_LANG = {"tr": 47, "ru": 33, "en": 61, "uk": 25, "kk": 18, "ar": 29, "az": 22}


def mixed_corpus(path, duplicates: int = 6):
    """Records in seven languages (the test_lang sentences, numbered), shuffled, with a few exact copies that
    dedup removes before the split is chosen."""
    rng = random.Random(7)
    rows = []
    for lang, n in PER_LANG.items():
        prompt, answer = SENTENCES[lang]
        rows += [{"instruction": f"{prompt} {1000 + i}", "output": f"{answer} {i}"} for i in range(n)]
    rng.shuffle(rows)
    rows += [dict(r) for r in rng.sample(rows, duplicates)]
    return write_jsonl(path, rows)


def split_config(tmp_path, data, out="run", **read):
    cfg = fast_config(tmp_path, [data], split={"validation_fraction": 0.1, "seed": 5},
                      dedup={"near": False}, read=read)
    cfg.out = str(tmp_path / out)
    return cfg


def validation_by_lang(run_dir) -> tuple[Counter, Counter, dict]:
    rows = rows_of(run_dir)
    langs = {r["id"]: json.loads(r["meta"])["lang"] for r in rows}
    total = Counter(langs.values())
    val = Counter(langs[r["id"]] for r in rows if r["_split"] == "validation")
    return total, val, {r["id"]: r["_split"] for r in rows}


def test_each_language_gets_its_validation_share_in_any_shard_count(tmp_path):
    data = mixed_corpus(tmp_path / "mixed.jsonl")
    one = run_prepare(split_config(tmp_path, data), progress=False)
    assert one.report["counts"]["dropped"]["exact_duplicate"] == 6
    total, val, sides = validation_by_lang(one.run_dir)
    assert len(total) >= 6  # the languages were told apart
    assert {lang: val[lang] for lang in total} == {lang: int(0.1 * n + 0.5) for lang, n in total.items()}
    assert one.report["split"]["method"] == "stratified_by_language"
    assert {k: v["validation"] for k, v in one.report["split"]["languages"].items()} == dict(
        (lang, int(0.1 * n + 0.5)) for lang, n in total.items())

    many = run_prepare(split_config(tmp_path, data, out="many", shard_bytes=1024), progress=False)
    assert len(many.report["files"]) == 1 and many.report["files"]["mixed.jsonl"]["shards"] >= 8
    assert validation_by_lang(many.run_dir)[2] == sides


def test_without_languages_the_split_is_by_hash_and_validation_inputs_go_whole(tmp_path):
    from pipeline.data.split import split_of

    data = mixed_corpus(tmp_path / "mixed.jsonl")
    cfg = split_config(tmp_path, data)
    cfg.filters.detect_language = False
    result = run_prepare(cfg, progress=False)
    assert result.report["split"] == {"method": "hash"}
    assert all(r["_split"] == split_of(r["id"], cfg.split) for r in rows_of(result.run_dir))

    held_out = write_jsonl(tmp_path / "eval.jsonl", [{"instruction": SENTENCES["en"][0] + " held out",
                                                      "output": SENTENCES["en"][1] + " held out"}])
    cfg = split_config(tmp_path, data, out="with_eval")
    cfg.validation_inputs = [str(held_out)]
    result = run_prepare(cfg, progress=False)
    assert result.report["split"] == {"method": "validation_inputs"}
    validation = rows_of(result.run_dir, "validation")
    assert [r["source"]["file"] for r in validation] == ["eval.jsonl"]


def test_a_killed_run_resumes_to_the_same_stratified_split(tmp_path):
    from test_resilience import frozen_code

    data = mixed_corpus(tmp_path / "mixed.jsonl")
    (tmp_path / "cfg.json").write_text(json.dumps({"split": {"validation_fraction": 0.1, "seed": 5},
                                                   "dedup": {"near": False}, "read": {"shard_bytes": 2048}}))
    env = frozen_code(tmp_path)
    cmd = [sys.executable, "-m", "pipeline.cli", "run", str(data), "--workers", "1", "--config",
           str(tmp_path / "cfg.json"), "--no-pii", "--no-lengths", "--no-estimate"]
    ref = prepare_in_process(*cmd[3:], "--out", str(tmp_path / "ref"), cwd=tmp_path)  # no kill: in this process
    assert ref.returncode == 0, ref.stderr[-2000:]
    out = tmp_path / "run"
    results = out / "work" / "results"
    start_and_kill([*cmd, "--out", str(out)], env, results, seconds=0.5)
    finished = len(list(results.glob("process-*.json")))
    shards = len(list(results.glob("normalize-*.json")))
    assert finished < shards, "the run was not interrupted mid-way"
    resumed = subprocess.run([*cmd, "--out", str(out), "--json"], env=env, check=True, capture_output=True,
                             text=True)
    assert "reused" in resumed.stderr and f"reused {shards + finished} shard" in resumed.stderr
    assert validation_by_lang(out)[2] == validation_by_lang(tmp_path / "ref")[2]


# ------------------------------------------------------------------------------ the CLI in a subprocess

def prepare_cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "pipeline.cli", "run", *args], cwd=cwd, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)


# (the zero-trainable check through `prepare run`, that was here: tests/data/test_untrainable.py)


def test_token_lengths_are_reported_per_language(tmp_path):
    from pipeline.report.html.records import languages_section

    data = mixed_corpus(tmp_path / "mixed.jsonl")
    cfg = split_config(tmp_path, data)
    cfg.lengths.enabled = True
    rep = run_prepare(cfg, progress=False).report
    groups = rep["lengths"]["groups"]
    per_lang = {k[5:]: g["records"] for k, g in groups.items() if k.startswith("lang:")}
    total = Counter(json.loads(r["meta"])["lang"] for r in rows_of(tmp_path / "run"))
    assert per_lang == dict(total) and len(per_lang) >= 6
    assert sum(g["tokens"]["total"] for k, g in groups.items() if k.startswith("lang:")) == \
        groups["all"]["tokens"]["total"]
    html = languages_section(rep)
    assert "tokens p50" in html and all(f"<td>{lang}</td>" in html for lang in per_lang)
