"""`prepare calibrate TRIAL_DIR`: a short trial run of the emitted config corrects the plan.

Reads the trial's trainer_state.json (log_history; the S3Checkpoints callback adds the seconds per optimizer
step, the device and, on a GPU, torch.cuda.max_memory_reserved to each log entry; without the callback, as on
the `checkpoints sync` route, the times of the checkpoint-N folders) and the plan the config was emitted with
(prepare-plan.json), and prints the corrected time and cost of the full run next to the plan, and the
estimate's error. The measured point is appended to a local JSON store (PREPARE_CALIBRATION, default
~/.cache/prepare/calibration.json). A trial on the CPU is printed as such and corrects nothing; a trial on
another card than the plan's is refused.
"""
from __future__ import annotations

import json
import math
import re
import statistics
import time
from pathlib import Path

from pipeline.core import numfmt
from pipeline.core.errors import PrepareError
from pipeline.core.files import atomic_write_text
from pipeline.plan.measured import plausible, store_path
from pipeline.train.checkpoints import listing, step_of
from pipeline.train.emit import PLAN_NAME


class CalibrateError(PrepareError, ValueError):
    """A trial run that cannot correct the plan (missing files, values outside any measurement): one line."""


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


NOT_GPU = ("cpu", "mps")   # what S3Checkpoints records off CUDA: a speed that says nothing of any card


def _segments(entries: list) -> list[list]:
    """The log entries split into run segments: a resumed run restarts trl's num_tokens counter (and
    S3Checkpoints marks its first entry), so a training entry (one with a loss) whose step or num_tokens is
    below the last one's starts a new segment; evaluation and end-of-run entries repeat a step and stay."""
    segments: list[list] = [[]]
    last = None
    for at, e in entries:
        if "loss" in e:
            if last is not None and ("resumed_from_step" in e or _below(e, last, "step")
                                     or _below(e, last, "num_tokens")):
                segments.append([])
            last = e
        segments[-1].append((at, e))
    return segments


def _below(entry: dict, last: dict, key: str) -> bool:
    new, old = entry.get(key), last.get(key)
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (new, old))
    return numbers and (new <= old if key == "step" else new < old)


def _resumed_at(segments: list[list]) -> int:
    """The step the last run segment resumed from (0: not resumed): train_runtime times only that run. The
    callback records it; else the last logged step before it (the state loaded from checkpoint-N logs up to N)."""
    if len(segments) < 2:
        return 0
    first = segments[-1][0][1]
    if "resumed_from_step" in first:
        return _number(first["resumed_from_step"], f"{segments[-1][0][0]}.resumed_from_step", STEPS, integer=True)
    steps = [e["step"] for _, e in segments[-2] if isinstance(e.get("step"), int) and not isinstance(e["step"], bool)]
    return max(steps, default=0)


def _logged_step_seconds(segments: list[list]) -> list[tuple[float, int]]:
    """(seconds per step, steps) of each window S3Checkpoints timed; the first window of each run segment holds
    the warm-up (allocator, kernel autotuning, compile) and is left out where the segment has others."""
    timed = []
    for segment in segments:
        windows = [(_number(e["step_seconds"], f"{at}.step_seconds", STEP_SECONDS, " seconds"),
                    _number(e.get("steps_timed", 1), f"{at}.steps_timed", STEPS, integer=True))
                   for at, e in segment if "step_seconds" in e]
        timed += windows[1:] if len(windows) > 1 else windows
    return timed


def _tokens_per_step(segments: list[list]) -> float | None:
    """Tokens per optimizer step from the growth of num_tokens between logged steps of the same run segment
    (a resumed run counts from 0 again: its first entry is no delta)."""
    tokens = steps = 0
    for segment in segments:
        counted = [(_number(e["step"], f"{at}.step", (0, STEPS[1]), integer=True),
                    _number(e["num_tokens"], f"{at}.num_tokens", TOKENS))
                   for at, e in segment if "num_tokens" in e and "step" in e]
        for (step_a, tokens_a), (step_b, tokens_b) in zip(counted, counted[1:]):
            tokens += tokens_b - tokens_a
            steps += step_b - step_a
    return tokens / steps if steps else None


def checkpoint_step_seconds(trial: Path) -> list[tuple[float, int]]:
    """(seconds per step, steps) between consecutive checkpoint-N folders of a trial without the callback (the
    `checkpoints sync` route: its trainer_state.json holds no time). The Trainer writes trainer_state.json
    last, so a checkpoint's work starts at its trainer_state.json and the next one's first file ends the
    steps between (that file's own write is counted, the rest of its save is not)."""
    folders = sorted((p for p in trial.glob("checkpoint-*") if step_of(p.name) and p.is_dir()
                      and not p.is_symlink() and (p / "trainer_state.json").is_file()
                      and not (p / "trainer_state.json").is_symlink()), key=lambda p: step_of(p.name))
    marks = []
    for folder in folders:
        try:
            times = [(folder / rel).stat().st_mtime for rel in listing(folder).files]
            marks.append((step_of(folder.name), min(times), (folder / "trainer_state.json").stat().st_mtime))
        except (OSError, ValueError):   # deleted meanwhile by a running trainer (save_total_limit)
            continue
    return [((begun - saved) / (step_b - step_a), step_b - step_a)
            for (step_a, _, saved), (step_b, begun, _) in zip(marks, marks[1:])]


def measure(state: dict, where: str = "trainer_state.json", trial: Path | None = None) -> dict:
    """Seconds per optimizer step, tokens per second and peak memory from a trainer state's log_history, or
    from the trial's checkpoint times where the log holds no time; every value used is checked (a trainer may
    log NaN; a hand-edited file anything)."""
    history = state.get("log_history", [])
    if not isinstance(history, list):
        raise CalibrateError(f"{where}: log_history must be a list, got {_shown(history)}")
    entries = [(f"{where} log_history[{i}]", _object(e, f"{where} log_history[{i}]")) for i, e in enumerate(history)]
    global_step = state.get("global_step")
    if global_step is not None:
        _number(global_step, f"{where} global_step", (0, STEPS[1]), integer=True)
    segments = _segments(entries)
    timed = _logged_step_seconds(segments)
    source = "step_seconds logged by S3Checkpoints"
    end = next(((at, e) for at, e in reversed(entries) if "train_runtime" in e), None)
    if not timed and end and global_step:
        runtime = _number(end[1]["train_runtime"], f"{end[0]}.train_runtime", RUNTIME_SECONDS, " seconds")
        begun = _resumed_at(segments)
        if global_step > begun:
            timed = [(runtime / (global_step - begun), global_step - begun)]
            source = (f"train_runtime / (global_step - {begun}, the resume)" if begun else
                      "train_runtime / global_step") + " (includes evaluation and saving)"
    if not timed and trial is not None:
        pairs = checkpoint_step_seconds(trial)
        if pairs:
            # the median pair: a resume or a stop between two checkpoints puts idle time in one of them
            timed = [statistics.median_low(pairs)]
            source = f"checkpoint file times ({len(pairs) + 1} checkpoints; includes saving)"
            if not STEP_SECONDS[0] <= timed[0][0] <= STEP_SECONDS[1]:
                raise CalibrateError(f"the file times of the checkpoint-N folders in {trial} give {timed[0][0]:.3g} "
                                     f"s per step: they are not the training's (copied or pulled folders?); "
                                     f"calibrate the trainer's own output_dir")
    if not timed:
        raise CalibrateError("the trial logged no step times (no step_seconds, no train_runtime, and fewer than "
                             "two checkpoint-N folders to time)")
    step_seconds = _number(sum(s * n for s, n in timed) / sum(n for _, n in timed),
                           f"{where} seconds per step ({source})", STEP_SECONDS, " seconds")
    tokens_per_step = _tokens_per_step(segments)
    peaks = [_number(e["peak_memory_reserved_gib"], f"{at}.peak_memory_reserved_gib", MEMORY_GIB, " GiB")
             for at, e in entries if "peak_memory_reserved_gib" in e]
    devices = sorted({_text(e["device"], f"{at}.device") for at, e in entries if e.get("device")})
    return {"step_seconds": step_seconds, "steps": global_step, "source": source,
            "tokens_per_step": tokens_per_step,
            "tokens_per_second": tokens_per_step / step_seconds if tokens_per_step else None,
            "peak_memory_reserved_gib": max(peaks) if peaks else None, "devices": devices,
            "run_segments": len(segments),
            "step_seconds_spread": (statistics.pstdev([s for s, _ in timed]) if len(timed) > 1 else None)}


def same_card(card: str, device: str) -> bool:
    """Every word of the catalog card's name is a whole word of the CUDA device name: A100 in "NVIDIA
    A100-SXM4-80GB", RTX 4090 in "NVIDIA GeForce RTX 4090", but not L4 in "NVIDIA L40S"."""
    card_words = set(re.findall(r"[a-z0-9]+", card.lower()))
    return bool(card_words) and card_words <= set(re.findall(r"[a-z0-9]+", device.lower()))


def _plan_step_seconds(plan: dict, where: str) -> float:
    """The plan's seconds per step: any positive number (a small model's step can take microseconds); 0 is
    one line, not a division by zero."""
    seconds = _number(_field(plan, "step_seconds", where), f"{where} step_seconds", (0.0, STEP_SECONDS[1]),
                      " seconds")
    if seconds == 0:
        raise CalibrateError(f"{where} step_seconds is 0: a plan with no time has nothing to correct (emit it "
                             f"again with `prepare precheck --emit`)")
    return seconds


def read_plan(path: Path) -> dict:
    """The plan's values calibrate uses, each checked: a hand-edited plan must not put NaN in the store."""
    plan = load_json(path)
    where = str(path)
    est = _object(_field(plan, "estimate", where), f"{where} estimate")
    at = f"{where} estimate."
    return {
        "step_seconds": _plan_step_seconds(plan, where),
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
    m = measure(state, str(state_path), trial)
    est = plan["estimate"]
    total = plan["total_steps"]
    wrong_cards = [d for d in m["devices"] if d.lower() not in NOT_GPU and not same_card(est["gpu"], d)]
    if wrong_cards:
        raise CalibrateError(f"the trial ran on {', '.join(wrong_cards)}, the plan is for {est['gpu']}: run the "
                             f"trial on the planned card, or plan for the trial's card")
    off_gpu = [d for d in m["devices"] if d.lower() in NOT_GPU]
    result = {
        "plan": {"gpu": est["gpu"], "count": est["count"], "hours": est["hours"], "cost_usd": est["cost_usd"],
                 "step_seconds": plan["step_seconds"], "total_steps": total,
                 "vram_need_gib": est["vram_need_gib"]},
        "measured": m,
        "key": {"model": plan["model_spec"], "method": plan["method"], "gpu": est["gpu"], "count": est["count"],
                "framework": plan["framework"], "max_length": plan["max_length"],
                "micro_batch": plan["micro_batch"]},
    }
    if off_gpu:
        # a CPU step time is no measurement of any card: applied to the plan it read "x13559" on an L4
        result["off_gpu"] = ", ".join(off_gpu)
        return result
    hours = total * m["step_seconds"] / 3600
    cost = round(hours * est["price_per_hour"] * est["count"], 2)
    result |= {
        "corrected": {"hours": round(hours, 2), "cost_usd": cost, "cost_text": numfmt.cost(cost)},
        # estimate / measured - 1: -0.17 means the estimate was 17% too short
        "time_error": round(plan["step_seconds"] / m["step_seconds"] - 1, 4),
        "slowdown": m["step_seconds"] / plan["step_seconds"],   # unrounded: later plans multiply by it
        "memory_error": (round(est["vram_need_gib"] / m["peak_memory_reserved_gib"] - 1, 4)
                         if m["peak_memory_reserved_gib"] else None),
    }
    if not m["devices"]:
        result["warning"] = (f"the trial recorded no device (no S3Checkpoints callback): taken to have run on "
                             f"the plan's {est['gpu']}")
    if not plausible(result["slowdown"]):
        result["not_stored"] = (f"x{result['slowdown']:.3g} the plan's step time is beyond any card's estimate "
                                f"error (a CPU run, or a broken trial?): later plans keep their estimate")
    elif record:
        stored, dropped = _record(result)
        result["stored"] = str(stored)
        if dropped:
            result["store_dropped"] = dropped
    return result


def _finite(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    return all(_finite(v) for v in value) if isinstance(value, list) else True


def _record(result: dict) -> tuple[Path, int]:
    """Append the measured point to the store (one strict JSON document, written atomically); returns the store
    and how many earlier points were dropped for a NaN or infinite value (earlier versions stored NaN)."""
    path = store_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        points = json.loads(path.read_text()) if path.is_file() else []
    except (ValueError, RecursionError):
        points = []
    points = points if isinstance(points, list) else []
    kept = [p for p in points if _finite(p)]
    dropped = len(points) - len(kept)
    kept.append({**result["key"], "devices": result["measured"]["devices"],
                 "measured_step_seconds": result["measured"]["step_seconds"],
                 "planned_step_seconds": result["plan"]["step_seconds"], "slowdown": result["slowdown"],
                 "tokens_per_second": result["measured"]["tokens_per_second"],
                 "peak_memory_reserved_gib": result["measured"]["peak_memory_reserved_gib"],
                 "planned_vram_gib": result["plan"]["vram_need_gib"], "recorded": time.time()})
    atomic_write_text(path, json.dumps(kept, indent=1, allow_nan=False) + "\n")
    return path, dropped


def _seconds(value: float) -> str:
    """Seconds per step as read: 3 decimals, or 3 significant digits below 10 ms (never "0.000")."""
    return f"{value:.3f}" if value >= 0.01 else f"{value:.3g}"


def render(result: dict) -> str:
    p, m = result["plan"], result["measured"]
    trial = (f"trial: {m['steps']} steps, {_seconds(m['step_seconds'])} s per optimizer step ({m['source']})"
             + (f", {m['tokens_per_second']:,.0f} tokens/s" if m["tokens_per_second"] else "")
             + (f", {m['run_segments']} run segments (resumed)" if m["run_segments"] > 1 else ""))
    planned = (f"plan:      {p['gpu']} x{p['count']}: {_seconds(p['step_seconds'])} s/step x {p['total_steps']} "
               f"steps = {numfmt.hours(p['hours'])}, {numfmt.cost(p['cost_usd'])}")
    if result.get("off_gpu"):
        return "\n".join([
            f"{trial} - measured on {result['off_gpu']}, not on a GPU", planned,
            f"not corrected, not stored: a step time on {result['off_gpu']} says nothing of the {p['gpu']}'s; "
            f"run the trial on the planned card"])
    c = result["corrected"]
    slower = result["slowdown"] - 1
    lines = [
        trial, planned,
        f"corrected: {p['gpu']} x{p['count']}: {_seconds(m['step_seconds'])} s/step x {p['total_steps']} steps = "
        f"{numfmt.hours(c['hours'])}, {c['cost_text']}",
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
    if result.get("not_stored"):
        lines.append("not stored: " + result["not_stored"])
    if result.get("stored"):
        lines.append(f"stored the measured point in {result['stored']}")
    if result.get("store_dropped"):
        lines.append(f"dropped {result['store_dropped']} earlier point(s) with a NaN or infinite value from the "
                     f"store")
    return "\n".join(lines)
