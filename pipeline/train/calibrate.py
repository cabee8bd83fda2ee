"""`prepare calibrate TRIAL_DIR`: a short trial run of the emitted config corrects the plan.

Reads the trial's trainer_state.json (log_history; the S3Checkpoints callback adds the seconds per optimizer
step and, on a GPU, torch.cuda.max_memory_reserved to each log entry) and the plan the config was emitted
with (prepare-plan.json), and prints the corrected time and cost of the full run next to the plan, and the
estimate's error. The measured point is appended to a local JSON store (PREPARE_CALIBRATION, default
~/.cache/prepare/calibration.json).
"""
from __future__ import annotations

import json
import math
import statistics
import time
from pathlib import Path

from pipeline.plan.measured import store_path
from .emit import PLAN_NAME


class CalibrateError(ValueError):
    pass


# The ranges a value must be in to be a measurement, not a logging error: outside them the corrected time and
# cost are meaningless, and the stored point would skew every later plan for that model and card.
STEP_SECONDS = (1e-4, 86_400.0)    # one optimizer step: 0.1 ms (below: a clock error) to a day (not a trial)
RUNTIME_SECONDS = (1e-3, 1e8)      # a whole trial run: a millisecond to about three years
STEPS = (1, 10**9)                 # steps timed, planned or run: a billion is beyond any fine-tuning
TOKENS = (0, 10**15)               # tokens seen so far: a quadrillion is beyond any fine-tuning
MEMORY_GIB = (1e-3, 4096.0)        # one card's peak reserved memory: a MiB to 4 TiB (no card has more)
GPUS = (1, 4096)                   # cards in the plan
PRICE_PER_HOUR = (0.0, 10_000.0)   # USD per card-hour (0: one's own card)
PLAN_HOURS = (0.0, 1e7)
PLAN_COST_USD = (0.0, 1e10)
VRAM_NEED_GIB = (1e-3, 1e5)
MAX_LENGTH = (1, 10**8)            # tokens per sequence
MICRO_BATCH = (1, 10**6)
MAX_TEXT = 200                     # a card, model, method or framework name


def _shown(value: object) -> str:
    """What a rejected value was, without quoting text from the file (it could be anything)."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        text = repr(value)
        return text if len(text) <= 30 else text[:27] + "..."
    return {str: "a string", list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def _number(value: object, where: str, bounds: tuple, unit: str = "", integer: bool = False) -> float:
    """value if it is a finite number (a whole one if integer) within bounds, else one CalibrateError line."""
    low, high = bounds
    ok = not isinstance(value, bool) and isinstance(value, int if integer else (int, float))
    ok = ok and (not isinstance(value, float) or math.isfinite(value)) and low <= value <= high
    if not ok:
        kind = "a whole number" if integer else "a number"
        raise CalibrateError(f"{where} must be {kind} from {low:g} to {high:g}{unit}, got {_shown(value)}")
    return value


def _text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_TEXT or not value.isprintable():
        raise CalibrateError(f"{where} must be a name of 1 to {MAX_TEXT} printable characters, got {_shown(value)}")
    return value


def _field(data: dict, key: str, where: str):
    if key not in data:
        raise CalibrateError(f"{where}: missing key {key!r}")
    return data[key]


def _object(value: object, where: str) -> dict:
    if not isinstance(value, dict):
        raise CalibrateError(f"{where} must be a JSON object, got {_shown(value)}")
    return value


def load_json(path: Path) -> dict:
    """A trial or plan file as a JSON object; one line naming the file when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise CalibrateError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except UnicodeDecodeError:
        raise CalibrateError(f"{path}: not UTF-8 text") from None
    except RecursionError:
        raise CalibrateError(f"{path}: JSON nested too deeply") from None
    return _object(data, str(path))


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


def measure(state: dict, where: str = "trainer_state.json") -> dict:
    """Seconds per optimizer step, tokens per second and peak memory from a trainer state's log_history; every
    value used is checked (a trainer may log NaN; a hand-edited file anything)."""
    history = state.get("log_history", [])
    if not isinstance(history, list):
        raise CalibrateError(f"{where}: log_history must be a list, got {_shown(history)}")
    entries = [(f"{where} log_history[{i}]", _object(e, f"{where} log_history[{i}]")) for i, e in enumerate(history)]
    global_step = state.get("global_step")
    if global_step is not None:
        _number(global_step, f"{where} global_step", (0, STEPS[1]), integer=True)
    timed = [(_number(e["step_seconds"], f"{at}.step_seconds", STEP_SECONDS, " seconds"),
              _number(e.get("steps_timed", 1), f"{at}.steps_timed", STEPS, integer=True))
             for at, e in entries if "step_seconds" in e]
    source = "step_seconds logged by S3Checkpoints"
    if len(timed) > 1:
        timed = timed[1:]  # the first window holds the warm-up (allocator, kernels autotuning, compile)
    if timed:
        step_seconds = sum(s * n for s, n in timed) / sum(n for _, n in timed)
    else:
        end = next(((at, e) for at, e in reversed(entries) if "train_runtime" in e), None)
        if not end or not global_step:
            raise CalibrateError("the trial logged no step times (no step_seconds and no train_runtime)")
        runtime = _number(end[1]["train_runtime"], f"{end[0]}.train_runtime", RUNTIME_SECONDS, " seconds")
        step_seconds = _number(runtime / global_step, f"{where} train_runtime / global_step", STEP_SECONDS,
                               " seconds")
        source = "train_runtime / global_step (includes evaluation and saving)"
    tokens = [(_number(e["step"], f"{at}.step", (0, STEPS[1]), integer=True),
               _number(e["num_tokens"], f"{at}.num_tokens", TOKENS))
              for at, e in entries if "num_tokens" in e and "step" in e]
    tokens_per_step = ((tokens[-1][1] - tokens[0][1]) / (tokens[-1][0] - tokens[0][0])
                       if len(tokens) > 1 and tokens[-1][0] > tokens[0][0] else None)
    if tokens_per_step is not None and tokens_per_step < 0:
        raise CalibrateError(f"{where}: num_tokens goes down from step {tokens[0][0]} to step {tokens[-1][0]} "
                             f"(it counts the tokens seen so far)")
    peaks = [_number(e["peak_memory_reserved_gib"], f"{at}.peak_memory_reserved_gib", MEMORY_GIB, " GiB")
             for at, e in entries if "peak_memory_reserved_gib" in e]
    devices = sorted({_text(e["device"], f"{at}.device") for at, e in entries if e.get("device")})
    return {"step_seconds": step_seconds, "steps": global_step, "source": source,
            "tokens_per_step": tokens_per_step,
            "tokens_per_second": tokens_per_step / step_seconds if tokens_per_step else None,
            "peak_memory_reserved_gib": max(peaks) if peaks else None, "devices": devices,
            "step_seconds_spread": (statistics.pstdev([s for s, _ in timed]) if len(timed) > 1 else None)}


def read_plan(path: Path) -> dict:
    """The plan's values calibrate uses, each checked: a hand-edited plan must not put NaN in the store."""
    plan = load_json(path)
    where = str(path)
    est = _object(_field(plan, "estimate", where), f"{where} estimate")
    at = f"{where} estimate."
    return {
        "step_seconds": _number(_field(plan, "step_seconds", where), f"{where} step_seconds", STEP_SECONDS,
                                " seconds"),
        "total_steps": _number(_field(plan, "total_steps", where), f"{where} total_steps", STEPS, integer=True),
        "model_spec": _text(_field(plan, "model_spec", where), f"{where} model_spec"),
        "method": _text(_field(plan, "method", where), f"{where} method"),
        "framework": _text(_field(plan, "framework", where), f"{where} framework"),
        "max_length": _number(_field(plan, "max_length", where), f"{where} max_length", MAX_LENGTH, integer=True),
        "micro_batch": _number(_field(plan, "micro_batch", where), f"{where} micro_batch", MICRO_BATCH,
                               integer=True),
        "estimate": {
            "gpu": _text(_field(est, "gpu", where), at + "gpu"),
            "count": _number(_field(est, "count", where), at + "count", GPUS, integer=True),
            "hours": _number(_field(est, "hours", where), at + "hours", PLAN_HOURS),
            "cost_usd": _number(_field(est, "cost_usd", where), at + "cost_usd", PLAN_COST_USD),
            "price_per_hour": _number(_field(est, "price_per_hour", where), at + "price_per_hour", PRICE_PER_HOUR,
                                      " USD"),
            "vram_need_gib": _number(_field(est, "vram_need_gib", where), at + "vram_need_gib", VRAM_NEED_GIB,
                                     " GiB"),
        },
    }


def calibrate(trial_dir: str | Path, plan_path: str | None = None, record: bool = True) -> dict:
    trial = Path(trial_dir)
    if not trial.is_dir():
        raise CalibrateError(f"no such folder: {trial}")
    state_path = find_state(trial)
    state = load_json(state_path)
    plan = read_plan(find_plan(trial, plan_path))
    m = measure(state, str(state_path))
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
        stored, dropped = _record(result)
        result["stored"] = str(stored)
        if dropped:
            result["store_dropped"] = dropped
    return result


def _cost(usd: float) -> str:
    from pipeline.plan.gpus import format_cost

    return format_cost(usd)


def _finite(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    return all(_finite(v) for v in value) if isinstance(value, list) else True


def _record(result: dict) -> tuple[Path, int]:
    """Append the measured point to the store (one strict JSON document, written atomically); returns the store
    and how many earlier points were dropped for a NaN or infinite value (earlier versions stored NaN)."""
    from ..shards import atomic_write_text

    path = store_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        points = json.loads(path.read_text()) if path.is_file() else []
    except (ValueError, RecursionError):
        points = []
    points = points if isinstance(points, list) else []
    kept = [p for p in points if _finite(p)]
    dropped = len(points) - len(kept)
    kept.append({**result["key"], "measured_step_seconds": result["measured"]["step_seconds"],
                 "planned_step_seconds": result["plan"]["step_seconds"], "slowdown": result["slowdown"],
                 "tokens_per_second": result["measured"]["tokens_per_second"],
                 "peak_memory_reserved_gib": result["measured"]["peak_memory_reserved_gib"],
                 "planned_vram_gib": result["plan"]["vram_need_gib"], "recorded": time.time()})
    atomic_write_text(path, json.dumps(kept, indent=1, allow_nan=False) + "\n")
    return path, dropped


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
    if result.get("store_dropped"):
        lines.append(f"dropped {result['store_dropped']} earlier point(s) with a NaN or infinite value from the "
                     f"store")
    return "\n".join(lines)
