"""GPU catalog, fit checks, training time and cost, and the recommendation of what to rent.

The catalog is data (data/gpus.json, or the user's own file in the same format). A job fits a card when the
expected nvidia-smi figure (peak reserved + CUDA context, see pipeline.plan.memory) is within the card's memory as
the driver reports it, less a safety margin; both sides in GiB. Time is the step time of pipeline.plan.throughput
(named terms per stack and card, fitted on published throughput) times the micro-steps, with a range from the
model's held-out spread; cost is hours x price x cards, excluding VAT.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from pipeline.core import numfmt
from pipeline.core.markdown import table
from pipeline.core.models import ModelSpec, load_model_spec, param_breakdown
from pipeline.core.resources import resource
from pipeline.plan.measured import load_points, measured_slowdown
from pipeline.plan.memory import GIB, MemoryEstimate, estimate_memory
from pipeline.plan.setup import TrainingSetup, framework_preset, parse_lora_targets
from pipeline.plan.throughput import (
    Job,
    efficiency_key,
    flops_per_token,
    load_constants,
    matmul_efficiency,
    stack_assumptions,
    step_seconds,
    step_terms,
    time_range,
)

CATALOG_FILE = resource("gpus.json")
DEFAULT_MARGIN = 0.10
MAX_MICRO_BATCH = 64


@dataclass(frozen=True)
class GPU:
    name: str
    memory_mib: int
    price_per_hour: float
    bf16_tflops: float
    bandwidth_gbs: float | None = None
    gpu_class: str = "default"
    utilisation: float = 0.28            # the matmul efficiency the time model uses on this card
    interconnect_gbs: float | None = None
    nominal_gb: float | None = None
    typical_use: str = ""

    @property
    def memory_gib(self) -> float:
        return self.memory_mib / 1024


@dataclass
class Catalog:
    gpus: list[GPU]
    counts: tuple[int, ...] = (1, 2, 4, 8)
    currency: str = "USD"
    price_basis: str = "per GPU-hour, excluding VAT"
    source: str = ""

    def get(self, name: str) -> GPU:
        for gpu in self.gpus:
            if gpu.name.lower() == name.lower():
                return gpu
        raise ValueError(f"no GPU {name!r} in the catalog ({', '.join(g.name for g in self.gpus)})")


def load_catalog(path: str | Path | None = None) -> Catalog:
    """The built-in catalog, or a user's JSON file in the same format (only name, memory_mib, price_per_hour and
    bf16_tflops are required per card)."""
    path = Path(path or CATALOG_FILE)
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read GPU catalog {path}: {exc}") from None
    entries = data.get("gpus") if isinstance(data, dict) else None
    if not entries:
        raise ValueError(f"GPU catalog {path} has no 'gpus' list")
    constants = load_constants()
    gpus = []
    for n, entry in enumerate(entries, 1):
        missing = [k for k in ("name", "memory_mib", "price_per_hour", "bf16_tflops") if entry.get(k) is None]
        if missing:
            raise ValueError(f"GPU catalog {path}: entry {n} lacks {', '.join(missing)}")
        try:
            gpu_class = entry.get("class", "default")
            gpus.append(GPU(name=str(entry["name"]), memory_mib=int(entry["memory_mib"]),
                            price_per_hour=float(entry["price_per_hour"]), bf16_tflops=float(entry["bf16_tflops"]),
                            bandwidth_gbs=float(entry["bandwidth_gbs"]) if entry.get("bandwidth_gbs") else None,
                            gpu_class=gpu_class,
                            utilisation=float(entry.get("utilisation", matmul_efficiency(gpu_class, constants))),
                            interconnect_gbs=(float(entry["interconnect_gbs"]) if entry.get("interconnect_gbs")
                                              else None),
                            nominal_gb=entry.get("nominal_gb"), typical_use=entry.get("typical_use", "")))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"GPU catalog {path}: entry {n} ({entry.get('name')}): {exc}") from None
    defaults = Catalog(gpus=[])
    return Catalog(gpus=gpus, counts=tuple(data.get("counts", defaults.counts)),
                   currency=data.get("currency", "USD"), price_basis=data.get("price_basis", defaults.price_basis),
                   source=str(path))


# ---------------------------------------------------------------- fit

def usable_gib(gpu: GPU, margin: float = DEFAULT_MARGIN) -> float:
    return gpu.memory_gib * (1 - margin)


def fits(estimate: MemoryEstimate, gpu: GPU, margin: float = DEFAULT_MARGIN) -> bool:
    """GiB against GiB: the expected nvidia-smi use against the driver-reported memory less the margin."""
    return estimate.nvidia_smi_gib <= usable_gib(gpu, margin)


def largest_micro_batch(spec, method: str, seq_len: int, gpu: GPU, *, margin: float = DEFAULT_MARGIN,
                        max_micro_batch: int = MAX_MICRO_BATCH, **memory_options) -> tuple[int, MemoryEstimate]:
    """(largest micro-batch that fits, its estimate); (0, estimate at micro-batch 1) when even 1 does not fit.
    Memory grows monotonically with the micro-batch, so doubling then bisecting finds it in a few estimates."""
    def estimate(mb: int) -> MemoryEstimate:
        return estimate_memory(TrainingSetup.build(spec, method, seq_len=seq_len, micro_batch=mb, **memory_options))

    first = estimate(1)
    if not fits(first, gpu, margin):
        return 0, first
    good, good_est, bad = 1, first, None
    while bad is None and good < max_micro_batch:
        trial = min(good * 2, max_micro_batch)
        est = estimate(trial)
        if fits(est, gpu, margin):
            good, good_est = trial, est
        else:
            bad = trial
    while bad is not None and bad - good > 1:
        mid = (good + bad) // 2
        est = estimate(mid)
        if fits(est, gpu, margin):
            good, good_est = mid, est
        else:
            bad = mid
    return good, good_est


# ---------------------------------------------------------------- time and cost

def card_constants(gpu: GPU) -> dict:
    """The time model's constants with this card's matmul efficiency (a catalog entry may set its own)."""
    constants = dict(load_constants())
    key = efficiency_key(gpu.gpu_class)
    constants[key] = gpu.utilisation / matmul_efficiency(gpu.gpu_class, {**constants, key: 1.0})
    return constants


def training_hours(total_sequences: float, job: Job, gpu: GPU) -> tuple[float, dict]:
    """(hours, seconds per micro-step by term): every card runs total_sequences / (micro-batch x cards)
    micro-steps of the job's step time."""
    terms = step_terms(job, gpu, card_constants(gpu))
    micro_steps = total_sequences / (job.micro_batch * job.gpus)
    return micro_steps * step_seconds(terms) / 3600, terms


def cost_usd(hours: float, price_per_hour: float, count: int = 1) -> float:
    """Rental cost excluding VAT, in cents precision: QLoRA 8B on one A40 for 20 h = 20 x 0.74 = 14.80."""
    return round(hours * price_per_hour * count + 1e-9, 2)


def checkpoint_sizes(spec: ModelSpec, method: str, estimate: MemoryEstimate) -> dict:
    """GiB per saved checkpoint, for the S3 budget: the trained weights, a resumable trainer checkpoint
    (weights + optimizer state (+ fp32 master)), and for LoRA the merged 16-bit model one would deploy."""
    total = param_breakdown(spec)["total"]
    comps = estimate.components
    shard = estimate.settings["gpus"] if estimate.settings["sharding"] in ("zero2", "zero3", "fsdp") else 1
    optimizer_total = (comps["optimizer_states"] + comps["master_weights"]) * shard
    if method == "full":
        weights = total * 2
        return {"weights_gib": round(weights / GIB, 3),
                "resume_checkpoint_gib": round((weights + optimizer_total) / GIB, 3)}
    adapter_bytes = 4 if estimate.settings.get("adapter_dtype") == "fp32" else 2
    adapter = estimate.params["lora"] * adapter_bytes
    return {"adapter_gib": round(adapter / GIB, 3),
            "resume_checkpoint_gib": round((adapter + optimizer_total) / GIB, 3),
            "merged_model_gib": round(total * 2 / GIB, 3)}


# ---------------------------------------------------------------- planning

def time_job(spec, method: str, seq_len: int, micro_batch: int, options: dict, *, count: int = 1,
             sharding: str | None = None, lora_params: int = 0) -> Job:
    """The time model's view of one planned micro-step: the stack's kernels from the options and the preset."""
    preset = framework_preset(options.get("framework", "hf"))
    stack = stack_assumptions(preset.name, options.get("attn", "sdpa"),
                              options.get("cross_entropy") or preset.cross_entropy, options.get("compile", False))
    modules = 0 if method == "full" else len(parse_lora_targets(options.get("lora_targets", "all-linear"), spec))
    return Job(spec=spec, method=method, seq_len=seq_len, micro_batch=micro_batch,
               grad_ckpt=options.get("grad_ckpt", True), lora_params=lora_params, lora_modules_per_layer=modules,
               attn=stack["attention"], cross_entropy=stack["cross_entropy"], fused_kernels=stack["fused_kernels"],
               optimizer=options.get("optimizer") or preset.optimizer, precision=preset.full_precision,
               gpus=count, sharding=sharding or ("ddp" if count > 1 else "none"))


def _evaluate_gpu(spec, method, seq_len, gpu: GPU, catalog: Catalog, *, total_tokens, total_sequences, margin,
                  max_micro_batch, options, trials: list[dict]) -> dict:
    """The smallest card count (with sharding where needed) on which the job fits, and its time and cost;
    `trials`: the stored measured points (pipeline.plan.measured), which correct the time on their card."""
    shardings_multi = ("zero2", "zero3") if method == "full" else ("fsdp",)
    spread = time_range()
    last = None
    for count in catalog.counts:
        for sharding in (None,) if count == 1 else shardings_multi:
            mb, est = largest_micro_batch(spec, method, seq_len, gpu, margin=margin, max_micro_batch=max_micro_batch,
                                          gpus=count, sharding=sharding, **options)
            last = (count, sharding, est)
            if mb == 0:
                continue
            job = time_job(spec, method, seq_len, mb, options, count=count, sharding=sharding,
                           lora_params=est.params["lora"])
            hours, terms = training_hours(total_sequences, job, gpu)
            calibrated = measured_slowdown(spec.name, method, gpu.name, trials)
            if calibrated:
                hours *= calibrated["slowdown"]
            cost = cost_usd(hours, gpu.price_per_hour, count)
            return {"gpu": gpu.name, "count": count, "sharding": sharding, "fits": True, "micro_batch": mb,
                    "vram_need_gib": round(est.nvidia_smi_gib, 2), "usable_gib": round(usable_gib(gpu, margin), 2),
                    "memory_gib": round(gpu.memory_gib, 2), "price_per_hour": gpu.price_per_hour,
                    "hours": round(hours, 2), "cost_usd": cost,
                    "hours_range": [round(hours * spread["low"], 2), round(hours * spread["high"], 2)],
                    "cost_range": [cost_usd(hours * spread["low"], gpu.price_per_hour, count),
                                   cost_usd(hours * spread["high"], gpu.price_per_hour, count)],
                    "step_seconds": {k: round(v, 6) for k, v in terms.items()},
                    "tokens_per_second": round(total_tokens / (hours * 3600)) if hours > 0 else None,
                    "calibrated": calibrated}
    count, sharding, est = last
    return {"gpu": gpu.name, "count": count, "sharding": sharding, "fits": False, "micro_batch": 0,
            "vram_need_gib": round(est.nvidia_smi_gib, 2), "usable_gib": round(usable_gib(gpu, margin), 2),
            "memory_gib": round(gpu.memory_gib, 2), "price_per_hour": gpu.price_per_hour,
            "hours": None, "cost_usd": None, "tokens_per_second": None}


def _pick(candidates: list[dict]) -> tuple[dict | None, dict | None]:
    fitting = [c for c in candidates if c["fits"]]
    if not fitting:
        return None, None
    cheapest = min(fitting, key=lambda c: (c["cost_usd"], c["hours"]))
    fastest = min(fitting, key=lambda c: (c["hours"], c["cost_usd"]))
    return cheapest, fastest


def _summary(c: dict | None) -> dict | None:
    if c is None:
        return None
    return {k: c[k] for k in ("gpu", "count", "micro_batch", "hours", "cost_usd", "sharding", "vram_need_gib",
                              "price_per_hour", "hours_range", "cost_range")} | {
        "cost_text": numfmt.cost(c["cost_usd"]), "calibrated": c.get("calibrated")}


def _candidates(spec, method, seq_len, catalog, total_tokens, total_sequences, margin, max_micro_batch, options):
    trials = load_points()  # the store is read once per candidate list, not once per card
    return [_evaluate_gpu(spec, method, seq_len, gpu, catalog, total_tokens=total_tokens,
                          total_sequences=total_sequences, margin=margin, max_micro_batch=max_micro_batch,
                          options=options, trials=trials) for gpu in catalog.gpus]


def _hints(spec, method, seq_len, catalog, best, total_tokens, total_sequences, margin, max_micro_batch,
           options) -> list[str]:
    """Cheaper paths: each alternative is planned the same way and named only when it costs less."""
    def cheapest(alt_method=method, alt_seq=seq_len, **changes):
        alt_options = {**options, **changes}
        if alt_method == "full":
            alt_options = {k: v for k, v in alt_options.items() if not k.startswith("lora_")}
        # with packing a shorter max length keeps about the same tokens (only the longest records are cut)
        return _pick(_candidates(spec, alt_method, alt_seq, catalog, total_tokens, total_sequences, margin,
                                 max_micro_batch, alt_options))[0]

    def beats(alt):  # worth a mention only when it saves at least 5%
        return alt is not None and (best is None or alt["cost_usd"] < 0.95 * best["cost_usd"])

    def where(c):
        return (f"{c['gpu']} x{c['count']} ({numfmt.hours(c['hours'])}, {numfmt.cost(c['cost_usd'])}"
                + (f" instead of {numfmt.cost(best['cost_usd'])})" if best else ")"))

    hints = []
    if method in ("lora", "full"):
        alt = cheapest("qlora")
        if beats(alt):
            hints.append(f"QLoRA (4-bit base) instead of {'LoRA' if method == 'lora' else 'full fine-tuning'}"
                         f" fits {where(alt)}; its steps also dequantize the weights, and quality is usually close "
                         f"to LoRA.")
    if method == "full":
        alt = cheapest("lora")
        if beats(alt):
            hints.append(f"LoRA instead of full fine-tuning fits {where(alt)}.")
    if options.get("cross_entropy") in (None, "standard"):
        # the trainer's default loss holds the whole logits tensor in fp32; the cheaper losses never do
        losses = {"chunked": "chunked cross-entropy (the loss over slices of the sequence)",
                  "fused": "a fused cross-entropy kernel (Liger, Cut Cross-Entropy)"}
        alts = [(alt, ce) for ce in losses if beats(alt := cheapest(cross_entropy=ce))]
        if alts:
            alt, ce = min(alts, key=lambda a: (a[0]["cost_usd"], a[0]["hours"]))
            hints.append(f"With {losses[ce]} the job fits {where(alt)}: the fp32 logits are never held whole "
                         f"(--cross-entropy {ce}).")
    if not options.get("grad_ckpt", True):
        alt = cheapest(grad_ckpt=True)
        if beats(alt):
            hints.append(f"Gradient checkpointing fits {where(alt)}: ~30% more compute, far less activation memory.")
    shorter = max(64, (seq_len // 2) // 64 * 64)
    if shorter < seq_len:
        alt = cheapest(alt_seq=shorter)
        if beats(alt):
            hints.append(f"A max length of {shorter} instead of {seq_len} fits {where(alt)}; longer records would "
                         f"be truncated or dropped.")
    if best is None:
        hints.append(f"Nothing in the catalog fits this job even with {max(catalog.counts)} cards; use QLoRA, "
                     f"gradient checkpointing, a shorter max length or a smaller model.")
    return hints


def time_model_summary(options: dict, padding_ratio: float | None, method: str = "full") -> dict:
    """What the plan's time assumed: the stack and kernels, the range's basis, the padding it counts."""
    preset = framework_preset(options.get("framework", "hf"))
    spread = time_range()
    return {"stack": stack_assumptions(preset.name, options.get("attn", "sdpa"),
                                       options.get("cross_entropy") or preset.cross_entropy,
                                       options.get("compile", False), method),
            "range_factors": [spread["low"], spread["high"]], "range_basis": spread["basis"],
            "padding_ratio": padding_ratio}


def plan_training(model: str, method: str, *, seq_len: int, tokens_per_epoch: int, sequences_per_epoch: int,
                  epochs: float = 3.0, catalog_path=None, safety_margin: float = DEFAULT_MARGIN,
                  max_micro_batch: int = MAX_MICRO_BATCH, hints: bool = True, padding_ratio: float | None = None,
                  **memory_options) -> dict:
    """The pre-check's answer: memory at max length, each card's fit / micro-batch / time / cost, the cheapest
    card that fits (recommendation), the fastest, cheaper-path hints and checkpoint sizes. JSON-serializable.

    tokens_per_epoch: token positions processed per epoch (padding included, after packing);
    sequences_per_epoch: packed sequences per epoch; padding_ratio: the share of those positions that are padding
    (the packing summary's), which the time counts and the plan states; memory_options: TrainingSetup.build() keywords
    (grad_ckpt, attn, optimizer, lora_rank, lora_targets, micro_batch for the headline figure, ...)."""
    if tokens_per_epoch < 0 or sequences_per_epoch < 0 or epochs <= 0:
        raise ValueError("tokens_per_epoch and sequences_per_epoch must be >= 0 and epochs > 0")
    spec = load_model_spec(model)
    catalog = load_catalog(catalog_path)
    options = {k: v for k, v in memory_options.items() if k not in ("micro_batch", "gpus", "sharding")}
    headline = estimate_memory(TrainingSetup.build(
        spec, method, seq_len=seq_len, micro_batch=memory_options.get("micro_batch", 1),
        gpus=memory_options.get("gpus", 1), sharding=memory_options.get("sharding"), **options))
    total_tokens = tokens_per_epoch * epochs
    total_sequences = sequences_per_epoch * epochs
    candidates = _candidates(spec, method, seq_len, catalog, total_tokens, total_sequences, safety_margin,
                             max_micro_batch, options)
    best, fastest = _pick(candidates)
    plan = {
        "model": spec.name,
        "method": method,
        "max_seq_len": seq_len,
        "epochs": epochs,
        "tokens": {"per_epoch": tokens_per_epoch, "sequences_per_epoch": sequences_per_epoch,
                   "total": total_tokens},
        "memory": {"micro_batch": headline.settings["micro_batch"],
                   "peak_allocated_gib": round(headline.peak_allocated_gib, 3),
                   "peak_reserved_gib": round(headline.peak_reserved_gib, 3),
                   "nvidia_smi_gib": round(headline.nvidia_smi_gib, 3),
                   "peak_phase": headline.peak_phase,
                   "components": {k: round(v / GIB, 3) for k, v in headline.components.items()},
                   "params": headline.params, "settings": headline.settings, "notes": headline.notes},
        "flops_per_token": flops_per_token(spec, method, seq_len, options.get("grad_ckpt", True),
                                           headline.params["lora"]),
        "safety_margin": safety_margin,
        "currency": catalog.currency,
        "price_basis": catalog.price_basis,
        "recommendation": _summary(best),
        "fastest": _summary(fastest),
        "candidates": candidates,
        "hints": _hints(spec, method, seq_len, catalog, best, total_tokens, total_sequences, safety_margin,
                        max_micro_batch, options) if hints else [],
        "checkpoint_gib": checkpoint_sizes(spec, method, headline),
        "time_model": time_model_summary(options, padding_ratio, method),
    }
    return plan


# ---------------------------------------------------------------- rendering

def _fmt(value, spec=".1f", none="-"):
    return none if value is None else format(value, spec)


def _candidate_cells(c: dict) -> list[str]:
    setup = f"{c['count']}" + (f" ({c['sharding']})" if c["sharding"] else "")
    fit = "yes" if c["fits"] else "no"
    return [c["gpu"], setup, f"{fit}: {c['vram_need_gib']:.1f} / {c['usable_gib']:.1f}",
            str(c["micro_batch"] or "-"), f"{c['price_per_hour']:.2f}", numfmt.hours(c["hours"]),
            numfmt.cost(c["cost_usd"]) if c["fits"] else "-"]


HEADERS = ["GPU", "cards", "fits: need / usable GiB", "micro-batch", "$/h per card", "time", "cost"]


def _headline_lines(plan: dict) -> list[str]:
    m = plan["memory"]
    lines = [f"Memory per GPU at max length {numfmt.number(plan['max_seq_len'])}, micro-batch {m['micro_batch']}: "
             f"peak allocated {m['peak_allocated_gib']:.2f} GiB (torch.cuda.max_memory_allocated), "
             f"reserved {m['peak_reserved_gib']:.2f} GiB (max_memory_reserved), "
             f"~{m['nvidia_smi_gib']:.2f} GiB in nvidia-smi (reserved + CUDA context; what must fit)."]
    tokens = plan["tokens"]
    lines.append(f"Trained tokens: {tokens['per_epoch']:,} per epoch x {plan['epochs']:g} epochs = "
                 f"{tokens['total']:,.0f}; fits keep a {plan['safety_margin']:.0%} safety margin; prices "
                 f"{plan['price_basis']}.")
    return lines


def _choice_line(label: str, c: dict | None) -> str:
    if c is None:
        return f"{label}: nothing in the catalog fits."
    cards = f"{c['gpu']} x{c['count']}" + (f" ({c['sharding']})" if c["sharding"] else "")
    measured = c.get("calibrated")
    trials = (f" (time x{measured['slowdown']:.2f} from {measured['points']} measured trial(s))"
              if measured else "")
    spread = f" ({likely_range(c)})" if c.get("hours_range") else ""
    return (f"{label}: {cards}, micro-batch {c['micro_batch']}, {numfmt.hours(c['hours'])}, "
            f"{numfmt.cost(c['cost_usd'])}{spread}{trials}")


def likely_range(c: dict) -> str:
    """A candidate's time and cost range from the time model's held-out spread: "likely 2.1 h to 4.0 h, ..."."""
    (low, high), (cheap, dear) = c["hours_range"], c["cost_range"]
    hours = (numfmt.hours(low) if numfmt.hours(low) == numfmt.hours(high)
             else f"{numfmt.hours(low)} to {numfmt.hours(high)}")
    return f"likely {hours}, ${cheap:,.2f} to {numfmt.cost(dear)}"


def time_model_line(plan: dict) -> str | None:
    """Which stack and kernels the times assume, and how sure they are."""
    model = plan.get("time_model")
    if not model:
        return None
    stack = model["stack"]
    low, high = model["range_factors"]
    kernels = [f"{stack['attention']} attention", f"{stack['cross_entropy']} cross-entropy"]
    if stack["fused_kernels"]:
        kernels.append("fused kernels")
    if stack.get("eager_adapters"):
        kernels.append("PEFT's adapters run eagerly")
    padding = ("" if model.get("padding_ratio") is None
               else f"; {model['padding_ratio']:.1%} of the token positions are padding and are timed too")
    return (f"Times assume the {stack['framework']} stack with {', '.join(kernels)}{padding}; the likely range is "
            f"x{low:.2f} to x{high:.2f} the planned time ({model['range_basis']}).")


def _checkpoint_line(plan: dict) -> str:
    names = {"adapter_gib": "adapter", "weights_gib": "model weights (bf16)",
             "resume_checkpoint_gib": "resumable checkpoint (with optimizer state)",
             "merged_model_gib": "merged model (bf16)"}
    return "Checkpoint sizes: " + ", ".join(f"{names[k]} {v:.2f} GiB" for k, v in plan["checkpoint_gib"].items())


def render_plan_markdown(plan: dict) -> str:
    """Markdown for report.md and the Prefect artifact."""
    lines = [f"### GPU plan: {plan['model']}, {plan['method']}, max length {numfmt.number(plan['max_seq_len'])}", ""]
    if plan.get("approximate"):  # the token counts are not the model's own tokenizer's
        lines += [f"**Approximate: {plan['approximate']}.**", ""]
    lines += [line + "  " for line in _headline_lines(plan)]
    lines += ["", f"**{_choice_line('Recommended (cheapest that fits)', plan['recommendation'])}**  ",
              _choice_line("Fastest", plan["fastest"]) + ("  " if time_model_line(plan) else "")]
    lines += [time_model_line(plan)] if time_model_line(plan) else []
    lines += ["",
              table(HEADERS, [_candidate_cells(c) for c in plan["candidates"]]), "",
              table(["component", "GiB"], [[name.replace("_", " "), numfmt.gib(size)]
                                           for name, size in plan["memory"]["components"].items() if size > 0])]
    if plan["hints"]:
        lines += ["", "Cheaper paths:"] + [f"- {h}" for h in plan["hints"]]
    lines += ["", _checkpoint_line(plan)]
    return "\n".join(lines) + "\n"


def render_plan_text(plan: dict) -> str:
    """Plain text for the terminal."""
    rows = [HEADERS] + [_candidate_cells(c) for c in plan["candidates"]]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADERS))]
    table = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    table.insert(1, "  ".join("-" * w for w in widths))
    # an approximate plan (plan["approximate"]) is said once per command, by the CLI, not here
    lines = [f"GPU plan: {plan['model']}, {plan['method']}, max length {numfmt.number(plan['max_seq_len'])}"]
    lines += _headline_lines(plan) + [""] + table + [""]
    lines += [_choice_line("Recommended (cheapest that fits)", plan["recommendation"]),
              _choice_line("Fastest", plan["fastest"])]
    lines += [time_model_line(plan)] if time_model_line(plan) else []
    if plan["hints"]:
        lines += ["", "Cheaper paths:"] + [f"  - {h}" for h in plan["hints"]]
    lines += ["", _checkpoint_line(plan)]
    return "\n".join(lines) + "\n"


def catalog_rows(catalog: Catalog) -> list[dict]:
    return [{**asdict(g), "memory_gib": round(g.memory_gib, 2)} for g in catalog.gpus]


def render_catalog_text(catalog: Catalog) -> str:
    headers = ["GPU", "memory MiB", "GiB", "$/h excl. VAT", "bf16 TFLOP/s", "GB/s", "link GB/s", "matmul eff.",
               "typical use"]
    rows = [headers] + [[g.name, str(g.memory_mib), f"{g.memory_gib:.1f}", f"{g.price_per_hour:.2f}",
                         f"{g.bf16_tflops:g}", _fmt(g.bandwidth_gbs, "g"), _fmt(g.interconnect_gbs, "g"),
                         f"{g.utilisation:.0%}", g.typical_use]
                        for g in catalog.gpus]
    widths = [max(len(r[i]) for r in rows) for i in range(len(headers))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + f"\n\nPrices {catalog.price_basis} ({catalog.currency}); source: {catalog.source}\n"
