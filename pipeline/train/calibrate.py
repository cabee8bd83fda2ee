"""`prepare calibrate TRIAL_DIR`: a short trial run of the emitted config corrects the plan.

Reads the trial's trainer_state.json (log_history; the S3Checkpoints callback adds the seconds per optimizer
step and, on a GPU, torch.cuda.max_memory_reserved to each log entry) and the plan the config was emitted
with (prepare-plan.json), and prints the corrected time and cost of the full run next to the plan, and the
estimate's error. The measured point is appended to a local JSON store (PREPARE_CALIBRATION, default
~/.cache/prepare/calibration.json).
"""
from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from pipeline.plan.measured import store_path
from .emit import PLAN_NAME


class CalibrateError(ValueError):
    pass


def find_state(trial: Path) -> Path:
    """trainer_state.json of the trial: at the top (save_state) or in its latest checkpoint-N."""
    from .checkpoints import step_of

    if (trial / "trainer_state.json").is_file():
        return trial / "trainer_state.json"
    ckpts = sorted((p for p in trial.glob("checkpoint-*") if step_of(p.name) is not None
                    and (p / "trainer_state.json").is_file()), key=lambda p: step_of(p.name))
    if not ckpts:
        raise CalibrateError(f"no trainer_state.json in {trial} or its checkpoint-N folders")
    return ckpts[-1] / "trainer_state.json"


def find_plan(trial: Path, plan: str | None) -> Path:
    if plan:
        return Path(plan)
    for folder in (trial, *trial.parents[:2]):
        if (folder / PLAN_NAME).is_file():
            return folder / PLAN_NAME
    raise CalibrateError(f"no {PLAN_NAME} in {trial} or above it: pass --plan (written by `precheck --emit`)")


def measure(state: dict) -> dict:
    """Seconds per optimizer step, tokens per second and peak memory from a trainer state's log_history."""
    history = state.get("log_history", [])
    timed = [(e["step_seconds"], e.get("steps_timed", 1)) for e in history if "step_seconds" in e]
    source = "step_seconds logged by S3Checkpoints"
    if len(timed) > 1:
        timed = timed[1:]  # the first window holds the warm-up (allocator, kernels autotuning, compile)
    if timed:
        step_seconds = sum(s * n for s, n in timed) / sum(n for _, n in timed)
    else:
        end = next((e for e in reversed(history) if "train_runtime" in e), None)
        if not end or not state.get("global_step"):
            raise CalibrateError("the trial logged no step times (no step_seconds and no train_runtime)")
        step_seconds = end["train_runtime"] / state["global_step"]
        source = "train_runtime / global_step (includes evaluation and saving)"
    tokens = [(e["step"], e["num_tokens"]) for e in history if "num_tokens" in e and "step" in e]
    tokens_per_step = ((tokens[-1][1] - tokens[0][1]) / (tokens[-1][0] - tokens[0][0])
                       if len(tokens) > 1 and tokens[-1][0] > tokens[0][0] else None)
    peaks = [e["peak_memory_reserved_gib"] for e in history if "peak_memory_reserved_gib" in e]
    devices = sorted({e["device"] for e in history if e.get("device")})
    return {"step_seconds": step_seconds, "steps": state.get("global_step"), "source": source,
            "tokens_per_step": tokens_per_step,
            "tokens_per_second": tokens_per_step / step_seconds if tokens_per_step and step_seconds else None,
            "peak_memory_reserved_gib": max(peaks) if peaks else None, "devices": devices,
            "step_seconds_spread": (statistics.pstdev([s for s, _ in timed]) if len(timed) > 1 else None)}


def calibrate(trial_dir: str | Path, plan_path: str | None = None, record: bool = True) -> dict:
    trial = Path(trial_dir)
    if not trial.is_dir():
        raise CalibrateError(f"no such folder: {trial}")
    state = json.loads(find_state(trial).read_text())
    plan = json.loads(find_plan(trial, plan_path).read_text())
    m = measure(state)
    est = plan["estimate"]
    total = plan["total_steps"]
    hours = total * m["step_seconds"] / 3600
    cost = round(hours * est["price_per_hour"] * est["count"], 2)
    error = plan["step_seconds"] / m["step_seconds"] - 1  # > 0: the estimate was too optimistic... in time
    result = {
        "plan": {"gpu": est["gpu"], "count": est["count"], "hours": est["hours"], "cost_usd": est["cost_usd"],
                 "step_seconds": plan["step_seconds"], "total_steps": total,
                 "vram_need_gib": est["vram_need_gib"]},
        "measured": m,
        "corrected": {"hours": round(hours, 2), "cost_usd": cost, "cost_text": _cost(cost)},
        "time_error": round(error, 4),   # estimate / measured - 1: -0.17 means the estimate was 17% too short
        "slowdown": round(m["step_seconds"] / plan["step_seconds"], 4),
        "memory_error": (round(est["vram_need_gib"] / m["peak_memory_reserved_gib"] - 1, 4)
                         if m["peak_memory_reserved_gib"] else None),
        "key": {"model": plan["model_spec"], "method": plan["method"], "gpu": est["gpu"], "count": est["count"],
                "framework": plan["framework"], "max_length": plan["max_length"],
                "micro_batch": plan["micro_batch"]},
    }
    if m["devices"] and not any(est["gpu"].lower().replace(" ", "") in d.lower().replace(" ", "")
                                for d in m["devices"]):
        result["warning"] = (f"the trial ran on {', '.join(m['devices'])}, the plan is for {est['gpu']}: the "
                             f"correction holds for the trial's card")
    if record:
        result["stored"] = str(_record(result))
    return result


def _cost(usd: float) -> str:
    from pipeline.plan.gpus import format_cost

    return format_cost(usd)


def _record(result: dict) -> Path:
    """Append the measured point to the store (one JSON document, written atomically)."""
    from ..shards import atomic_write_text

    path = store_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        points = json.loads(path.read_text()) if path.is_file() else []
    except ValueError:
        points = []
    points.append({**result["key"], "measured_step_seconds": result["measured"]["step_seconds"],
                   "planned_step_seconds": result["plan"]["step_seconds"], "slowdown": result["slowdown"],
                   "tokens_per_second": result["measured"]["tokens_per_second"],
                   "peak_memory_reserved_gib": result["measured"]["peak_memory_reserved_gib"],
                   "planned_vram_gib": result["plan"]["vram_need_gib"], "recorded": time.time()})
    atomic_write_text(path, json.dumps(points, indent=1) + "\n")
    return path


def render(result: dict) -> str:
    from pipeline.plan.gpus import format_cost, format_hours

    p, m, c = result["plan"], result["measured"], result["corrected"]
    slower = result["slowdown"] - 1
    lines = [
        f"trial: {m['steps']} steps, {m['step_seconds']:.3f} s per optimizer step ({m['source']})"
        + (f", {m['tokens_per_second']:,.0f} tokens/s" if m["tokens_per_second"] else ""),
        f"plan:      {p['gpu']} x{p['count']}: {p['step_seconds']:.3f} s/step x {p['total_steps']} steps = "
        f"{format_hours(p['hours'])}, {format_cost(p['cost_usd'])}",
        f"corrected: {p['gpu']} x{p['count']}: {m['step_seconds']:.3f} s/step x {p['total_steps']} steps = "
        f"{format_hours(c['hours'])}, {c['cost_text']}",
        f"estimate error on this job: time {100 * result['time_error']:+.0f}% "
        f"(the trial is {100 * abs(slower):.0f}% {'slower' if slower >= 0 else 'faster'} than planned)",
    ]
    if m["peak_memory_reserved_gib"] is not None:
        lines.append(f"memory: measured peak reserved {m['peak_memory_reserved_gib']:.2f} GiB, planned "
                     f"{p['vram_need_gib']:.2f} GiB (nvidia-smi): estimate {100 * result['memory_error']:+.0f}%")
    else:
        lines.append("memory: not measured (the trial logged no peak_memory_reserved_gib: no GPU, or no "
                     "S3Checkpoints callback)")
    if result.get("warning"):
        lines.append("warning: " + result["warning"])
    if result.get("stored"):
        lines.append(f"stored the measured point in {result['stored']}")
    return "\n".join(lines)
