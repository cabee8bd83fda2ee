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
LLAMAFACTORY_ATTN = {"sdpa": "sdpa", "eager": "disabled"}


from pipeline.core.config import ConfigError
from pipeline.core.files import atomic_write_text
from pipeline.core.models import load_model_spec
from pipeline.core.resources import resource
from pipeline.core.s3 import read_json
from pipeline.plan.setup import framework_preset


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
    """The manifest of a `prepare run` output (local run directory or s3://bucket/prefix): run id and shard
    locations per split, as the trainer will open them."""
    if where.startswith("s3://"):
        prefix = where[:-len("/manifest.json")] if where.endswith("/manifest.json") else where.rstrip("/")
        try:
            manifest = read_json(prefix + "/manifest.json")
        except OSError:
            raise EmitError(f"no manifest at {prefix}/manifest.json (run `prepare run ... --s3 {prefix}` first)") \
                from None
        root = prefix
    else:
        root_path = Path(where)
        if root_path.name == "manifest.json":
            root_path = root_path.parent
        if not (root_path / "manifest.json").is_file():
            raise EmitError(f"no manifest.json in {where} (the output of a finished `prepare run`)")
        manifest = json.loads((root_path / "manifest.json").read_text())
        root = str(root_path.resolve())
    splits = {"train": [], "validation": []}
    for shard in manifest["shards"]:
        splits[shard["split"]].append(f"{root}/{shard['path']}")
    if not splits["train"]:
        raise EmitError(f"the run at {where} has no train shards")
    return {"run_id": manifest["run_id"], "root": root, "s3": root.startswith("s3://"), **splits,
            "rows": {s: sum(x["rows"] for x in manifest["shards"] if x["split"] == s) for s in splits},
            "max_seq_len": manifest.get("max_seq_len"), "tokenizer": manifest.get("tokenizer")}


def _chat_share(shards: dict, tokens: dict) -> float:
    """Share of chat/instruction records: from the shards' `kind` column when they are local, else from the
    precheck (text records train on every token, chats only on the answers)."""
    if not shards["s3"]:
        import pyarrow.parquet as pq

        kinds = [k for p in shards["train"] for k in pq.read_table(p, columns=["kind"]).column("kind").to_pylist()]
        return sum(k != "text" for k in kinds) / len(kinds) if kinds else 0.0
    group = tokens["groups"][tokens.get("basis", "all")]
    return 1.0 if group["trainable"]["total"] < group["tokens"]["total"] else 0.0


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
    plan = result["plan"]
    rec = plan["recommendation"]
    if rec is None:
        raise EmitError("no GPU in the catalog fits this job: nothing to emit (see the hints of the plan)")
    if checkpoint_minutes <= 0:
        raise EmitError("--checkpoint-minutes must be > 0")
    s = plan["memory"]["settings"]
    preset = framework_preset(s.get("framework", "hf"))
    seq = int(result["max_seq_len"])
    packing = result["tokens"]["packing"]
    amount, unit = parse_global_batch(global_batch)
    global_seqs = max(1, round(amount / seq)) if unit == "tokens" else amount
    cards = int(rec["count"])
    if global_seqs < cards:
        raise EmitError(f"--global-batch {global_batch} is smaller than one sequence per card ({cards} cards)")
    micro, accum = _micro_batch(int(rec["micro_batch"]), cards, global_seqs)
    effective = micro * accum * cards
    epochs = float(plan["epochs"])
    steps_per_epoch = math.ceil(int(packing["sequences_per_epoch"]) / effective)
    total_steps = max(1, math.ceil(steps_per_epoch * epochs))
    tps = _tokens_per_second(plan, rec)
    # from the throughput, not from the plan's hours, which are rounded to 0.01 h
    step_seconds = (int(packing["tokens_per_epoch"]) * epochs / tps if tps else rec["hours"] * 3600) / total_steps
    save_steps = max(1, min(total_steps, int(checkpoint_minutes * 60 // max(step_seconds, 1e-9))))
    method = plan["method"]
    peft = method in ("lora", "qlora")
    chat_share = _chat_share(shards, result["tokens"])
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
        "max_length": seq, "overflow": cfg.lengths.overflow,
        "packing": {"enabled": True, "efficiency": packing.get("packing_efficiency"),
                    "sequences_per_epoch": int(packing["sequences_per_epoch"]),
                    "tokens_per_epoch": int(packing["tokens_per_epoch"])},
        "micro_batch": micro, "grad_accum": accum, "cards": cards, "global_batch": effective,
        "global_batch_asked": {"value": amount, "unit": unit},
        "grad_ckpt": bool(s.get("grad_ckpt", True)), "ckpt_mode": preset.ckpt_mode,
        "attn": s.get("attn", "sdpa"), "optimizer": HF_OPTIM[s.get("optimizer", "adamw")],
        "cross_entropy": s.get("cross_entropy"), "bf16": True,
        "assistant_only_loss": chat_share > 0, "chat_share": round(chat_share, 4),
        "epochs": epochs, "learning_rate": 2e-4 if peft else 2e-5,
        "shards": {"root": shards["root"], "s3": shards["s3"], "train": shards["train"],
                   "validation": shards["validation"], "rows": shards["rows"]},
        "eval": bool(shards["validation"]),
        "save_steps": save_steps, "eval_steps": save_steps, "checkpoint_minutes": checkpoint_minutes,
        "steps_per_epoch": steps_per_epoch, "total_steps": total_steps, "step_seconds": step_seconds,
        "output_dir": trainer_output,
        "estimate": {"gpu": rec["gpu"], "count": cards, "micro_batch_fit": rec["micro_batch"],
                     "hours": rec["hours"], "cost_usd": rec["cost_usd"], "cost_text": rec["cost_text"],
                     "price_per_hour": rec["price_per_hour"], "vram_need_gib": rec["vram_need_gib"],
                     "tokens_per_second": tps,
                     "peak_allocated_gib_mb1": plan["memory"]["peak_allocated_gib"]},
    }


def _tokens_per_second(plan: dict, rec: dict) -> float | None:
    for c in plan["candidates"]:
        if c["gpu"] == rec["gpu"] and c["count"] == rec["count"]:
            return c.get("tokens_per_second")
    return None


def header(spec: dict) -> str:
    e = spec["estimate"]
    lora = spec["lora"]
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
        f"{spec['total_steps']} optimizer steps of ~{spec['step_seconds']:.1f} s (estimated); a checkpoint every "
        f"{spec['save_steps']} steps loses at most {spec['checkpoint_minutes']:g} min of work",
        f"estimator preset {spec['framework']}: loss {spec['cross_entropy']}, adapters {spec['adapter_dtype']}, "
        f"optimizer {spec['optimizer']}, checkpointing {spec['ckpt_mode'] if spec['grad_ckpt'] else 'off'}",
        f"packing: simulated efficiency {100 * (spec['packing']['efficiency'] or 0):.1f}% "
        f"({spec['packing']['sequences_per_epoch']} packed sequences per epoch); overflow policy of the run: "
        f"{spec['overflow']}",
    ]
    if lora:
        lines.append(f"LoRA r {lora['r']}, dropout {lora['dropout']} as estimated; alpha {lora['alpha']} = 2 x r "
                     f"(alpha does not change memory or time)")
    if spec["assistant_only_loss"]:
        lines.append(f"loss on assistant turns only ({100 * spec['chat_share']:.0f}% of the records are chats)"
                     + ("; the plain-text records cannot be masked and a trainer may refuse the mix"
                        if spec["chat_share"] < 1 else ""))
    if spec["shards"]["s3"]:
        lines.append(f"shards on S3: {spec['shards']['root']} (manifest.json lists them)")
    lines.append("upload checkpoints: `prepare checkpoints sync OUTPUT_DIR s3://bucket/prefix`, or the callback "
                 "pipeline.train.S3Checkpoints")
    return "".join(f"# {line}\n" for line in lines)


# ------------------------------------------------------------------------------------------------- trl

def trl_config(spec: dict) -> dict:
    """Keys of trl's `trl sft --config` (TrlParser over ScriptArguments, SFTConfig, ModelConfig)."""
    sh = spec["shards"]
    out: dict = {"model_name_or_path": spec["model"], "dtype": "bfloat16", "attn_implementation": spec["attn"]}
    if spec["lora"]:
        out |= {"use_peft": True, "lora_r": spec["lora"]["r"], "lora_alpha": spec["lora"]["alpha"],
                "lora_dropout": spec["lora"]["dropout"], "lora_target_modules": spec["lora"]["targets"]}
    if spec["quantization"]:
        out |= {"load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
                "use_bnb_nested_quant": spec["quantization"]["double_quant"]}
    # trl's script loads `dataset_name` with datasets.load_dataset: the run directory holds train/ and
    # validation/, which it takes as the two splits. S3 shards are synced to a local folder first.
    out |= {"dataset_name": sh["root"] if not sh["s3"] else _local_name(sh["root"]),
            "dataset_train_split": "train", "dataset_test_split": "validation",
            "output_dir": spec["output_dir"], "max_length": spec["max_length"],
            "packing": True, "packing_strategy": "bfd_split" if spec["overflow"] == "split" else "bfd",
            "truncation_mode": "keep_start",
            "per_device_train_batch_size": spec["micro_batch"], "per_device_eval_batch_size": spec["micro_batch"],
            "gradient_accumulation_steps": spec["grad_accum"],
            # transformers 5.24's names (gradient_checkpointing* are its deprecated aliases)
            "activation_checkpointing": spec["grad_ckpt"],
            "activation_checkpointing_kwargs": {"use_reentrant": spec["ckpt_mode"] == "reentrant"},
            "optim": spec["optimizer"], "learning_rate": spec["learning_rate"], "bf16": spec["bf16"],
            "assistant_only_loss": spec["assistant_only_loss"], "num_train_epochs": spec["epochs"],
            "logging_steps": max(1, min(10, spec["save_steps"])), "save_strategy": "steps",
            "save_steps": spec["save_steps"], "report_to": "none"}
    if spec["eval"]:
        out |= {"eval_strategy": "steps", "eval_steps": spec["eval_steps"], "load_best_model_at_end": True,
                "metric_for_best_model": "eval_loss", "greater_is_better": False}
    else:
        out["eval_strategy"] = "no"
    return out


def _local_name(root: str) -> str:
    return "data/" + root.rstrip("/").rsplit("/", 1)[-1]


def _trl_extra_header(spec: dict) -> str:
    sh = spec["shards"]
    if not sh["s3"]:
        return ""
    return (f"# trl reads local shards: first `aws s3 sync {sh['root']}/ {_local_name(sh['root'])}/ --exclude '*' "
            f"--include 'train/*' --include 'validation/*' --include manifest.json`\n")


# ------------------------------------------------------------------------------------------------- axolotl

def axolotl_config(spec: dict) -> dict:
    """Keys of axolotl's YAML (AxolotlInputConfig)."""
    sh = spec["shards"]

    def dataset(paths: list[str], split: str) -> dict:
        ds = {"path": paths[0] if len(paths) == 1 else sh["root"] + f"/{split}", "ds_type": "parquet",
              "data_files": paths, "split": "train"}
        if spec["assistant_only_loss"]:
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
    out |= {"chat_template": "tokenizer_default", "datasets": [dataset(sh["train"], "train")]}
    if spec["eval"]:
        out["test_datasets"] = [dataset(sh["validation"], "validation")]
    out |= {"train_on_inputs": not spec["assistant_only_loss"],
            "sequence_len": spec["max_length"], "sample_packing": True, "eval_sample_packing": spec["eval"],
            "pad_to_sequence_len": True,
            "excess_length_strategy": "truncate" if spec["overflow"].startswith("truncate") else "drop",
            "micro_batch_size": spec["micro_batch"], "gradient_accumulation_steps": spec["grad_accum"],
            "num_epochs": spec["epochs"], "gradient_checkpointing": spec["grad_ckpt"],
            "gradient_checkpointing_kwargs": {"use_reentrant": spec["ckpt_mode"] == "reentrant"},
            "attn_implementation": spec["attn"], "optimizer": spec["optimizer"],
            "learning_rate": spec["learning_rate"], "bf16": spec["bf16"],
            "output_dir": spec["output_dir"], "save_strategy": "steps", "save_steps": spec["save_steps"],
            "logging_steps": max(1, min(10, spec["save_steps"]))}
    if spec["eval"]:
        out |= {"eval_strategy": "steps", "eval_steps": spec["eval_steps"], "load_best_model_at_end": True,
                "metric_for_best_model": "eval_loss", "greater_is_better": False}
    return out


# ------------------------------------------------------------------------------------------------- LLaMA-Factory

LF_TRAIN, LF_VALIDATION = "prepare_train", "prepare_validation"


def llamafactory_dataset_info(spec: dict) -> dict:
    """The dataset_info.json entries of the shards (openai formatting: the records' messages as they are)."""
    sh = spec["shards"]
    key = "cloud_file_name" if sh["s3"] else "file_name"

    def entry(split: str) -> dict:
        e = {key: f"{sh['root']}/{split}", "formatting": "openai" if spec["assistant_only_loss"] else "alpaca"}
        if spec["assistant_only_loss"]:
            e |= {"columns": {"messages": "messages", "tools": "tools"},
                  "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                           "assistant_tag": "assistant", "observation_tag": "tool", "function_tag": "function_call",
                           "system_tag": "system"}}
        else:
            e["columns"] = {"prompt": "text"}
        return e

    info = {LF_TRAIN: entry("train")}
    if spec["eval"]:
        info[LF_VALIDATION] = entry("validation")
    return info


def llamafactory_config(spec: dict, dataset_dir: str) -> dict:
    """Keys of LLaMA-Factory's `llamafactory-cli train` YAML (its HfArgumentParser over model, data, training
    and finetuning arguments)."""
    lora = spec["lora"]
    out: dict = {"model_name_or_path": spec["model"], "stage": "sft", "do_train": True,
                 "finetuning_type": "lora" if lora else "full"}
    if lora:
        out |= {"lora_rank": lora["r"], "lora_alpha": lora["alpha"], "lora_dropout": lora["dropout"],
                "lora_target": ",".join(lora["targets"]) or "all"}
    if spec["quantization"]:
        out |= {"quantization_bit": 4, "quantization_method": "bnb", "quantization_type": "nf4",
                "double_quantization": spec["quantization"]["double_quant"]}
    out |= {"dataset": LF_TRAIN, "dataset_dir": dataset_dir, "cutoff_len": spec["max_length"],
            "packing": True, "neat_packing": True, "train_on_prompt": not spec["assistant_only_loss"],
            "flash_attn": LLAMAFACTORY_ATTN[spec["attn"]],
            "disable_gradient_checkpointing": not spec["grad_ckpt"],
            "per_device_train_batch_size": spec["micro_batch"], "gradient_accumulation_steps": spec["grad_accum"],
            "num_train_epochs": spec["epochs"], "learning_rate": spec["learning_rate"], "optim": spec["optimizer"],
            "bf16": spec["bf16"], "output_dir": spec["output_dir"], "logging_steps": max(1, min(10, spec["save_steps"])),
            "save_strategy": "steps", "save_steps": spec["save_steps"], "report_to": "none"}
    if spec["eval"]:
        out |= {"eval_dataset": LF_VALIDATION, "per_device_eval_batch_size": spec["micro_batch"],
                "eval_strategy": "steps", "eval_steps": spec["eval_steps"], "load_best_model_at_end": True,
                "metric_for_best_model": "eval_loss", "greater_is_better": False}
    return out


# ------------------------------------------------------------------------------------------------- writing

def _yaml(data: dict) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000)


def write_emitted(spec: dict, out_dir: str | Path) -> list[Path]:
    """The trainer's config (+ dataset_info.json for LLaMA-Factory) and prepare-plan.json; returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    trainer = spec["trainer"]
    head = header(spec)
    written = []
    if trainer == "trl":
        body = _trl_extra_header(spec) + _yaml(trl_config(spec))
    elif trainer == "axolotl":
        body = _yaml(axolotl_config(spec))
    else:
        body = _yaml(llamafactory_config(spec, str(out.resolve())))
        info = out / "dataset_info.json"
        existing = json.loads(info.read_text()) if info.is_file() else {}
        atomic_write_text(info, json.dumps({**existing, **llamafactory_dataset_info(spec)}, indent=2) + "\n")
        written.append(info)
    path = out / CONFIG_NAMES[trainer]
    atomic_write_text(path, head + body)
    plan = out / PLAN_NAME
    atomic_write_text(plan, json.dumps(spec, indent=2) + "\n")
    return [path, *written, plan]


def check_emit_arguments(args) -> None:
    """The --emit flags that need no data: `prepare precheck` checks them before it reads any."""
    if not args.shards:
        raise EmitError("--emit needs --shards RUN (the run directory or s3://bucket/prefix of `prepare run`)")
    parse_global_batch(args.global_batch)


def emit_from_precheck(args, cfg, result: dict) -> list[Path]:
    """The --emit step of `prepare precheck`, after the plan is made."""
    check_emit_arguments(args)
    shards = read_shards(args.shards)
    spec = build_spec(cfg, result, trainer=args.emit, shards=shards, global_batch=args.global_batch,
                      checkpoint_minutes=args.checkpoint_minutes, base_model=args.base_model,
                      trainer_output=args.trainer_output)
    return write_emitted(spec, args.emit_out)
