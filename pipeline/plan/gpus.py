"""GPU catalog, fit checks, training time and cost, and the recommendation of what to rent.

The catalog is data (data/gpus.json, or the user's own file in the same format). A job fits a card when the
expected nvidia-smi figure (peak reserved + CUDA context, see pipeline.plan.memory) is within the card's memory as
the driver reports it, less a safety margin; both sides in GiB. Time comes from FLOPs per trained token
(~6N full, ~4N LoRA/QLoRA, +2N when checkpointing recomputes the forward, + attention) over the card's dense
bf16 peak times a utilisation per card class; cost is hours x price x cards, excluding VAT.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pipeline.core import numfmt
from pipeline.core.markdown import table
from pipeline.core.models import ModelSpec, load_model_spec, param_breakdown
from pipeline.core.resources import resource
from pipeline.plan.measured import load_points, measured_slowdown
from pipeline.plan.memory import GIB, MemoryEstimate, estimate_memory
from pipeline.plan.setup import TrainingSetup

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
    utilisation: float = 0.28
    nominal_gb: float | None = None
    typical_use: str = ""

    @property
    def memory_gib(self) -> float:
        return self.memory_mib / 1024


@dataclass
class Catalog:
    gpus: list[GPU]
    counts: tuple[int, ...] = (1, 2, 4, 8)
    qlora_dequant_factor: float = 1.25
    eager_bandwidth_fraction: float = 0.5
    multi_gpu_efficiency: dict = field(default_factory=lambda: {"ddp": 0.95, "zero2": 0.92, "zero3": 0.85,
                                                                 "fsdp": 0.85})
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
    util = {**json.loads(CATALOG_FILE.read_text())["utilisation"], **data.get("utilisation", {})}
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
                            utilisation=float(entry.get("utilisation", util.get(gpu_class, util["default"]))),
                            nominal_gb=entry.get("nominal_gb"), typical_use=entry.get("typical_use", "")))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"GPU catalog {path}: entry {n} ({entry.get('name')}): {exc}") from None
    time = data.get("time", {})
    defaults = Catalog(gpus=[])
    return Catalog(gpus=gpus, counts=tuple(data.get("counts", defaults.counts)),
                   qlora_dequant_factor=float(time.get("qlora_dequant_factor", defaults.qlora_dequant_factor)),
                   eager_bandwidth_fraction=float(time.get("eager_bandwidth_fraction",
                                                           defaults.eager_bandwidth_fraction)),
                   multi_gpu_efficiency={**defaults.multi_gpu_efficiency, **time.get("multi_gpu_efficiency", {})},
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

def flops_per_token(spec: ModelSpec, method: str, seq_len: int, grad_ckpt: bool, lora_params: int = 0) -> float:
    """Training FLOPs per token: forward 2N, activation gradients 2N, weight gradients 2N (full only); the
    forward again (2N) when checkpointing recomputes it; causal attention 2*s*q_dim per layer per forward
    (QK^T and PV), three times for forward + backward, once more under checkpointing; adapters 6 x their size."""
    n = param_breakdown(spec)["matmul_active"]
    passes = (6 if method == "full" else 4) + (2 if grad_ckpt else 0)
    attention_forward = 2 * spec.num_hidden_layers * seq_len * spec.q_dim
    return passes * n + attention_forward * (4 if grad_ckpt else 3) + 6 * lora_params


# Bytes eager attention moves per element of one layer's seq x seq scores (bf16, softmax in fp32), as
# transformers' eager_attention_forward runs it: forward 24 (QK^T written, scaled, masked, softmax read and
# written in fp32, cast back, read by PV), backward 30 (the gradient through PV, the cast, the softmax and the
# scaling); checkpointing runs the forward twice. SDPA's fused kernels never write the scores.
EAGER_BYTES_PER_SCORE = {"forward": 24, "backward": 30}


def eager_attention_bytes(spec: ModelSpec, seq_len: int, micro_batch: int, grad_ckpt: bool) -> float:
    """Memory traffic of eager attention's elementwise passes over the scores in one micro-step."""
    passes = EAGER_BYTES_PER_SCORE["forward"] * (2 if grad_ckpt else 1) + EAGER_BYTES_PER_SCORE["backward"]
    return float(spec.num_hidden_layers * spec.num_attention_heads * micro_batch * seq_len ** 2 * passes)


def training_hours(total_tokens: float, token_flops: float, gpu: GPU, *, count: int = 1, efficiency: float = 1.0,
                   slowdown: float = 1.0, micro_steps_per_gpu: float = 0.0,
                   weight_bytes_per_step: float = 0.0, memory_bound_bytes_per_step: float = 0.0,
                   memory_bound_fraction: float = Catalog.eager_bandwidth_fraction) -> float:
    """Compute-bound time at the card's utilisation, or the memory-bandwidth floor of streaming the weights
    every micro-step (matters only for tiny micro-batches), whichever is longer; plus the time of memory-bound
    passes that run between the matmuls (eager attention's scores) at `memory_bound_fraction` of the bandwidth."""
    compute = total_tokens * token_flops * slowdown / (gpu.bf16_tflops * 1e12 * gpu.utilisation * count * efficiency)
    bandwidth = micro_steps_per_gpu * weight_bytes_per_step / (gpu.bandwidth_gbs * 1e9) if gpu.bandwidth_gbs else 0.0
    passes = (micro_steps_per_gpu * memory_bound_bytes_per_step / (gpu.bandwidth_gbs * 1e9 * memory_bound_fraction)
              if gpu.bandwidth_gbs else 0.0)
    return (max(compute, bandwidth) + passes) / 3600


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

def _evaluate_gpu(spec, method, seq_len, gpu: GPU, catalog: Catalog, *, total_tokens, total_sequences, margin,
                  max_micro_batch, options, trials: list[dict]) -> dict:
    """The smallest card count (with sharding where needed) on which the job fits, and its time and cost;
    `trials`: the stored measured points (pipeline.plan.measured), which correct the time on their card."""
    grad_ckpt = options.get("grad_ckpt", True)
    shardings_multi = ("zero2", "zero3") if method == "full" else ("fsdp",)
    last = None
    for count in catalog.counts:
        for sharding in (None,) if count == 1 else shardings_multi:
            mb, est = largest_micro_batch(spec, method, seq_len, gpu, margin=margin, max_micro_batch=max_micro_batch,
                                          gpus=count, sharding=sharding, **options)
            last = (count, sharding, est)
            if mb == 0:
                continue
            efficiency = catalog.multi_gpu_efficiency.get(sharding or "ddp", 0.85) if count > 1 else 1.0
            token_flops = flops_per_token(spec, method, seq_len, grad_ckpt, est.params["lora"])
            weight_passes = 3 if grad_ckpt else 2  # forward, (recompute), backward each read every weight
            eager = (eager_attention_bytes(spec, seq_len, mb, grad_ckpt) if options.get("attn") == "eager"
                     else 0.0)
            hours = training_hours(total_tokens, token_flops, gpu, count=count, efficiency=efficiency,
                                   slowdown=catalog.qlora_dequant_factor if method == "qlora" else 1.0,
                                   micro_steps_per_gpu=total_sequences / (mb * count),
                                   weight_bytes_per_step=weight_passes * est.components["weights"],
                                   memory_bound_bytes_per_step=eager,
                                   memory_bound_fraction=catalog.eager_bandwidth_fraction)
            calibrated = measured_slowdown(spec.name, method, gpu.name, trials)
            if calibrated:
                hours *= calibrated["slowdown"]
            return {"gpu": gpu.name, "count": count, "sharding": sharding, "fits": True, "micro_batch": mb,
                    "vram_need_gib": round(est.nvidia_smi_gib, 2), "usable_gib": round(usable_gib(gpu, margin), 2),
                    "memory_gib": round(gpu.memory_gib, 2), "price_per_hour": gpu.price_per_hour,
                    "hours": round(hours, 2), "cost_usd": cost_usd(hours, gpu.price_per_hour, count),
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
                              "price_per_hour")} | {"cost_text": numfmt.cost(c["cost_usd"]),
                                                     "calibrated": c.get("calibrated")}


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
                         f" fits {where(alt)}; steps are ~25% slower and quality is usually close to LoRA.")
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


def plan_training(model: str, method: str, *, seq_len: int, tokens_per_epoch: int, sequences_per_epoch: int,
                  epochs: float = 3.0, catalog_path=None, safety_margin: float = DEFAULT_MARGIN,
                  max_micro_batch: int = MAX_MICRO_BATCH, hints: bool = True, **memory_options) -> dict:
    """The pre-check's answer: memory at max length, each card's fit / micro-batch / time / cost, the cheapest
    card that fits (recommendation), the fastest, cheaper-path hints and checkpoint sizes. JSON-serializable.

    tokens_per_epoch: token positions processed per epoch (padding included, after packing);
    sequences_per_epoch: packed sequences per epoch; memory_options: TrainingSetup.build() keywords
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


HEADERS = ["GPU", "cards", "fits: need / usable GiB", "micro-batch", "$/h per card", "hours", "cost"]


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
    return (f"{label}: {cards}, micro-batch {c['micro_batch']}, {numfmt.hours(c['hours'])}, "
            f"{numfmt.cost(c['cost_usd'])}{trials}")


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
              _choice_line("Fastest", plan["fastest"]), "",
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
    if plan["hints"]:
        lines += ["", "Cheaper paths:"] + [f"  - {h}" for h in plan["hints"]]
    lines += ["", _checkpoint_line(plan)]
    return "\n".join(lines) + "\n"


def catalog_rows(catalog: Catalog) -> list[dict]:
    return [{**asdict(g), "memory_gib": round(g.memory_gib, 2)} for g in catalog.gpus]


def render_catalog_text(catalog: Catalog) -> str:
    headers = ["GPU", "memory MiB", "GiB", "$/h excl. VAT", "bf16 TFLOP/s", "GB/s", "util.", "typical use"]
    rows = [headers] + [[g.name, str(g.memory_mib), f"{g.memory_gib:.1f}", f"{g.price_per_hour:.2f}",
                         f"{g.bf16_tflops:g}", _fmt(g.bandwidth_gbs, "g"), f"{g.utilisation:.0%}", g.typical_use]
                        for g in catalog.gpus]
    widths = [max(len(r[i]) for r in rows) for i in range(len(headers))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + f"\n\nPrices {catalog.price_basis} ({catalog.currency}); source: {catalog.source}\n"
