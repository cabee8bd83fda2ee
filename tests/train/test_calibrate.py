"""`prepare calibrate`: a trial's logged step times against the plan it was emitted with."""
from __future__ import annotations

import json

import pytest


def plan(tmp_path, step_seconds=2.0, total_steps=1800, price=0.74, count=1):
    hours = round(total_steps * step_seconds / 3600, 2)
    spec = {"model_spec": "Llama-3.1-8B", "method": "qlora", "framework": "hf", "max_length": 2048,
            "micro_batch": 4, "step_seconds": step_seconds, "total_steps": total_steps,
            "estimate": {"gpu": "A40", "count": count, "hours": hours, "cost_usd": round(hours * price * count, 2),
                         "price_per_hour": price, "vram_need_gib": 30.0}}
    (tmp_path / "prepare-plan.json").write_text(json.dumps(spec))
    return spec


def trial(tmp_path, step_seconds, peak=None, steps=20):
    ckpt = tmp_path / "trial" / f"checkpoint-{steps}"
    ckpt.mkdir(parents=True)
    history = []
    for step in range(5, steps + 1, 5):
        entry = {"loss": 1.0, "step": step, "step_seconds": step_seconds if step > 5 else 9.0, "steps_timed": 5,
                 "num_tokens": step * 4 * 2048}
        if peak:
            entry |= {"peak_memory_reserved_gib": peak, "device": "NVIDIA A40"}
        history.append(entry)
    (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": steps, "log_history": history}))
    return tmp_path / "trial"


def test_a_trial_20_percent_slower_prints_the_corrected_time_and_cost(tmp_path, capsys, monkeypatch):
    from pipeline.cli import main

    monkeypatch.setenv("PREPARE_CALIBRATION", str(tmp_path / "store.json"))
    plan(tmp_path, step_seconds=2.0, total_steps=1800)           # 1.0 h on an A40 at $0.74/h: $0.74
    folder = trial(tmp_path, step_seconds=2.4, peak=33.0)         # 20% slower; the warm-up window is left out
    assert main(["calibrate", str(folder), "--plan", str(tmp_path / "prepare-plan.json")]) == 0
    out = capsys.readouterr().out
    assert "plan:      A40 x1: 2.000 s/step x 1800 steps = 1.0 h, $0.74 + VAT" in out
    assert "corrected: A40 x1: 2.400 s/step x 1800 steps = 1.2 h, $0.89 + VAT" in out
    assert "the trial is 20% slower than planned" in out
    assert "measured peak reserved 33.00 GiB, planned 30.00 GiB" in out
    stored = json.loads((tmp_path / "store.json").read_text())
    assert stored[-1]["slowdown"] == pytest.approx(1.2) and stored[-1]["gpu"] == "A40"


def test_the_seeds_worked_example_figure(tmp_path, monkeypatch):
    """QLoRA 8B on an A40 planned at 20 h ($14.80 + VAT); a trial 20% slower: 24 h, $17.76 + VAT."""
    from pipeline.train.calibrate import calibrate

    monkeypatch.setenv("PREPARE_CALIBRATION", str(tmp_path / "store.json"))
    plan(tmp_path, step_seconds=4.0, total_steps=18000)
    result = calibrate(trial(tmp_path, step_seconds=4.8), str(tmp_path / "prepare-plan.json"))
    assert result["plan"]["cost_usd"] == 14.80
    assert (result["corrected"]["hours"], result["corrected"]["cost_text"]) == (24.0, "$17.76 + VAT")
    assert result["time_error"] == pytest.approx(4.0 / 4.8 - 1, abs=1e-4)


def test_without_a_plan_is_one_line(tmp_path, capsys):
    from pipeline.cli import main

    assert main(["calibrate", str(trial(tmp_path, 1.0))]) == 2
    assert capsys.readouterr().err.startswith("prepare: error: no prepare-plan.json in")


def test_a_stored_trial_corrects_later_plans_for_the_same_model_method_and_card(tmp_path, monkeypatch):
    """The worked example's data: planned 20 h on an A40; after a trial 20% slower on an A40 the next plan
    says 24 h ($17.76 + VAT) there, and leaves other cards, methods and models as estimated."""
    from conftest import worked_example_tokens

    from pipeline.plan.gpus import plan_training, render_plan_text
    from pipeline.train.calibrate import calibrate

    tokens = worked_example_tokens()

    def planned(method="qlora"):
        p = plan_training("Llama-3.1-8B", method, seq_len=2048, tokens_per_epoch=tokens,
                          sequences_per_epoch=tokens // 2048, epochs=3)
        return p, {c["gpu"]: c for c in p["candidates"] if c["fits"]}

    monkeypatch.setenv("PREPARE_CALIBRATION", str(tmp_path / "store.json"))
    before, rows_before = planned()
    lora_before = planned("lora")[1]
    assert rows_before["A40"]["hours"] == pytest.approx(20.0, abs=0.01) and rows_before["A40"]["calibrated"] is None

    plan(tmp_path, step_seconds=4.0, total_steps=18000)
    calibrate(trial(tmp_path, step_seconds=4.8), str(tmp_path / "prepare-plan.json"))

    after, rows_after = planned()
    assert rows_after["A40"]["hours"] == pytest.approx(24.0, abs=0.02)
    assert rows_after["A40"]["cost_usd"] == pytest.approx(17.76, abs=0.02)
    assert rows_after["A40"]["calibrated"] == {"slowdown": 1.2, "points": 1}
    assert all(rows_after[g]["hours"] == rows_before[g]["hours"] for g in rows_before if g != "A40")
    assert planned("lora")[1] == lora_before                       # another method: not corrected
    if after["recommendation"]["gpu"] == "A40":
        assert "from 1 measured trial(s)" in render_plan_text(after)


def test_an_unreadable_store_corrects_nothing(tmp_path, monkeypatch):
    from pipeline.plan.measured import measured_slowdown

    (tmp_path / "store.json").write_text("{not json")
    monkeypatch.setenv("PREPARE_CALIBRATION", str(tmp_path / "store.json"))
    assert measured_slowdown("Llama-3.1-8B", "qlora", "A40") is None


def trial_with(tmp_path, key: str, raw: str):
    """A trial whose second log entry has `key` set to the raw JSON text `raw` (NaN, deep nesting: what
    json.dumps would not write)."""
    folder = trial(tmp_path, step_seconds=2.4, peak=33.0)
    path = folder / "checkpoint-20" / "trainer_state.json"
    state = json.loads(path.read_text())
    state["log_history"][1][key] = "@@bad@@"
    path.write_text(json.dumps(state).replace('"@@bad@@"', raw))
    return folder


def calibrate_cli(tmp_path, folder, capsys, *flags) -> tuple[int, str, str]:
    from pipeline.cli import main

    code = main(["calibrate", str(folder), "--plan", str(tmp_path / "prepare-plan.json"), *flags])
    out, err = capsys.readouterr()
    return code, err, out


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("key, raw, says", [
    ("step_seconds", "0", "step_seconds must be a number from 0.0001 to 86400 seconds, got 0"),
    ("step_seconds", '"2.4"', "step_seconds must be a number from 0.0001 to 86400 seconds, got a string"),
    ("step_seconds", "[2.4]", "step_seconds must be a number from 0.0001 to 86400 seconds, got a list"),
    ("step_seconds", '{"s": 2.4}', "got an object"),
    ("step_seconds", "true", "got true"),
    ("step_seconds", "-2.4", "got -2.4"),
    ("step_seconds", "NaN", "got nan"),
    ("step_seconds", "Infinity", "got inf"),
    ("step_seconds", "1e-300", "got 1e-300"),
    ("step_seconds", "1e308", "got 1e+308"),
    ("step_seconds", DEEP, "JSON nested too deeply"),
    ("steps_timed", "0", "steps_timed must be a whole number from 1 to 1e+09, got 0"),
    ("steps_timed", "2.5", "got 2.5"),
    ("num_tokens", "NaN", "num_tokens must be a number from 0 to 1e+15, got nan"),
    ("num_tokens", "-1", "got -1"),
    ("peak_memory_reserved_gib", "1e308", "peak_memory_reserved_gib must be a number from 0.001 to 4096 GiB"),
    ("peak_memory_reserved_gib", "NaN", "got nan"),
    ("device", "[1]", "device must be a name of 1 to 200 printable characters, got a list"),
])
def test_a_bad_trial_value_is_one_line_naming_it_and_stores_nothing(tmp_path, capsys, monkeypatch, key, raw, says):
    monkeypatch.setenv("PREPARE_CALIBRATION", str(tmp_path / "store.json"))
    plan(tmp_path)
    code, err, _ = calibrate_cli(tmp_path, trial_with(tmp_path, key, raw), capsys)
    assert code == 2 and err.count("\n") == 1 and err.startswith("prepare: error: ")
    assert says in err and "trainer_state.json" in err and "internal error" not in err
    assert not (tmp_path / "store.json").exists()


@pytest.mark.parametrize("change, says", [
    ({"step_seconds": float("nan")}, "prepare-plan.json step_seconds must be a number from 0 to 86400"),
    ({"step_seconds": 0}, "prepare-plan.json step_seconds is 0: a plan with no time has nothing to correct"),
    ({"total_steps": "1800"}, "total_steps must be a whole number from 1 to 1e+09, got a string"),
    ({"total_steps": 1e308}, "total_steps must be a whole number"),
    ({"estimate": [1]}, "estimate must be a JSON object, got a list"),
    ({"estimate": {"gpu": "A40"}}, "prepare-plan.json: missing key 'count'"),
    ({"model_spec": None}, "model_spec must be a name of 1 to 200 printable characters, got null"),
    ({"max_length": -5}, "max_length must be a whole number from 1 to 1e+08, got -5"),
])
def test_a_bad_plan_value_is_one_line_naming_it(tmp_path, capsys, monkeypatch, change, says):
    monkeypatch.setenv("PREPARE_CALIBRATION", str(tmp_path / "store.json"))
    spec = plan(tmp_path) | change
    (tmp_path / "prepare-plan.json").write_text(json.dumps(spec))
    code, err, _ = calibrate_cli(tmp_path, trial(tmp_path, 2.4), capsys)
    assert code == 2 and err.count("\n") == 1 and says in err and "internal error" not in err
    assert not (tmp_path / "store.json").exists()


@pytest.mark.parametrize("key, value", [("price_per_hour", -0.74), ("price_per_hour", float("nan")),
                                        ("price_per_hour", 1e308), ("count", 0), ("count", True)])
def test_a_bad_price_or_card_count_is_refused(tmp_path, capsys, monkeypatch, key, value):
    monkeypatch.setenv("PREPARE_CALIBRATION", str(tmp_path / "store.json"))
    spec = plan(tmp_path)
    spec["estimate"][key] = value
    (tmp_path / "prepare-plan.json").write_text(json.dumps(spec))
    code, err, _ = calibrate_cli(tmp_path, trial(tmp_path, 2.4), capsys)
    assert code == 2 and f"estimate.{key} must be" in err and "internal error" not in err


def test_a_trial_state_that_is_not_an_object_is_one_line(tmp_path, capsys):
    plan(tmp_path)
    folder = trial(tmp_path, 2.4)
    (folder / "checkpoint-20" / "trainer_state.json").write_text("[]")
    code, err, _ = calibrate_cli(tmp_path, folder, capsys, "--no-store")
    assert code == 2 and "trainer_state.json must be a JSON object, got a list" in err


def strict_json(text: str):
    def refuse(constant):
        raise AssertionError(f"{constant} is not JSON")
    return json.loads(text, parse_constant=refuse)


def test_the_store_is_strict_json_and_drops_the_nan_points_of_earlier_versions(tmp_path, capsys, monkeypatch):
    store = tmp_path / "store.json"
    monkeypatch.setenv("PREPARE_CALIBRATION", str(store))
    store.write_text('[{"model": "m", "gpu": "A40", "slowdown": NaN}, {"model": "m", "gpu": "A40", "slowdown": 1.1}]')
    plan(tmp_path)
    code, _, out = calibrate_cli(tmp_path, trial(tmp_path, 2.4), capsys, "--json")
    assert code == 0
    result = strict_json(out)
    assert result["store_dropped"] == 1
    points = strict_json(store.read_text())
    assert [p["slowdown"] for p in points] == [1.1, 1.2]
