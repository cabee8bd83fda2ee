"""`prepare calibrate` on the trials people really run: on the CPU or another card, without the callback
(`checkpoints sync`), resumed, and planned at a step time below a millisecond."""
from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest
from test_calibrate import calibrate_cli, plan, trial

TOKENS_PER_STEP = 4 * 2048


def with_device(folder, device):
    path = folder / "checkpoint-20" / "trainer_state.json"
    state = json.loads(path.read_text())
    for entry in state["log_history"]:
        entry["device"] = device
    path.write_text(json.dumps(state))
    return folder


def test_a_cpu_trial_is_printed_as_such_and_corrects_no_later_plan(tmp_path, capsys, monkeypatch):
    from pipeline.plan.measured import measured_slowdown

    monkeypatch.setenv("PREPARE_CALIBRATION", str(tmp_path / "store.json"))
    plan(tmp_path, step_seconds=2.0)
    code, err, out = calibrate_cli(tmp_path, with_device(trial(tmp_path, step_seconds=27.0), "cpu"), capsys)
    assert code == 0 and not err
    assert "27.000 s per optimizer step" in out and "measured on cpu, not on a GPU" in out
    assert "not corrected, not stored" in out and "corrected: A40" not in out
    assert not (tmp_path / "store.json").exists()
    assert measured_slowdown("Llama-3.1-8B", "qlora", "A40") is None


@pytest.mark.parametrize("card, device", [("A40", "NVIDIA L4"), ("L4", "NVIDIA L40S")])
def test_a_trial_on_another_card_is_refused_in_one_line(tmp_path, capsys, monkeypatch, card, device):
    monkeypatch.setenv("PREPARE_CALIBRATION", str(tmp_path / "store.json"))
    spec = plan(tmp_path)
    spec["estimate"]["gpu"] = card
    (tmp_path / "prepare-plan.json").write_text(json.dumps(spec))
    code, err, _ = calibrate_cli(tmp_path, with_device(trial(tmp_path, step_seconds=2.4), device), capsys)
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"prepare: error: the trial ran on {device}, the plan is for {card}")
    assert not (tmp_path / "store.json").exists()


@pytest.mark.parametrize("card, device", [("A100", "NVIDIA A100-SXM4-80GB"), ("H100", "NVIDIA H100 80GB HBM3"),
                                          ("RTX 4090", "NVIDIA GeForce RTX 4090"), ("L4", "NVIDIA L4"),
                                          ("A100 80GB", "NVIDIA A100-SXM4-80GB")])
def test_the_cuda_name_of_the_planned_card_matches_it(card, device):
    from pipeline.train.calibrate import same_card

    assert same_card(card, device)


def callback_entries(global_step_at_begin: int):
    """The log entries S3Checkpoints annotates in a CPU run begun (or resumed) at the given step."""
    torch = pytest.importorskip("torch")
    from pipeline.train.callback import S3Checkpoints

    callback = S3Checkpoints("s3://bucket/run", check_bucket=False)
    args = SimpleNamespace(device=torch.device("cpu"))
    state = SimpleNamespace(is_world_process_zero=False, global_step=global_step_at_begin, log_history=[])
    callback.on_train_begin(args, state, None)
    for step in (global_step_at_begin + 1, global_step_at_begin + 2):
        callback.on_step_end(args, state, None)
        state.log_history.append({"loss": 1.0, "step": step})
        callback.on_log(args, state, None)
    return state.log_history


def test_the_callback_records_a_cpu_trials_device_and_where_a_resumed_run_began():
    fresh, resumed = callback_entries(0), callback_entries(10)
    assert [e["device"] for e in fresh + resumed] == ["cpu"] * 4
    assert "resumed_from_step" not in fresh[0] and resumed[0]["resumed_from_step"] == 10
    assert "resumed_from_step" not in resumed[1]


def trl_entry(step: int, num_tokens: int) -> dict:
    """A log entry as trl's SFTTrainer writes it: no time in it."""
    return {"entropy": 1.9, "epoch": round(step / 60, 4), "grad_norm": 0.8, "learning_rate": 2e-4,
            "loss": 1.5, "mean_token_accuracy": 0.61, "num_tokens": float(num_tokens), "step": step}


def sync_route_trial(tmp_path, seconds_per_step: float, save_seconds: float = 3.0):
    """checkpoint-10/20/30 as transformers' Trainer saves them (the `checkpoints sync` route: no callback):
    model, optimizer, then trainer_state.json last; the file times are those of the save."""
    transformers = pytest.importorskip("transformers")
    out = tmp_path / "trial"
    clock = 1_700_000_000.0
    for step in (10, 20, 30):
        folder = out / f"checkpoint-{step}"
        folder.mkdir(parents=True)
        clock += 10 * seconds_per_step           # the steps since the last save
        for name in ("adapter_model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state.pth"):
            (folder / name).write_bytes(b"\0" * 16)
            os.utime(folder / name, (clock, clock))
            clock += save_seconds / 5
        state = transformers.TrainerState(global_step=step, max_steps=60, logging_steps=5, save_steps=10,
                                          log_history=[trl_entry(s, s * TOKENS_PER_STEP)
                                                       for s in range(5, step + 1, 5)])
        state.save_to_json(str(folder / "trainer_state.json"))
        os.utime(folder / "trainer_state.json", (clock, clock))
        clock += save_seconds / 5
    return out


def test_a_checkpoints_sync_trial_is_timed_from_its_checkpoints(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PREPARE_CALIBRATION", str(tmp_path / "store.json"))
    plan(tmp_path, step_seconds=2.0, total_steps=1800)
    folder = sync_route_trial(tmp_path, seconds_per_step=2.5)
    assert "train_runtime" not in (folder / "checkpoint-30" / "trainer_state.json").read_text()
    code, err, out = calibrate_cli(tmp_path, folder, capsys, "--json")
    assert code == 0, err
    result = json.loads(out)
    m = result["measured"]
    assert m["source"].startswith("checkpoint file times (3 checkpoints")
    # the 0.6 s from a trainer_state.json to the next step is counted; the 2.4 s of the next save are not
    assert m["step_seconds"] == pytest.approx(2.5 + 0.06, abs=1e-6)
    assert m["tokens_per_step"] == TOKENS_PER_STEP
    assert result["slowdown"] == pytest.approx(2.56 / 2.0) and "no S3Checkpoints callback" in result["warning"]
    assert json.loads((tmp_path / "store.json").read_text())[-1]["gpu"] == "A40"


def resumed_trial(tmp_path, history: list[dict]):
    folder = tmp_path / "trial" / "checkpoint-30"
    folder.mkdir(parents=True)
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": 30, "log_history": history}))
    return folder.parent


def timed(step: int, num_tokens: int, **more) -> dict:
    return trl_entry(step, num_tokens) | {"step_seconds": 2.0, "steps_timed": 5, "device": "NVIDIA A40"} | more


@pytest.mark.parametrize("history", [
    # resumed from checkpoint-10: trl counts from 0 again, num_tokens drops
    [timed(5, 5 * TOKENS_PER_STEP), timed(10, 10 * TOKENS_PER_STEP),
     timed(15, 5 * TOKENS_PER_STEP), timed(20, 10 * TOKENS_PER_STEP), timed(25, 15 * TOKENS_PER_STEP),
     timed(30, 20 * TOKENS_PER_STEP)],
    # resumed from checkpoint-10 logging every 10 steps: num_tokens does not drop, the callback marks it
    [timed(5, 5 * TOKENS_PER_STEP), timed(10, 10 * TOKENS_PER_STEP),
     timed(20, 10 * TOKENS_PER_STEP, resumed_from_step=10), timed(30, 20 * TOKENS_PER_STEP)],
])
def test_a_resumed_trial_counts_the_tokens_of_each_run_segment(tmp_path, capsys, monkeypatch, history):
    monkeypatch.setenv("PREPARE_CALIBRATION", str(tmp_path / "store.json"))
    plan(tmp_path)
    code, err, out = calibrate_cli(tmp_path, resumed_trial(tmp_path, history), capsys, "--json")
    assert code == 0, err
    m = json.loads(out)["measured"]
    assert m["tokens_per_step"] == TOKENS_PER_STEP and m["run_segments"] == 2
    assert m["tokens_per_second"] == pytest.approx(TOKENS_PER_STEP / 2.0)


def test_a_plan_below_a_millisecond_per_step_is_corrected_not_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PREPARE_CALIBRATION", str(tmp_path / "store.json"))
    plan(tmp_path, step_seconds=3e-5, total_steps=1800)   # rounded to 4 decimals it read 0.0
    code, err, out = calibrate_cli(tmp_path, trial(tmp_path, step_seconds=1.2e-4), capsys)
    assert code == 0, err
    assert "plan:      A40 x1: 3e-05 s/step" in out and "the trial is 300% slower than planned" in out
    assert json.loads((tmp_path / "store.json").read_text())[-1]["slowdown"] == pytest.approx(4.0)


def test_checkpoints_with_copied_file_times_are_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PREPARE_CALIBRATION", str(tmp_path / "store.json"))
    plan(tmp_path)
    folder = sync_route_trial(tmp_path, seconds_per_step=2.5)
    for path in folder.rglob("*"):
        os.utime(path, (1_700_000_000, 1_700_000_000))   # `cp -r` without -p: one time for every file
    code, err, _ = calibrate_cli(tmp_path, folder, capsys)
    assert code == 2 and err.count("\n") == 1 and "they are not the training's (copied or pulled" in err
    assert not (tmp_path / "store.json").exists()


@pytest.mark.parametrize("resumed", [
    [trl_entry(20, 10 * TOKENS_PER_STEP) | {"resumed_from_step": 10}, trl_entry(30, 20 * TOKENS_PER_STEP)],
    [trl_entry(s, (s - 10) * TOKENS_PER_STEP) for s in (15, 20, 25, 30)],    # unmarked: num_tokens drops
])
def test_a_resumed_trials_train_runtime_times_only_the_steps_since_the_resume(tmp_path, capsys, monkeypatch,
                                                                              resumed):
    """save_state() after a run resumed from checkpoint-10: train_runtime is the 20 steps of this run."""
    monkeypatch.setenv("PREPARE_CALIBRATION", str(tmp_path / "store.json"))
    plan(tmp_path)
    history = [trl_entry(5, 5 * TOKENS_PER_STEP), trl_entry(10, 10 * TOKENS_PER_STEP),
               {"eval_loss": 1.5, "step": 10, "epoch": 0.17}, *resumed,
               {"epoch": 0.5, "step": 30, "total_flos": 1e15, "train_loss": 1.4, "train_runtime": 50.0,
                "train_samples_per_second": 4.8, "train_steps_per_second": 0.6}]
    folder = tmp_path / "trial"
    folder.mkdir()
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": 30, "log_history": history}))
    code, err, out = calibrate_cli(tmp_path, folder, capsys, "--json")
    assert code == 0, err
    m = json.loads(out)["measured"]
    assert m["step_seconds"] == pytest.approx(50.0 / 20) and "the resume" in m["source"]


def test_a_trial_far_beyond_any_cards_error_is_not_stored(tmp_path, capsys, monkeypatch):
    """A CPU trial on the sync route records no device: its x20 is printed, and stored for no later plan."""
    monkeypatch.setenv("PREPARE_CALIBRATION", str(tmp_path / "store.json"))
    plan(tmp_path, step_seconds=2.0)
    code, err, out = calibrate_cli(tmp_path, sync_route_trial(tmp_path, seconds_per_step=40.0), capsys)
    assert code == 0, err
    assert "the trial is 1903% slower than planned" in out and "not stored: x20 the plan's step time" in out
    assert not (tmp_path / "store.json").exists()


def test_a_cpu_point_stored_by_earlier_versions_corrects_no_plan(tmp_path, monkeypatch):
    from pipeline.plan.measured import measured_slowdown

    store = tmp_path / "store.json"
    store.write_text(json.dumps([{"model": "Llama-3.1-8B", "method": "qlora", "gpu": "L4", "slowdown": 13559.0},
                                 {"model": "Llama-3.1-8B", "method": "qlora", "gpu": "A40", "slowdown": 1.2}]))
    monkeypatch.setenv("PREPARE_CALIBRATION", str(store))
    assert measured_slowdown("Llama-3.1-8B", "qlora", "L4") is None
    assert measured_slowdown("Llama-3.1-8B", "qlora", "A40") == {"slowdown": 1.2, "points": 1}
