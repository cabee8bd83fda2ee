"""`prepare precheck ... --emit trl|axolotl|llamafactory`: the trainer config of what was estimated.

Every setting the estimate assumed (model, method, LoRA, NF4 + double quantization, max length, packing,
micro-batch, checkpointing, attention, optimizer, precision, loss masking, epochs) is written into the
trainer's own config, so the job that runs is the job that was planned. The trainer names the estimator's
framework preset (pipeline.plan.setup): a precheck for axolotl is estimated with axolotl's loss path, adapter
dtype and QLoRA upcasts. Beside the config goes prepare-plan.json: the estimate, for `prepare calibrate`.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path

TRAINERS = {"trl": "hf", "axolotl": "axolotl", "llamafactory": "llamafactory"}  # trainer -> estimator preset
CONFIG_NAMES = {"trl": "trl_sft.yaml", "axolotl": "axolotl.yaml", "llamafactory": "llamafactory.yaml"}
PLAN_NAME = "prepare-plan.json"
# the estimator's optimizer names -> transformers' TrainingArguments.optim (trl, axolotl and LLaMA-Factory all
# pass it through); fused AdamW is what the presets assume for adamw
HF_OPTIM = {"adamw": "adamw_torch_fused", "adamw8bit": "adamw_bnb_8bit", "paged_adamw8bit": "paged_adamw_8bit",
            "sgd": "sgd", "adafactor": "adafactor"}
# the attention kernel the plan timed (plan.time_model.stack), as each trainer names it; fa2 needs the flash-attn
# package where the trainer runs
HF_ATTN = {"sdpa": "sdpa", "eager": "eager", "fa2": "flash_attention_2"}
LLAMAFACTORY_ATTN = {"sdpa": "sdpa", "eager": "disabled", "fa2": "fa2"}
AXOLOTL_LORA_KERNELS = ("lora_mlp_kernel", "lora_qkv_kernel", "lora_o_kernel", "lora_embedding_kernel")


from pipeline.core.config import ConfigError, merge_config
from pipeline.core.files import atomic_write_text
from pipeline.core.models import load_model_spec
from pipeline.core.resources import resource
from pipeline.plan.from_lengths import plan_for_lengths
from pipeline.plan.setup import framework_preset
from pipeline.train.llamafactory_data import FOLDER as LLAMAFACTORY_FOLDER
from pipeline.train.llamafactory_data import write_copies as write_llamafactory_copies
from pipeline.train.rundata import RunDataError, read_run, split_kind_copies


class EmitError(ConfigError):
    """Nothing sensible to write (no GPU fits, a trainer that contradicts --framework, no shards): one line."""


def add_emit_arguments(p) -> None:
    p.add_argument("--emit", choices=sorted(TRAINERS),
                   help="write a ready trainer config of this plan (trl, axolotl or llamafactory; needs --shards)")
    p.add_argument("--shards", metavar="RUN",
                   help="the `prepare run` output the config trains on: a run directory or its s3://bucket/prefix")
    p.add_argument("--out", dest="emit_out", metavar="DIR", default=".",
                   help="folder for the emitted config and prepare-plan.json (default: current folder)")
    p.add_argument("--global-batch", default="32", metavar="N[t]",
                   help="target global batch per optimizer step: N sequences, or N tokens with a t suffix "
                        "(e.g. 65536t); default 32 sequences")
    p.add_argument("--checkpoint-minutes", type=float, default=30.0, metavar="M",
                   help="at most this much work lost when the server stops: sets the checkpoint interval (default 30)")
    p.add_argument("--base-model", metavar="ID",
                   help="model id or path the trainer loads (default: the hub id of --model)")
    p.add_argument("--trainer-output", metavar="DIR", default="output",
                   help="the trainer's output_dir (checkpoints), default output")


def framework_for(trainer: str, framework: str | None) -> str:
    """The estimator preset of a trainer; an explicit --framework that differs is an error, not a silent mismatch."""
    preset = TRAINERS[trainer]
    if framework not in (None, preset):
        raise EmitError(f"--emit {trainer} runs the {preset} stack, but --framework {framework} was estimated; "
                        f"drop --framework (the trainer sets it)")
    return preset


def parse_global_batch(text: str) -> tuple[int, str]:
    m = re.fullmatch(r"\s*(\d+)\s*(t|tokens)?\s*", str(text))
    if not m or int(m.group(1)) < 1:
        raise EmitError(f"--global-batch {text!r}: expected a positive number of sequences, or tokens as e.g. 65536t")
    return int(m.group(1)), "tokens" if m.group(2) else "sequences"


def trainer_model_id(model: str) -> str:
    """What the trainer loads: a hub id or a local path as given; a built-in name becomes its hub id."""
    if "/" in model or Path(model).exists():
        return str(Path(model).resolve()) if Path(model).exists() else model

    spec = load_model_spec(model)
    table = json.loads(resource("models.json").read_text())["models"]
    entry = table.get(spec.name, {})
    hub = [a for a in entry.get("aliases", []) if "/" in a]
    # base weights first: an instruct alias is only the fallback
    base = [a for a in hub if not re.search(r"(?i)instruct|chat", a)]
    if base or hub:
        return (base or hub)[0]
    raise EmitError(f"model {model!r} has no hub id in the catalog; pass --base-model ID (or a local path)")


def read_shards(where: str) -> dict:
    """The `prepare run` output the config trains on (pipeline.train.rundata), as one line when unreadable."""
    try:
        return read_run(where)
    except RunDataError as exc:
        raise EmitError(str(exc)) from None


def datasets_of(shards: dict, tokens: dict) -> list[dict]:
    """One dataset per kind of record (chat, text): its shards by split, row counts and, from the manifest, the
    packed sequences a trainer makes of its train records (None for a run older than those counts). Without a
    per-kind view (an older run on S3 that mixes kinds in one shard set), the whole run as one dataset of the
    kind that the precheck saw most (chats train only on the answers, text on every token)."""
    if shards["kinds"]:
        return [{"kind": kind, "train": e["train"], "validation": e["validation"], "rows": e["rows"],
                 "eval": bool(e["validation"]), "mixed": e["mixed"],
                 "train_counts": (e.get("counts") or {}).get("train")} for kind, e in shards["kinds"].items()]
    group = tokens["groups"][tokens.get("basis", "all")]
    kind = "chat" if group["trainable"]["total"] < group["tokens"]["total"] else "text"
    return [{"kind": kind, "train": shards["train"], "validation": shards["validation"], "rows": shards["rows"],
             "eval": bool(shards["validation"]), "mixed": False, "train_counts": None}]


def packed_sequences(datasets: list[dict], run_packing: dict, seq: int, together: bool) -> dict:
    """The packed sequences per epoch of each dataset (into each dict) and of the job: the manifest's per-kind
    counts where the run has them; else the run's packing (one dataset) or its share of it by train records
    (`estimated`). `together`: the trainer packs every dataset into one stream (axolotl) rather than training
    each from its own config (trl, LLaMA-Factory, whose sequences add up)."""
    run_sequences = int(run_packing["sequences_per_epoch"])
    one_stream = int(run_packing.get("one_stream_sequences", run_sequences))
    train_rows = sum(d["rows"]["train"] for d in datasets)
    for d in datasets:
        counts = d["train_counts"] or {}
        d["estimated"] = "packed_sequences" not in counts
        d["packed_sequences"] = counts["packed_sequences"] if not d["estimated"] else \
            run_sequences if len(datasets) == 1 else math.ceil(run_sequences * d["rows"]["train"] / max(1, train_rows))
    together = together and len(datasets) > 1
    sequences = one_stream if together else sum(d["packed_sequences"] for d in datasets)
    kept = [c["tokens"] - c["tokens_cut"] for c in (d["train_counts"] or {} for d in datasets) if "tokens_cut" in c]
    efficiency = round(sum(kept) / (sequences * seq), 6) if not together and len(kept) == len(datasets) \
        and sequences else run_packing.get("packing_efficiency")
    return {"sequences_per_epoch": sequences, "tokens_per_epoch": sequences * seq, "efficiency": efficiency,
            "together": together}


def plan_steps(datasets: list[dict], job: dict, batch: int, epochs: float, drop_last: bool = False) -> dict:
    """The optimizer steps of each dataset (into each dict) and of the job (packed_sequences): per epoch
    ceil(sequences / global batch) (transformers' ceil of the dataloader's ceil), times the epochs, ceil.
    `drop_last`: axolotl's multipack sampler drops the last partial batch of an epoch and axolotl floors the
    total (utils/trainer.py calculate_total_num_steps): floor both."""
    def steps(sequences: int) -> tuple[int, int]:
        if drop_last:
            per_epoch = max(1, sequences // batch)
            return per_epoch, max(1, math.floor(per_epoch * epochs))
        per_epoch = math.ceil(sequences / batch)
        return per_epoch, max(1, math.ceil(per_epoch * epochs))

    for d in datasets:
        d["steps_per_epoch"], d["total_steps"] = steps(d["packed_sequences"])
    if job["together"]:
        per_epoch, total = steps(job["sequences_per_epoch"])
    else:
        per_epoch, total = sum(d["steps_per_epoch"] for d in datasets), sum(d["total_steps"] for d in datasets)
    return {"steps_per_epoch": per_epoch, "total_steps": total}


def job_plan(cfg, result: dict, seq: int, job: dict) -> dict:
    """The precheck's plan (memory, time, the GPU) redone for the sequences the trainer packs from the run: a
    precheck of the raw inputs also packs the validation split and the near duplicates that the run removes
    (issue 32: 328 packed sequences planned, 303 trained)."""
    packing = {"sequences_per_epoch": job["sequences_per_epoch"], "tokens_per_epoch": job["tokens_per_epoch"],
               "padding_ratio": round(1 - job["efficiency"], 6) if job["efficiency"] else None}
    plan = plan_for_lengths(cfg, {"max_seq_len": seq, "packing": packing})
    approximate = result["plan"].get("approximate")  # the tokenizer the precheck counted with
    return {**plan, "approximate": approximate} if approximate else plan


def _micro_batch(fit: int, cards: int, global_seqs: int) -> tuple[int, int]:
    """(micro-batch, accumulation): the largest micro-batch that fits and divides the global batch across the
    cards exactly; else the fit, rounded up to whole accumulation steps."""
    per_card = max(1, global_seqs // cards)
    for mb in range(min(fit, per_card), 0, -1):
        if global_seqs % (mb * cards) == 0:
            if mb * 2 >= min(fit, per_card):  # a divisor far below the fit would waste the card: round instead
                return mb, global_seqs // (mb * cards)
            break
    mb = min(fit, per_card)
    return mb, math.ceil(global_seqs / (mb * cards))


def build_spec(cfg, result: dict, *, trainer: str, shards: dict, global_batch: str = "32",
               checkpoint_minutes: float = 30.0, base_model: str | None = None,
               trainer_output: str = "output") -> dict:
    """Everything the estimate assumed, trainer-neutral: the emitters only spell it."""
    if checkpoint_minutes <= 0:
        raise EmitError("--checkpoint-minutes must be > 0")
    # what the run decided, not what a precheck of the raw inputs (before near-duplicate removal) found: the
    # length the shards were cut at, and the packed sequences of the records they hold, as the trainer packs them
    seq = int(shards["max_seq_len"] or result["max_seq_len"])
    datasets = datasets_of(shards, result["tokens"])
    if trainer == "llamafactory":
        llamafactory_text_blocks(datasets, shards["kinds"] or {}, seq)
    job = packed_sequences(datasets, shards["packing"] or result["tokens"]["packing"], seq,
                           together=trainer == "axolotl")
    plan = job_plan(cfg, result, seq, job)
    rec = plan["recommendation"]
    if rec is None:
        raise EmitError("no GPU in the catalog fits this job: nothing to emit (see the hints of the plan)")
    s = plan["memory"]["settings"]
    preset = framework_preset(s.get("framework", "hf"))
    amount, unit = parse_global_batch(global_batch)
    global_seqs = max(1, round(amount / seq)) if unit == "tokens" else amount
    cards = int(rec["count"])
    if global_seqs < cards:
        raise EmitError(f"--global-batch {global_batch} is smaller than one sequence per card ({cards} cards)")
    micro, accum = _micro_batch(int(rec["micro_batch"]), cards, global_seqs)
    effective = micro * accum * cards
    epochs = float(plan["epochs"])
    steps = plan_steps(datasets, job, effective, epochs, drop_last=trainer == "axolotl")
    total_steps = steps["total_steps"]
    tps = _tokens_per_second(plan, rec)
    # from the throughput, not from the plan's hours, which are rounded to 0.01 h
    step_seconds = (job["tokens_per_epoch"] * epochs / tps if tps else rec["hours"] * 3600) / total_steps
    save_steps = max(1, min(total_steps, int(checkpoint_minutes * 60 // max(step_seconds, 1e-9))))
    method = plan["method"]
    peft = method in ("lora", "qlora")
    records = {d["kind"]: d["rows"]["train"] for d in datasets}
    chat_share = records.get("chat", 0) / max(1, sum(records.values()))
    precheck_id = hashlib.sha256(json.dumps(
        [cfg.model_dump(mode="json", exclude={"out"}), plan["recommendation"], seq, shards["run_id"]],
        sort_keys=True, default=str).encode()).hexdigest()[:12]
    return {
        "trainer": trainer, "framework": preset.name, "precheck_id": precheck_id, "data_run_id": shards["run_id"],
        "model": base_model or trainer_model_id(cfg.estimate.model), "model_spec": plan["model"], "method": method,
        "lora": {"r": int(s.get("lora_rank") or 16), "alpha": 2 * int(s.get("lora_rank") or 16),
                 "dropout": float(s.get("lora_dropout", preset.lora_dropout)),
                 "targets": list(s.get("lora_targets") or [])} if peft else None,
        "adapter_dtype": s.get("adapter_dtype"),
        "quantization": {"type": "nf4", "double_quant": bool(s.get("double_quant", True))}
        if method == "qlora" else None,
        "max_length": seq, "overflow": shards["overflow"] or cfg.lengths.overflow,
        "packing": {"enabled": True, "efficiency": job["efficiency"],
                    "sequences_per_epoch": job["sequences_per_epoch"], "tokens_per_epoch": job["tokens_per_epoch"]},
        "micro_batch": micro, "grad_accum": accum, "cards": cards, "global_batch": effective,
        "global_batch_asked": {"value": amount, "unit": unit},
        "grad_ckpt": bool(s.get("grad_ckpt", True)), "ckpt_mode": preset.ckpt_mode,
        "attn": (plan.get("time_model") or {}).get("stack", {}).get("attention") or s.get("attn", "sdpa"),
        "optimizer": HF_OPTIM[s.get("optimizer", "adamw")],
        "cross_entropy": s.get("cross_entropy"), "bf16": True,
        "assistant_only_loss": chat_share > 0, "chat_share": round(chat_share, 4),
        "epochs": epochs, "learning_rate": 2e-4 if peft else 2e-5,
        "shards": {"root": shards["root"], "s3": shards["s3"], "bases": shards["bases"], "train": shards["train"],
                   "validation": shards["validation"], "rows": shards["rows"],
                   "split_by_kind": shards["split_by_kind"]},
        "datasets": datasets,
        "eval": bool(shards["validation"]),
        "save_steps": save_steps, "eval_steps": save_steps, "checkpoint_minutes": checkpoint_minutes,
        "steps_per_epoch": steps["steps_per_epoch"], "total_steps": total_steps, "step_seconds": step_seconds,
        "output_dir": trainer_output,
        "estimate": {"gpu": rec["gpu"], "count": cards, "micro_batch_fit": rec["micro_batch"],
                     "hours": rec["hours"], "cost_usd": rec["cost_usd"], "cost_text": rec["cost_text"],
                     "price_per_hour": rec["price_per_hour"], "vram_need_gib": rec["vram_need_gib"],
                     "tokens_per_second": tps, "sequences_per_epoch": plan["tokens"]["sequences_per_epoch"],
                     "peak_allocated_gib_mb1": plan["memory"]["peak_allocated_gib"]},
    }


def interval(spec: dict, dataset: dict) -> int:
    """Save and evaluation interval of a config that trains on one dataset: at most its own steps, so that a
    short config still saves (and evaluates) at its end."""
    return min(spec["save_steps"], dataset["total_steps"])


def _tokens_per_second(plan: dict, rec: dict) -> float | None:
    for c in plan["candidates"]:
        if c["gpu"] == rec["gpu"] and c["count"] == rec["count"]:
            return c.get("tokens_per_second")
    return None


def header(spec: dict, datasets: list[dict]) -> str:
    """The comment block on top of a config: what was estimated, and which of the run's datasets it trains on."""
    e = spec["estimate"]
    lora = spec["lora"]
    apart = len(datasets) == 1 < len(spec["datasets"])  # one kind of a run that has both, in its own config
    one = datasets[0] if len(datasets) == 1 else None
    steps = one or spec
    trained_on = f" for its {one['kind']} records" if apart else ""
    every = interval(spec, one) if one else spec["save_steps"]
    sequences = one["packed_sequences"] if one else spec["packing"]["sequences_per_epoch"]
    counted = (" (about: this run's manifest has no per-kind counts; rerun `prepare run` for exact ones)"
               if one and one["estimated"] and apart else "")
    lines = [
        f"written by `prepare precheck --emit {spec['trainer']}`: precheck {spec['precheck_id']}, "
        f"data run {spec['data_run_id']}",
        f"estimate: {spec['model_spec']} {spec['method']} at max length {spec['max_length']} on {e['gpu']} "
        f"x{e['count']}: {e['hours']} h, {e['cost_text']}, {e['vram_need_gib']} GiB (nvidia-smi) at micro-batch "
        f"{e['micro_batch_fit']}",
        f"global batch {spec['global_batch']} sequences of {spec['max_length']} tokens = micro-batch "
        f"{spec['micro_batch']} x {spec['grad_accum']} accumulation x {spec['cards']} card(s)"
        + (f" (asked {spec['global_batch_asked']['value']} {spec['global_batch_asked']['unit']})"
           if spec["global_batch_asked"] != {"value": spec["global_batch"], "unit": "sequences"} else ""),
        f"{steps['total_steps']} optimizer steps of ~{spec['step_seconds']:.1f} s (estimated){trained_on}: "
        f"{steps['steps_per_epoch']} per epoch x {spec['epochs']:g} epochs; a checkpoint every {every} "
        f"steps loses at most {spec['checkpoint_minutes']:g} min of work",
        f"estimator preset {spec['framework']}: loss {spec['cross_entropy']}, adapters {spec['adapter_dtype']}, "
        f"optimizer {spec['optimizer']}, checkpointing {spec['ckpt_mode'] if spec['grad_ckpt'] else 'off'}",
        f"packing: {sequences} packed sequences per epoch{counted} (simulated efficiency of the job "
        f"{100 * (spec['packing']['efficiency'] or 0):.1f}%); overflow policy of the run: {spec['overflow']}",
    ]
    if lora:
        lines.append(f"LoRA r {lora['r']}, dropout {lora['dropout']} as estimated; alpha {lora['alpha']} = 2 x r "
                     f"(alpha does not change memory or time)")
    for d in datasets:
        rows = d["rows"]
        evaluated = ", evaluated" if d["eval"] else f", no evaluation: {d['eval_note']}" if "eval_note" in d \
            else ", no evaluation"
        lines.append(f"{d['kind']} records: {rows['train']} train, {rows['validation']} validation (the run's own "
                     f"split{evaluated}); "
                     + ("loss on assistant turns only" if d["kind"] == "chat" else "loss on every token"))
        if "pt_tokens_dropped" in d:
            lines.append(f"LLaMA-Factory's pt stage concatenates the texts and cuts blocks of {spec['max_length']} "
                         f"tokens: {d['packed_sequences']} blocks; the last {d['pt_tokens_dropped']} tokens fill no "
                         f"block and are not trained")
    others = [d["kind"] for d in spec["datasets"] if d not in datasets]
    if others:
        lines.append(f"the run's {', '.join(others)} records are in their own config beside this one (a trainer "
                     f"takes one kind per dataset: chats are masked to the answers, text is not)")
    if spec["trainer"] == "llamafactory":
        lines.append(f"LLaMA-Factory reads the run's records from the JSON Lines copy beside this config "
                     f"({LLAMAFACTORY_FOLDER}/: its datasets<=4.0.0 cannot read the shards' JSON columns)")
    if spec["shards"]["s3"]:
        lines.append(f"shards on S3: {spec['shards']['root']} (manifest.json lists them)"
                     + ("; their records written apart by kind beside this config, which the trainer reads"
                        if not _reads_s3(spec) and spec["trainer"] != "llamafactory" else ""))
    lines.append("upload checkpoints: `prepare checkpoints sync OUTPUT_DIR s3://bucket/prefix`, or the callback "
                 "pipeline.train.S3Checkpoints")
    return "".join(f"# {line}\n" for line in lines)


# ------------------------------------------------------------------------------------------------- trl

def trl_config(spec: dict, dataset: dict, source: dict) -> dict:
    """Keys of trl's `trl sft --config` (TrlParser over ScriptArguments, SFTConfig, ModelConfig) for one dataset
    of the run; `source` is its dataset_name (and dataset_config) as trl's script loads it."""
    out: dict = {"model_name_or_path": spec["model"], "dtype": "bfloat16", "attn_implementation": HF_ATTN[spec["attn"]]}
    if spec["lora"]:
        out |= {"use_peft": True, "lora_r": spec["lora"]["r"], "lora_alpha": spec["lora"]["alpha"],
                "lora_dropout": spec["lora"]["dropout"], "lora_target_modules": spec["lora"]["targets"]}
    if spec["quantization"]:
        out |= {"load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
                "use_bnb_nested_quant": spec["quantization"]["double_quant"]}
    out |= {**source, "dataset_train_split": "train", "dataset_test_split": "validation",
            "output_dir": output_dir(spec, dataset), "max_length": spec["max_length"],
            # best-fit decreasing, as the plan's packing counts; what is still over max_length after the run's
            # overflow policy is cut (the report's "the trainer will cut N tokens")
            "packing": True, "packing_strategy": "bfd", "truncation_mode": "keep_start",
            "per_device_train_batch_size": spec["micro_batch"], "per_device_eval_batch_size": spec["micro_batch"],
            "gradient_accumulation_steps": spec["grad_accum"],
            # transformers 5.24's names (gradient_checkpointing* are its deprecated aliases)
            "activation_checkpointing": spec["grad_ckpt"],
            "activation_checkpointing_kwargs": {"use_reentrant": spec["ckpt_mode"] == "reentrant"},
            "optim": spec["optimizer"], "learning_rate": spec["learning_rate"], "bf16": spec["bf16"],
            "assistant_only_loss": dataset["kind"] == "chat", "num_train_epochs": spec["epochs"],
            "logging_steps": max(1, min(10, interval(spec, dataset))), "save_strategy": "steps",
            "save_steps": interval(spec, dataset), "report_to": "none"}
    if dataset["eval"]:
        out |= {"eval_strategy": "steps", "eval_steps": interval(spec, dataset), "load_best_model_at_end": True,
                "metric_for_best_model": "eval_loss", "greater_is_better": False}
    else:
        out["eval_strategy"] = "no"
    return out


def _local_name(root: str) -> str:
    return "data/" + root.rstrip("/").rsplit("/", 1)[-1]


def local_names(spec: dict) -> dict[str, str]:
    """s3:// base -> the folder (relative to the config's) its shards are synced to: one per base, since an
    appended version's bases hold shards of the same names (train/part-00000.parquet in each); a base whose
    last name another base shares gets its hash too."""
    bases = [b for b in spec["shards"]["bases"] if b.startswith("s3://")]
    names = {b: _local_name(b) for b in bases}
    taken = [names[b] for b in bases]
    return {b: n if taken.count(n) == 1 else f"{n}-{hashlib.sha256(b.encode()).hexdigest()[:8]}"
            for b, n in names.items()}


def base_of(spec: dict, path: str) -> str | None:
    """The base (run directory or s3:// prefix) a shard path is under; None for a copy written beside the config."""
    return next((b for b in spec["shards"]["bases"] if path.startswith(b.rstrip("/") + "/")), None)


def by_base(spec: dict, paths: list[str]) -> list[list[str]]:
    """Shard paths grouped by their base, in order: a trainer that reads a folder reads one per base."""
    groups: dict = {}
    for path in paths:
        groups.setdefault(base_of(spec, path), []).append(path)
    return list(groups.values())


def _whole_run(spec: dict) -> bool:
    """The run's train/ and validation/ folders are the one dataset: trl loads the run directory as it is (not
    an appended version, whose earlier shards are elsewhere)."""
    return len(spec["datasets"]) == 1 and not spec["shards"]["split_by_kind"] and not spec["datasets"][0]["mixed"] \
        and spec["shards"]["bases"] == [spec["shards"]["root"]]


TRL_DATASETS = "trl_datasets"


def trl_sources(spec: dict, out: Path) -> tuple[dict[str, dict], str | None]:
    """(kind -> dataset_name/dataset_config for trl's script, the README.md of a dataset folder or None). One
    dataset per kind: datasets.load_dataset reads the `configs` of a folder's README.md, each config naming
    its train and validation files, so trl's script loads the run's own validation split of that kind."""
    sh = spec["shards"]
    if _whole_run(spec):
        name = sh["root"] if not sh["s3"] else _local_name(sh["root"])
        return {spec["datasets"][0]["kind"]: {"dataset_name": name}}, None
    configs = []
    for d in spec["datasets"]:
        files = [{"split": split, "path": [local_path(spec, out, p) for p in d[split]]}
                 for split in ("train", "validation") if d[split]]
        configs.append({"config_name": d["kind"], "data_files": files})
    readme = "---\n" + _yaml({"configs": configs}) + "---\nThe datasets of `prepare run` " + spec["data_run_id"] \
        + ", one config per kind of record (written by `prepare precheck --emit trl`).\n"
    folder = str(out.resolve() / TRL_DATASETS)
    return {d["kind"]: {"dataset_name": folder, "dataset_config": d["kind"]} for d in spec["datasets"]}, readme


def local_path(spec: dict, out: Path, path: str) -> str:
    """Where a trainer that reads local files finds a shard: a shard on S3 at its place in the local mirror the
    header's sync line fills; a local shard, or a kind's copy written beside the config, where it is."""
    if not path.startswith("s3://"):
        return path
    base = base_of(spec, path)
    return str(out.resolve() / local_names(spec)[base]) + path[len(base.rstrip("/")):]


def _reads_s3(spec: dict) -> bool:
    """Whether the configs name shards on S3 (kinds written apart beside the config are local)."""
    return any(p.startswith("s3://") for d in spec["datasets"] for split in ("train", "validation") for p in d[split])


def _sync_header(spec: dict, trainer: str, out: Path | None) -> str:
    """The download step of a trainer that reads only local shards, for shards on S3: one folder per base the
    configs read (relative to the working directory where `out` is None)."""
    read = {base_of(spec, p) for d in spec["datasets"] for split in ("train", "validation") for p in d[split]
            if p.startswith("s3://")}
    lines = []
    for base, name in local_names(spec).items():
        if base in read:
            local = name if out is None else str(out.resolve() / name)
            lines.append(f"# {trainer} reads local shards: first `aws s3 sync {base.rstrip('/')}/ {local}/ "
                         f"--exclude '*' --include 'train/*' --include 'validation/*' --include manifest.json`\n")
    return "".join(lines)


def _trl_extra_header(spec: dict, out: Path) -> str:
    if not _reads_s3(spec):
        return ""
    return _sync_header(spec, "trl", None if _whole_run(spec) else out)


# ------------------------------------------------------------------------------------------------- axolotl

def axolotl_config(spec: dict) -> dict:
    """Keys of axolotl's YAML (AxolotlInputConfig)."""
    def datasets(d: dict, split: str) -> list[dict]:
        """One entry per base of the kind's shards (an appended version's earlier shards are elsewhere)."""
        return [entry(d, paths) for paths in by_base(spec, d[split])]

    def entry(d: dict, paths: list[str]) -> dict:
        ds = {"path": paths[0] if len(paths) == 1 else paths[0].rsplit("/", 1)[0], "ds_type": "parquet",
              "data_files": paths, "split": "train"}
        if d["kind"] == "chat":
            ds |= {"type": "chat_template", "field_messages": "messages", "roles_to_train": ["assistant"],
                   "train_on_eos": "turn"}
        else:
            ds |= {"type": "completion", "field": "text"}
        return ds

    out: dict = {"base_model": spec["model"]}
    if spec["quantization"]:
        out |= {"load_in_4bit": True, "adapter": "qlora",
                "bnb_config_kwargs": {"bnb_4bit_quant_type": "nf4",
                                      "bnb_4bit_use_double_quant": spec["quantization"]["double_quant"]}}
    elif spec["lora"]:
        out["adapter"] = "lora"
    if spec["lora"]:
        out |= {"lora_r": spec["lora"]["r"], "lora_alpha": spec["lora"]["alpha"],
                "lora_dropout": spec["lora"]["dropout"], "lora_target_modules": spec["lora"]["targets"]}
        # axolotl's validator turns its fused LoRA kernels on when none is set; the estimate does not model them
        out |= dict.fromkeys(AXOLOTL_LORA_KERNELS, False)
    # one config for both kinds: axolotl tokenizes each dataset by its own type (a chat template masked to the
    # answers, a completion trained on every token) and packs them together
    out |= {"chat_template": "tokenizer_default", "datasets": [e for d in spec["datasets"] for e in datasets(d, "train")]}
    if spec["eval"]:
        out["test_datasets"] = [e for d in spec["datasets"] if d["eval"] for e in datasets(d, "validation")]
    out |= {"train_on_inputs": not spec["assistant_only_loss"],
            "sequence_len": spec["max_length"], "sample_packing": True, "eval_sample_packing": spec["eval"],
            "pad_to_sequence_len": True,
            # the run dropped its over-long records, or kept them for the trainer to cut (the report's "the
            # trainer will cut N tokens", which the plan counted), or truncated them already
            "excess_length_strategy": "drop" if spec["overflow"] == "drop" else "truncate",
            "micro_batch_size": spec["micro_batch"], "gradient_accumulation_steps": spec["grad_accum"],
            "num_epochs": spec["epochs"], "gradient_checkpointing": spec["grad_ckpt"],
            "gradient_checkpointing_kwargs": {"use_reentrant": spec["ckpt_mode"] == "reentrant"},
            "attn_implementation": HF_ATTN[spec["attn"]], "optimizer": spec["optimizer"],
            "learning_rate": spec["learning_rate"], "bf16": spec["bf16"],
            "output_dir": spec["output_dir"], "save_strategy": "steps", "save_steps": spec["save_steps"],
            "logging_steps": max(1, min(10, spec["save_steps"]))}
    if spec["eval"]:
        out |= {"eval_strategy": "steps", "eval_steps": spec["eval_steps"], "load_best_model_at_end": True,
                "metric_for_best_model": "eval_loss", "greater_is_better": False}
    return out


# ------------------------------------------------------------------------------------------------- LLaMA-Factory

def llamafactory_names(spec: dict, dataset: dict) -> dict[str, str]:
    """split -> the dataset_info.json name of a kind's records (prepare_train, or prepare_chat_train with kinds)."""
    middle = f"{dataset['kind']}_" if len(spec["datasets"]) > 1 else ""
    return {split: f"prepare_{middle}{split}" for split in ("train", "validation")}


def llamafactory_dataset_info(spec: dict, copies: dict[tuple[str, str], str]) -> dict:
    """The dataset_info.json entries of the JSON Lines copies (pipeline.train.llamafactory_data): chats in the
    sharegpt formatting, plain text as the prompt of the `pt` stage."""
    def entry(kind: str, path: str) -> dict:
        if kind != "chat":
            return {"file_name": path, "columns": {"prompt": "text"}}
        return {"file_name": path, "formatting": "sharegpt", "columns": {"messages": "messages", "tools": "tools"},
                "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                         "assistant_tag": "assistant", "observation_tag": "tool", "function_tag": "function_call",
                         "system_tag": "system"}}

    info = {}
    for d in spec["datasets"]:
        names = llamafactory_names(spec, d)
        for split in ("train", "validation") if d["eval"] else ("train",):
            info[names[split]] = entry(d["kind"], copies[d["kind"], split])
    return info


def llamafactory_config(spec: dict, dataset: dict, dataset_dir: str) -> dict:
    """Keys of LLaMA-Factory's `llamafactory-cli train` YAML (its HfArgumentParser over model, data, training
    and finetuning arguments) for one dataset of the run. Chats train in the `sft` stage, its template masking
    them to the answers; plain text in the `pt` stage, on every token (its `sft` stage drops a record with no
    answer as invalid)."""
    lora = spec["lora"]
    names = llamafactory_names(spec, dataset)
    chat = dataset["kind"] == "chat"
    out: dict = {"model_name_or_path": spec["model"], "stage": "sft" if chat else "pt", "do_train": True,
                 "finetuning_type": "lora" if lora else "full"}
    if lora:
        out |= {"lora_rank": lora["r"], "lora_alpha": lora["alpha"], "lora_dropout": lora["dropout"],
                "lora_target": ",".join(lora["targets"]) or "all"}
    if spec["quantization"]:
        out |= {"quantization_bit": 4, "quantization_method": "bnb", "quantization_type": "nf4",
                "double_quantization": spec["quantization"]["double_quant"]}
    out |= {"dataset": names["train"], "dataset_dir": dataset_dir, "cutoff_len": llamafactory_cutoff(spec, chat),
            "packing": True}
    if chat:  # each chat apart in its pack (no attention across records); `pt` concatenates the texts
        out |= {"neat_packing": True, "train_on_prompt": False}
    out |= {"flash_attn": LLAMAFACTORY_ATTN[spec["attn"]],
            "disable_gradient_checkpointing": not spec["grad_ckpt"],
            "per_device_train_batch_size": spec["micro_batch"], "gradient_accumulation_steps": spec["grad_accum"],
            "num_train_epochs": spec["epochs"], "learning_rate": spec["learning_rate"], "optim": spec["optimizer"],
            "bf16": spec["bf16"], "output_dir": output_dir(spec, dataset),
            "logging_steps": max(1, min(10, interval(spec, dataset))),
            "save_strategy": "steps", "save_steps": interval(spec, dataset), "report_to": "none"}
    if dataset["eval"]:
        out |= {"eval_dataset": names["validation"], "per_device_eval_batch_size": spec["micro_batch"],
                "eval_strategy": "steps", "eval_steps": interval(spec, dataset), "load_best_model_at_end": True,
                "metric_for_best_model": "eval_loss", "greater_is_better": False}
    return out


def llamafactory_text_blocks(datasets: list[dict], kinds: dict, seq: int) -> None:
    """LLaMA-Factory's `pt` stage concatenates the texts (each with its EOS) and cuts blocks of the max length,
    dropping the rest: the text dataset's sequences are its tokens // max length, not a packing of records (its
    map batches of 1,000 records each drop their own rest: exact up to 1,000 records). A validation split
    shorter than one block gives no eval sample (LLaMA-Factory stops on it), so that config does not evaluate."""
    for d in datasets:
        counts = d["train_counts"]
        if d["kind"] != "text" or not counts or "tokens" not in counts:
            continue
        blocks = counts["tokens"] // seq
        if not blocks:
            raise EmitError(f"the run's text records hold {counts['tokens']} tokens, less than one block of "
                            f"{seq}: LLaMA-Factory's pt stage would find no sample")
        d["train_counts"] = {**counts, "packed_sequences": blocks, "tokens": blocks * seq, "tokens_cut": 0}
        d["pt_tokens_dropped"] = counts["tokens"] - blocks * seq
        validation = ((kinds.get("text") or {}).get("counts") or {}).get("validation") or {}
        if d["eval"] and validation.get("tokens", seq) < seq:
            d["eval"], d["eval_note"] = False, f"its {validation['tokens']} tokens fill no block of {seq}"


def llamafactory_cutoff(spec: dict, chat: bool) -> int:
    """cutoff_len for sequences of the planned max length. LLaMA-Factory takes one off when packing
    (DataArguments: cutoff_len -= 1). `sft` then packs records of at most that into rows one longer, so
    cutoff_len = max length gives rows of the max length (one more gives rows its collator pads to a multiple
    of 8 past their position ids: a RoPE size error); `pt` cuts the texts into blocks of exactly that, so it
    needs the max length + 1."""
    return spec["max_length"] if chat else spec["max_length"] + 1


# ------------------------------------------------------------------------------------------------- writing

def _yaml(data: dict) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000)


def output_dir(spec: dict, dataset: dict) -> str:
    """--trainer-output, and a folder per kind inside it when each kind trains from its own config."""
    return spec["output_dir"] if len(spec["datasets"]) == 1 else f"{spec['output_dir'].rstrip('/')}/{dataset['kind']}"


def config_name(spec: dict, kind: str) -> str:
    """trl_sft.yaml for a run of one kind; trl_sft.chat.yaml and trl_sft.text.yaml for a run of both."""
    name = CONFIG_NAMES[spec["trainer"]]
    return name if len(spec["datasets"]) == 1 else name.replace(".yaml", f".{kind}.yaml")


def write_emitted(spec: dict, out_dir: str | Path) -> list[Path]:
    """The trainer's config, one per kind of record where the trainer takes one kind per dataset (trl,
    LLaMA-Factory), with the files its loader reads (a datasets README.md for trl, dataset_info.json for
    LLaMA-Factory), and prepare-plan.json; returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    trainer = spec["trainer"]
    written = []
    if trainer == "axolotl":
        written.append(out / CONFIG_NAMES[trainer])
        atomic_write_text(written[-1], header(spec, spec["datasets"]) + _yaml(axolotl_config(spec)))
    elif trainer == "trl":
        sources, readme = trl_sources(spec, out)
        if readme:
            (out / TRL_DATASETS).mkdir(exist_ok=True)
            atomic_write_text(out / TRL_DATASETS / "README.md", readme)
            written.append(out / TRL_DATASETS / "README.md")
        for d in spec["datasets"]:
            written.append(out / config_name(spec, d["kind"]))
            atomic_write_text(written[-1], header(spec, [d]) + _trl_extra_header(spec, out)
                              + _yaml(trl_config(spec, d, sources[d["kind"]])))
    else:
        copies = write_llamafactory_copies(spec["datasets"], out)
        info = out / "dataset_info.json"
        existing = json.loads(info.read_text()) if info.is_file() else {}
        atomic_write_text(info, json.dumps({**existing, **llamafactory_dataset_info(spec, copies)}, indent=2) + "\n")
        written += [info, *map(Path, copies.values())]
        for d in spec["datasets"]:
            written.append(out / config_name(spec, d["kind"]))
            atomic_write_text(written[-1], header(spec, [d]) + _yaml(llamafactory_config(spec, d, str(out.resolve()))))
    plan = out / PLAN_NAME
    atomic_write_text(plan, json.dumps(spec, indent=2) + "\n")
    return [*written, plan]


def check_emit_arguments(args) -> None:
    """The --emit flags that need no data: `prepare precheck` checks them before it reads any."""
    if not args.shards:
        raise EmitError("--emit needs --shards RUN (the run directory or s3://bucket/prefix of `prepare run`)")
    parse_global_batch(args.global_batch)


def plan_at_run_length(cfg, args):
    """The precheck's config planned at the length the run cut its shards at, with its overflow policy: the
    trainer runs at that length, so the memory and time of the plan are for it. Keeps the run read in
    args.emit_run for emit_from_precheck."""
    args.emit_run = read_shards(args.shards)
    run = args.emit_run
    lengths = {"max_seq_len": run["max_seq_len"]} if run["max_seq_len"] else {}
    if run["overflow"]:
        lengths["overflow"] = run["overflow"]
    return merge_config(cfg, {"lengths": lengths}) if lengths else cfg


def emit_from_precheck(args, cfg, result: dict) -> list[Path]:
    """The --emit step of `prepare precheck`, after the plan is made."""
    check_emit_arguments(args)
    shards = getattr(args, "emit_run", None) or read_shards(args.shards)
    # shards that mix chat and text records: each kind written apart beside the config (LLaMA-Factory's own
    # copies are written apart by kind anyway)
    if shards["kinds"] and args.emit != "llamafactory":
        shards["kinds"] = split_kind_copies(shards, args.emit_out)
    spec = build_spec(cfg, result, trainer=args.emit, shards=shards, global_batch=args.global_batch,
                      checkpoint_minutes=args.checkpoint_minutes, base_model=args.base_model,
                      trainer_output=args.trainer_output)
    return write_emitted(spec, args.emit_out)
