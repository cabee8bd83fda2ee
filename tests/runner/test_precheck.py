"""`prepare precheck` end to end on the sample data, on a CPU, without torch (blocked where it is installed)."""
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, SAMPLE_DATA

# `make test` installs the optional 'trace' extra (torch), so "without torch" is made true per run: the CLI
# runs with torch blocked, and any import of it fails the command.
NO_TORCH = ("import runpy, sys; sys.modules['torch'] = None; sys.argv = ['prepare', *sys.argv[1:]]; "
            "runpy.run_module('pipeline.cli', run_name='__main__')")


def test_torch_is_blocked_in_these_runs():
    code = NO_TORCH.replace("runpy.run_module", "import torch; runpy.run_module")
    proc = subprocess.run([sys.executable, "-c", code],
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "import of torch halted" in proc.stderr


def run_cli(*args):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", NO_TORCH, *args], env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.integration  # the CLI in a subprocess
def test_precheck_json_on_sample_data():
    proc = run_cli("precheck", str(SAMPLE_DATA), "--model", "llama-3.1-8b", "--method", "qlora", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["exact"] and out["records"] > 300
    assert out["max_seq_len"] % 64 == 0
    assert out["tokens"]["groups"]["all"]["tokens"]["max"] <= out["max_seq_len"]
    rec = out["recommendation"]
    assert rec["gpu"] and rec["count"] >= 1 and rec["micro_batch"] >= 1 and rec["cost_usd"] > 0
    assert out["memory"]["peak_allocated_gib"] < out["memory"]["peak_reserved_gib"]
    assert out["candidates"]


@pytest.mark.integration  # the CLI in a subprocess
def test_precheck_on_a_sample_reports_uncertainty_and_scales_counts():
    proc = run_cli("precheck", str(SAMPLE_DATA), "--sample", "100", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["sampled"] == 100 and not out["exact"]
    assert out["tokens"]["groups"]["all"]["records"] == out["records"]
    p50 = out["tokens"]["uncertainty"]["percentiles"]["p50"]
    assert p50["low"] <= p50["value"] <= p50["high"]


@pytest.mark.integration  # the CLI in a subprocess
def test_precheck_text_output_names_the_tokenizer_and_the_gpu():
    proc = run_cli("precheck", str(SAMPLE_DATA), "--model", "mistral-7b", "--method", "lora")
    assert proc.returncode == 0, proc.stderr
    assert "mistral-32k" in proc.stdout and "Recommended" in proc.stdout
    assert "precheck counts every record read: " in proc.stdout and "holds out 5% as validation" in proc.stdout


def test_precheck_measures_what_run_keeps_after_exact_dedup(tmp_path):
    """precheck and run on the same data measure the same records: exact duplicates are not counted twice."""
    from conftest import fast_config

    from pipeline.runner import run_prepare
    from pipeline.runner.precheck import run_precheck

    src = tmp_path / "in"
    src.mkdir()
    topics = ["invoice", "delivery", "password", "refund", "upgrade", "warranty", "login", "shipping"]
    rows = [{"instruction": f"Question {i} about the {topics[i % 8]} policy, case {i * 7919}?",
             "output": f"Answer {i}: the {topics[i % 8]} steps differ for case {i * 104729} in many ways."}
            for i in range(40)]
    rows += rows[:15]  # exact duplicates
    (src / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = fast_config(tmp_path, [src])
    cfg.dedup.near = False
    measured = cfg.model_copy(deep=True)
    measured.lengths.enabled = True
    out = run_precheck(measured)
    assert out["counts"]["exact_duplicates"] == 15 and out["counts"]["steps"][-1] == "exact dedup"
    result = run_prepare(cfg, progress=False)
    assert out["records"] == result.report["counts"]["kept"] == 40


def test_precheck_says_how_its_count_differs_from_the_runs_train_split(tmp_path):
    """Issue 32: precheck counts the validation records and the near duplicates a run removes; it says so, with
    its count, in its output (the CLI prints the same line)."""
    from conftest import fast_config

    from pipeline.runner import run_prepare
    from pipeline.runner.precheck import run_precheck

    src = tmp_path / "in"
    src.mkdir()
    rows = [{"instruction": f"Question {i} about the refund policy for order number {i * 7919}, placed last week?",
             "output": f"Answer {i}: refunds for order {i * 104729} reach the card within five business days."}
            for i in range(60)]
    near = [{**r, "output": r["output"] + " Thanks!"} for r in rows[:10]]  # near duplicates of the first ten
    (src / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows + near))
    cfg = fast_config(tmp_path, [src])
    cfg.split.validation_fraction = 0.1
    out = run_precheck(cfg)
    run_prepare(cfg, progress=False)
    note = out["counts"]["differs_from_run"]
    assert note.startswith(f"counts every record read: {out['records']};")
    assert "removes near duplicates and holds out 10% as validation" in note and "will be lower" in note
    shards = json.loads((tmp_path / "run" / "manifest.json").read_text())["shards"]
    written = {s: sum(x["rows"] for x in shards if x["split"] == s) for s in ("train", "validation")}
    assert written["validation"] > 0 and written["train"] < out["records"] == 70, written

    cfg.dedup.near, cfg.split.validation_fraction = False, 0.0
    assert run_precheck(cfg)["counts"]["differs_from_run"] == "counts every record read: 70, as a run's train " \
                                                                "split would"


@pytest.mark.integration  # the CLI in a subprocess
def test_precheck_plans_with_the_estimator_settings_given():
    proc = run_cli("precheck", str(SAMPLE_DATA), "--cross-entropy", "fused", "--lora-rank", "64",
                   "--micro-batch", "4", "--framework", "torchtune", "--adapter-dtype", "fp32", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    settings = out["memory"]["settings"]
    assert settings["cross_entropy"] == "fused" and settings["lora_rank"] == 64
    assert settings["adapter_dtype"] == "fp32"  # torchtune's preset says bf16: the flag wins
    assert all(c["micro_batch"] <= 4 for c in out["candidates"]) and out["recommendation"]["micro_batch"] <= 4


@pytest.mark.integration  # the CLI in a subprocess
def test_a_bad_estimator_setting_is_one_line():
    proc = run_cli("precheck", str(SAMPLE_DATA), "--lora-rank", "0")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "lora_rank" in proc.stderr


def test_config_choices_are_the_estimators():
    import typing

    from pipeline.core.config import EstimateConfig
    from pipeline.plan.memory import ATTENTION, CROSS_ENTROPY, OPTIMIZERS
    from pipeline.plan.setup import FRAMEWORKS

    def literal(name):
        ann = EstimateConfig.model_fields[name].annotation
        lit = next(a for a in (ann, *typing.get_args(ann)) if typing.get_origin(a) is typing.Literal)
        return set(typing.get_args(lit))

    assert literal("cross_entropy") == set(CROSS_ENTROPY) and literal("attn") == set(ATTENTION)
    assert literal("optimizer") == set(OPTIMIZERS) and literal("framework") == set(FRAMEWORKS)
