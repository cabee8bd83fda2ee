"""`prepare precheck --emit`: each trainer's config passes that trainer's own parser, and says what was estimated.

trl: TrlParser of `trl sft` (trl 1.16.0, installed by the `train` extra). axolotl 0.19.0 and LLaMA-Factory 0.9.5
pin other transformers/torch/peft/datasets versions than this project, so they are not installed: `make test`
unpacks their wheels (no dependencies) into .venv/train-parsers and their own parsers run from there."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, SAMPLE_DATA

CHATS = [SAMPLE_DATA / "support_en_openai.jsonl", SAMPLE_DATA / "support_ru_sharegpt.jsonl"]
PARSERS = ROOT / ".venv" / "train-parsers" / "src"  # beside the stamp: `make clean` keeps it
FIXTURES = ROOT / "tests" / "fixtures" / "train"
S3FS_LIB = ROOT / ".venv" / "s3fs-lib"  # s3fs and what it pins, installed apart by `make test`


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    from pipeline.cli import main

    run = tmp_path_factory.mktemp("emit") / "run"
    assert main(["run", *map(str, CHATS), "--out", str(run), "--no-pii", "--no-estimate"]) == 0
    return run


def emit(tmp_path, run, trainer, *extra, shards=None):
    from pipeline.cli import main

    out = tmp_path / trainer
    code = main(["precheck", *map(str, CHATS), "--model", "llama-3.1-8b", "--method", "qlora", "--emit", trainer,
                 "--shards", str(shards or run), "--out", str(out), *extra])
    return code, out


def uploaded(run_dir, bucket, name: str) -> str:
    """The run's shards uploaded under s3://bucket/datasets/<name>; that prefix."""
    from pipeline.core.s3 import upload_run

    manifest = json.loads((run_dir / "manifest.json").read_text())
    uri = f"s3://{bucket}/datasets/{name}"
    upload_run(run_dir, uri, [s["path"] for s in manifest["shards"]])
    return uri


def external(script: str, *args) -> dict:
    """The trainer's own parser on one config: its result."""
    return external_each(script, *args)[-1]


def external_each(script: str, *args) -> list[dict]:
    """One process for several configs (LLaMA-Factory's imports take seconds): a result per config."""
    if not (PARSERS / "axolotl").is_dir():
        pytest.fail(f"{PARSERS} is missing: `make test` unpacks the axolotl and LLaMA-Factory wheels there")
    proc = subprocess.run([sys.executable, str(FIXTURES / script), str(PARSERS), *map(str, args)],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.strip().splitlines() if line.startswith("{")]


@pytest.mark.slow  # run_dir is a whole `prepare run`
def test_trl_config_parses_with_trl_and_carries_the_estimate(tmp_path, run_dir, capsys):
    from trl.scripts.sft import make_parser

    code, out = emit(tmp_path, run_dir, "trl", "--global-batch", "32", "--checkpoint-minutes", "30")
    assert code == 0, capsys.readouterr().err
    text = (out / "trl_sft.yaml").read_text()
    plan = json.loads((out / "prepare-plan.json").read_text())
    est = plan["estimate"]
    # the header names the precheck and the estimate it comes from
    assert text.startswith(f"# written by `prepare precheck --emit trl`: precheck {plan['precheck_id']}, data run "
                           f"{json.loads((run_dir / 'manifest.json').read_text())['run_id']}")
    assert f"on {est['gpu']} x{est['count']}: {est['hours']} h, {est['cost_text']}" in text
    cpu = [] if _cuda() else ["--use_cpu", "true"]  # transformers refuses bf16 on a machine without a GPU
    script, sft, model, _ = make_parser().parse_args_and_config(["--config", str(out / "trl_sft.yaml"), *cpu])
    assert (model.model_name_or_path, model.load_in_4bit, model.bnb_4bit_quant_type, model.use_bnb_nested_quant) == \
        ("meta-llama/Llama-3.1-8B", True, "nf4", True)
    assert (model.use_peft, model.lora_r, model.lora_dropout, model.attn_implementation) == (True, 16, 0.05, "sdpa")
    assert model.lora_target_modules == ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    assert (sft.max_length, sft.packing, sft.assistant_only_loss, sft.bf16) == (plan["max_length"], True, True, True)
    # the length the run cut its shards at, and the run's own packing counts (not a precheck's of the raw inputs)
    assert plan["max_length"] == json.loads((run_dir / "manifest.json").read_text())["max_seq_len"]
    packing = json.loads((run_dir / "report.json").read_text())["lengths"]["packing"]
    assert plan["packing"]["sequences_per_epoch"] == packing["sequences_per_epoch"]
    # as trl packs the shards (manifest.json's count), and the time and the GPU are planned for those sequences,
    # not for the precheck's count of the raw inputs (validation split and near duplicates included)
    kinds = json.loads((run_dir / "manifest.json").read_text())["kinds"]
    assert est["sequences_per_epoch"] == plan["packing"]["sequences_per_epoch"] == \
        kinds["chat"]["train"]["packed_sequences"]
    assert sft.per_device_train_batch_size * sft.gradient_accumulation_steps == 32
    assert sft.per_device_train_batch_size <= est["micro_batch_fit"]
    assert sft.activation_checkpointing and sft.activation_checkpointing_kwargs == {"use_reentrant": False}
    assert sft.optim == "adamw_torch_fused" and sft.num_train_epochs == 3.0
    assert (script.dataset_name, script.dataset_train_split, script.dataset_test_split) == \
        (str(run_dir.resolve()), "train", "validation")
    assert (sft.eval_strategy, sft.load_best_model_at_end, sft.metric_for_best_model) == ("steps", True, "eval_loss")
    # no more than 30 minutes of estimated work between checkpoints
    assert sft.save_steps * plan["step_seconds"] <= 30 * 60 and sft.eval_steps == sft.save_steps
    assert plan["framework"] == "hf"
    # unrounded: calibrate divides by it (rounded to 0.1 ms, a small model's step read 0)
    assert plan["step_seconds"] == (plan["packing"]["tokens_per_epoch"] * plan["epochs"]
                                    / est["tokens_per_second"] / plan["total_steps"])


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.slow  # run_dir is a whole `prepare run`
def test_axolotl_config_passes_axolotls_schema(tmp_path, run_dir, bucket, capsys):

    uri = uploaded(run_dir, bucket, "v1")
    code, out = emit(tmp_path, run_dir, "axolotl", "--global-batch", "16", shards=uri)
    assert code == 0, capsys.readouterr().err
    plan = json.loads((out / "prepare-plan.json").read_text())
    assert plan["framework"] == "axolotl"  # estimated with axolotl's preset
    cfg = yaml.safe_load((out / "axolotl.yaml").read_text())
    assert cfg["datasets"][0]["data_files"] == [f"{uri}/train/part-00000.parquet"]
    # the run kept over-long records for the trainer to cut, as the plan counted: axolotl truncates, not drops
    assert (plan["overflow"], cfg["excess_length_strategy"]) == ("keep", "truncate")
    result = external("validate_axolotl.py", out / "axolotl.yaml")
    assert result["unknown"] == []  # every key is a field of axolotl's schema (it ignores unknown keys)
    assert (result["adapter"], result["sequence_len"], result["sample_packing"]) == \
        ("qlora", plan["max_length"], True)
    assert result["micro_batch_size"] == plan["micro_batch"]
    # as estimated: no fused LoRA kernels (axolotl's validator would turn them on), over-long records cut
    assert result["lora_kernels"] == [False] * 4 and result["excess_length_strategy"] == "truncate"


@pytest.mark.slow  # run_dir is a whole `prepare run`
def test_axolotl_reads_the_shards_on_s3_through_s3fs(tmp_path, run_dir, bucket, capsys):
    """What axolotl does with an s3:// dataset path (axolotl/utils/data/shared.py): s3fs.S3FileSystem(anon=False),
    then datasets' loader over the config's data_files with the same storage options; here against the local S3
    server, which s3fs finds through AWS_ENDPOINT_URL. s3fs is not in this project's venv (its aiobotocore pins an
    older botocore than boto3 takes): `make test` installs it apart into S3FS_LIB, which the loader runs with."""
    if not (S3FS_LIB / "s3fs").is_dir():
        pytest.fail(f"{S3FS_LIB} is missing: `make test` installs s3fs there")
    uri = uploaded(run_dir, bucket, "s3fs")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    code, out = emit(tmp_path, run_dir, "axolotl", shards=uri)
    assert code == 0, capsys.readouterr().err
    # the suite keeps datasets off the Hub (HF_HUB_OFFLINE), which also refuses every remote URL; this one is local
    proc = subprocess.run([sys.executable, str(FIXTURES / "load_s3fs.py"), str(S3FS_LIB), str(out / "axolotl.yaml")],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "0", "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = {r["key"]: r for r in map(json.loads, proc.stdout.strip().splitlines())}
    for key, split in (("datasets", "train"), ("test_datasets", "validation")):
        assert all(f.startswith(f"{uri}/{split}/") for f in loaded[key]["files"])
        assert loaded[key]["rows"] == manifest["counts"]["splits"][split]
        assert loaded[key]["role"] in ("system", "user")


@pytest.mark.slow  # run_dir is a whole `prepare run`
def test_llamafactory_config_passes_its_argument_parser(tmp_path, run_dir, capsys):
    code, out = emit(tmp_path, run_dir, "llamafactory")
    assert code == 0, capsys.readouterr().err
    plan = json.loads((out / "prepare-plan.json").read_text())
    assert plan["framework"] == "llamafactory" and plan["lora"]["dropout"] == 0.0  # LLaMA-Factory's default
    info = json.loads((out / "dataset_info.json").read_text())
    assert info["prepare_train"]["file_name"] == f"{out.resolve()}/llamafactory_data/train/chat.jsonl"
    result = external("validate_llamafactory.py", out / "llamafactory.yaml")
    assert result["unknown"] == []
    # LLaMA-Factory takes one off cutoff_len when packing and packs records of up to that into rows one longer:
    # rows of the planned max length
    assert result["cutoff_len"] + 1 == plan["max_length"]
    assert (result["lora_rank"], result["quantization_bit"], result["double_quantization"]) == (16, 4, True)
    assert (result["dataset"], result["eval_dataset"]) == (["prepare_train"], ["prepare_validation"])
    assert result["per_device_train_batch_size"] == plan["micro_batch"]


@pytest.mark.slow  # run_dir is a whole `prepare run`
def test_a_trainer_contradicting_framework_is_one_line(tmp_path, run_dir, capsys):
    code, _ = emit(tmp_path, run_dir, "axolotl", "--framework", "hf")
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["prepare: error: --emit axolotl runs the axolotl stack, but --framework hf was estimated; "
                   "drop --framework (the trainer sets it)"]


@pytest.mark.slow  # run_dir is a whole `prepare run`
def test_emit_without_shards_is_one_line(tmp_path, run_dir, capsys):
    from pipeline.cli import main

    code = main(["precheck", str(CHATS[0]), "--emit", "trl", "--out", str(tmp_path)])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("prepare: error: --emit needs --shards")


@pytest.mark.parametrize("fit,cards,global_seqs,expected", [
    (39, 1, 32, (32, 1)), (8, 1, 32, (8, 4)), (6, 1, 32, (4, 8)), (5, 2, 32, (4, 4)), (7, 1, 33, (7, 5)),  # 33 = 3 x 11 wastes the card: 35, and the header says so
])
def test_micro_batch_reaches_the_global_batch(fit, cards, global_seqs, expected):
    from pipeline.train.emit import _micro_batch

    mb, accum = _micro_batch(fit, cards, global_seqs)
    assert (mb, accum) == expected and mb <= fit


def _dataset(kind: str, train_rows: int, packed: int | None) -> dict:
    counts = {"records": train_rows, "tokens": packed * 900, "tokens_cut": 0, "packed_sequences": packed} \
        if packed is not None else None
    return {"kind": kind, "rows": {"train": train_rows, "validation": 0}, "train_counts": counts}


def test_each_config_gets_the_steps_of_the_kind_it_trains_on():
    from pipeline.train.emit import packed_sequences, plan_steps

    run_packing = {"sequences_per_epoch": 239, "packing_efficiency": 0.92}
    apart = [_dataset("chat", 333, 228), _dataset("text", 42, 20)]
    job = packed_sequences(apart, run_packing, 1024, together=False)
    steps = plan_steps(apart, job, 8, 3.0)
    # trl / LLaMA-Factory: one config per kind, each packed alone; the job is their sum
    assert [(d["steps_per_epoch"], d["total_steps"]) for d in apart] == [(29, 87), (3, 9)]
    assert (job["sequences_per_epoch"], steps["steps_per_epoch"], steps["total_steps"]) == (248, 32, 96)
    assert job["efficiency"] == round(248 * 900 / (248 * 1024), 6)
    # axolotl packs both datasets into one stream: the run's packing of all its records; its multipack
    # sampler drops the last partial batch (239 // 8 = 29 per epoch, where a ceil would say 30)
    together = [_dataset("chat", 333, 228), _dataset("text", 42, 20)]
    job = packed_sequences(together, run_packing, 1024, together=True)
    steps = plan_steps(together, job, 8, 3.0, drop_last=True)
    assert (job["sequences_per_epoch"], steps["steps_per_epoch"], steps["total_steps"]) == (239, 29, 87)
    assert plan_steps(together, job, 8, 2.5, drop_last=True)["total_steps"] == 72  # floor(29 x 2.5)
    # a run older than the manifest's counts: the kinds' share of the run's packing, marked estimated
    old = [_dataset("chat", 300, None), _dataset("text", 100, None)]
    packed_sequences(old, run_packing, 1024, together=False)
    assert [(d["packed_sequences"], d["estimated"]) for d in old] == [(180, True), (60, True)]


def test_llamafactory_text_trains_on_blocks_of_the_max_length():
    """LLaMA-Factory's pt stage cuts the concatenated texts into blocks: tokens // max length sequences, the
    rest untrained; a validation split shorter than one block is not evaluated (LLaMA-Factory stops on it)."""
    from pipeline.train.emit import EmitError, llamafactory_text_blocks

    text = {**_dataset("text", 42, 22), "eval": True}
    text["train_counts"]["tokens"] = 8997
    chat = {**_dataset("chat", 333, 302), "eval": True}
    llamafactory_text_blocks([chat, text], {"text": {"counts": {"validation": {"tokens": 232}}}}, 448)
    assert text["train_counts"]["packed_sequences"] == 20 and text["pt_tokens_dropped"] == 8997 - 20 * 448
    assert (text["eval"], chat["eval"], chat["train_counts"]["packed_sequences"]) == (False, True, 302)
    short = {**_dataset("text", 1, 1), "eval": False}
    short["train_counts"]["tokens"] = 100
    with pytest.raises(EmitError, match="less than one block"):
        llamafactory_text_blocks([short], {}, 448)


def test_global_batch_in_tokens():
    from pipeline.train.emit import parse_global_batch

    assert parse_global_batch("65536t") == (65536, "tokens")
    assert parse_global_batch("32") == (32, "sequences")
    with pytest.raises(ValueError):
        parse_global_batch("0")


MIXED_CONFIG = {"inputs": [str(SAMPLE_DATA)], "write": {"split_by_kind": True}}


@pytest.fixture(scope="module", params=[False, True], ids=["one-shard-set", "split-by-kind"])
def mixed_run(request, tmp_path_factory):
    """sample_data itself: chats, instructions and plain text, in one shard set or in one per kind."""
    from pipeline.cli import main

    folder = tmp_path_factory.mktemp("mixed")
    config = folder / "config.yaml"
    config.write_text(yaml.safe_dump({**MIXED_CONFIG, "write": {"split_by_kind": request.param}}))
    assert main(["run", "--config", str(config), "--out", str(folder / "run"), "--no-pii", "--no-estimate"]) == 0
    return folder / "run"


def _kind_rows(run: Path) -> dict:
    """kind -> split -> rows, read from the shards (a record is text exactly when it has no messages)."""
    import pyarrow.parquet as pq

    rows: dict = {"chat": {"train": 0, "validation": 0}, "text": {"train": 0, "validation": 0}}
    for path in run.glob("*/**/*.parquet"):
        split = path.relative_to(run).parts[0]
        if split not in ("train", "validation"):
            continue
        table = pq.read_table(path)
        text = table.column("messages").null_count if "messages" in table.column_names else table.num_rows
        rows["text"][split] += text
        rows["chat"][split] += table.num_rows - text
    return rows


def _emit_mixed(tmp_path, run, trainer):
    from pipeline.cli import main

    out = tmp_path / trainer
    assert main(["precheck", str(SAMPLE_DATA), "--model", "llama-3.1-8b", "--method", "qlora", "--emit", trainer,
                 "--shards", str(run), "--out", str(out)]) == 0
    return out


@pytest.mark.slow  # mixed_run is a whole `prepare run`
def test_a_mixed_run_gives_trl_one_config_per_kind_on_the_runs_own_splits(tmp_path, mixed_run, capsys):
    from datasets import load_dataset
    from trl.scripts.sft import make_parser

    out = _emit_mixed(tmp_path, mixed_run, "trl")
    assert not (out / "trl_sft.yaml").exists()
    expected = _kind_rows(mixed_run)
    assert all(expected[k]["train"] for k in expected)  # sample_data has both kinds
    cpu = [] if _cuda() else ["--use_cpu", "true"]
    for kind in ("chat", "text"):
        script, sft, _, _ = make_parser().parse_args_and_config(["--config", str(out / f"trl_sft.{kind}.yaml"), *cpu])
        assert sft.assistant_only_loss == (kind == "chat") and sft.output_dir == f"output/{kind}"
        # what trl's script loads: the kind's records only, and the run's validation split as the eval set
        data = load_dataset(script.dataset_name, name=script.dataset_config)
        assert {s: len(data[s]) for s in data} == expected[kind]
        assert set(data["train"]["kind"]) <= ({"text"} if kind == "text" else {"chat", "instruction"})
        assert sft.eval_strategy == "steps" and script.dataset_test_split == "validation"


@pytest.mark.slow  # mixed_run is a whole `prepare run`
def test_a_mixed_run_on_s3_gives_trl_one_config_per_kind_with_its_own_steps(tmp_path, mixed_run, bucket, capsys):
    """Also a run whose one shard set mixes the kinds: the manifest's per-kind counts tell them apart (the
    records are then written apart beside the configs, read from S3), and each config states the steps of its
    own kind, from the packed sequences the manifest counted as trl packs them."""
    import math

    from datasets import load_dataset
    from trl.scripts.sft import make_parser

    from pipeline.core.s3 import upload_run

    manifest = json.loads((mixed_run / "manifest.json").read_text())
    split_by_kind = "kind" in manifest["shards"][0]
    uri = f"s3://{bucket}/datasets/mixed-{'apart' if split_by_kind else 'one-set'}"
    upload_run(mixed_run, uri, [s["path"] for s in manifest["shards"]])
    out = _emit_mixed(tmp_path, uri, "trl")
    assert not (out / "trl_sft.yaml").exists()
    plan = json.loads((out / "prepare-plan.json").read_text())
    expected = _kind_rows(mixed_run)
    for d in plan["datasets"]:
        kind = d["kind"]
        config = out / f"trl_sft.{kind}.yaml"
        text = config.read_text()
        packed = manifest["kinds"][kind]["train"]["packed_sequences"]
        per_epoch = math.ceil(packed / plan["global_batch"])
        assert (d["packed_sequences"], d["steps_per_epoch"], d["estimated"]) == (packed, per_epoch, False)
        assert f"# {d['total_steps']} optimizer steps of ~" in text and f"for its {kind} records: {per_epoch} per " \
            f"epoch x 3 epochs" in text and f"# packing: {packed} packed sequences per epoch" in text
        # one shard set: the kind's records written apart beside the config; kinds apart on S3: synced first
        assert ("aws s3 sync" in text) == split_by_kind
        if split_by_kind:
            continue
        script, sft, _, _ = make_parser().parse_args_and_config(["--config", str(config), "--use_cpu", "true"])
        assert sft.save_steps <= d["total_steps"] and sft.assistant_only_loss == (kind == "chat")
        data = load_dataset(script.dataset_name, name=script.dataset_config)
        assert {s: len(data[s]) for s in data} == expected[kind]
        readme = (out / "trl_datasets" / "README.md").read_text()
        assert f"{out.resolve()}/data/train/{kind}.parquet" in readme and "s3://" not in readme
    assert plan["total_steps"] == sum(d["total_steps"] for d in plan["datasets"])
    assert plan["packing"]["sequences_per_epoch"] == sum(k["train"]["packed_sequences"]
                                                         for k in manifest["kinds"].values())


@pytest.mark.slow  # mixed_run is a whole `prepare run`
def test_a_mixed_run_gives_axolotl_a_dataset_per_kind(tmp_path, mixed_run, capsys):
    out = _emit_mixed(tmp_path, mixed_run, "axolotl")
    cfg = yaml.safe_load((out / "axolotl.yaml").read_text())
    assert [d["type"] for d in cfg["datasets"]] == ["chat_template", "completion"]
    assert [d["type"] for d in cfg["test_datasets"]] == ["chat_template", "completion"]
    result = external("validate_axolotl.py", out / "axolotl.yaml")
    assert result["unknown"] == []


@pytest.mark.slow  # mixed_run is a whole `prepare run`
def test_a_mixed_run_gives_llamafactory_one_config_per_kind(tmp_path, mixed_run, capsys):
    out = _emit_mixed(tmp_path, mixed_run, "llamafactory")
    info = json.loads((out / "dataset_info.json").read_text())
    plan = json.loads((out / "prepare-plan.json").read_text())
    text = next(d for d in plan["datasets"] if d["kind"] == "text")
    # sample_data's one text validation record fills no block of the pt stage: that config does not evaluate
    assert not text["eval"] and "fill no block" in text["eval_note"]
    assert set(info) == {"prepare_chat_train", "prepare_chat_validation", "prepare_text_train"}
    assert info["prepare_text_train"]["columns"] == {"prompt": "text"}
    expected = _kind_rows(mixed_run)
    results = external_each("validate_llamafactory.py", *(out / f"llamafactory.{k}.yaml" for k in ("chat", "text")))
    for kind, result in zip(("chat", "text"), results, strict=True):
        cfg = yaml.safe_load((out / f"llamafactory.{kind}.yaml").read_text())
        # chats in the sft stage, masked to the answers; text in the pt stage (sft drops a record without answer)
        assert cfg["stage"] == ("sft" if kind == "chat" else "pt")
        assert cfg.get("train_on_prompt") is (False if kind == "chat" else None)
        assert result["unknown"] == []
        names = ([f"prepare_{kind}_train"], [f"prepare_{kind}_validation"] if kind == "chat" else None)
        assert (result["dataset"], result["eval_dataset"]) == names
        # sft packs into rows of cutoff_len + 1, pt cuts blocks of cutoff_len: both the planned max length
        assert result["cutoff_len"] + (kind == "chat") == plan["max_length"]
        for split in ("train", "validation"):  # the JSON Lines copy holds the kind's records of the split
            lines = (out / "llamafactory_data" / split / f"{kind}.jsonl").read_text().splitlines()
            assert len(lines) == expected[kind][split]
    # LLaMA-Factory's own converter takes every row, and adds nothing to a system prompt (its openai one would)
    for name, entry in info.items():
        rows = [json.loads(line) for line in Path(entry["file_name"]).read_text().splitlines()]
        converted = external("convert_llamafactory.py", out / "dataset_info.json", name)
        assert (converted["rows"], converted["broken"]) == (len(rows), 0)
        if "_chat_" in name:
            assert converted["systems"] == [r["messages"][0]["content"] if r["messages"][0]["role"] == "system"
                                            else "" for r in rows]
            assert all(roles[-1] in ("assistant", "function") for roles in converted["roles"])


@pytest.mark.slow  # run_dir is a whole `prepare run`
def test_llamafactory_reads_a_copy_of_the_s3_shards_written_beside_its_config(tmp_path, run_dir, bucket, capsys):
    """LLaMA-Factory's datasets<=4.0.0 cannot read the shards' JSON columns and its cloud reader takes only
    .json/.jsonl: the precheck reads the shards from S3 and writes LLaMA-Factory's records beside the config
    as JSON Lines, which datasets' json builder (what LLaMA-Factory uses for .jsonl) loads; no download step."""
    from datasets import load_dataset

    uri = uploaded(run_dir, bucket, "lf")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    code, out = emit(tmp_path, run_dir, "llamafactory", shards=uri)
    assert code == 0, capsys.readouterr().err
    assert "aws s3 sync" not in (out / "llamafactory.yaml").read_text()
    info = json.loads((out / "dataset_info.json").read_text())
    for split in ("train", "validation"):
        data = load_dataset("json", data_files=info[f"prepare_{split}"]["file_name"], split="train")
        assert len(data) == manifest["counts"]["splits"][split]
        assert {m["role"] for row in data["messages"] for m in row} <= {"system", "user", "assistant", "tool",
                                                                         "function_call"}
    assert external("validate_llamafactory.py", out / "llamafactory.yaml")["unknown"] == []


def test_llamafactory_rows_are_in_the_form_its_sharegpt_converter_reads():
    """Tool calls become a function_call turn holding the called functions, the results of one call turn one
    tool turn (sharegpt wants the turns to alternate), tools one JSON text, and a bare parameter map the object
    schema its tool formatter reads (parameters.properties)."""
    from pipeline.train.llamafactory_data import chat_row

    call = {"type": "function", "id": "c1", "function": {"name": "weather", "arguments": {"city": "Oslo"}}}
    record = {"id": "r1", "tools": [{"type": "function", "function": {"name": "weather",
                                                                       "parameters": {"city": {"type": "string"}}}}],
              "messages": [{"role": "user", "content": "Weather in Oslo?"},
                           {"role": "assistant", "content": "", "tool_calls": [call]},
                           {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
                           {"role": "assistant", "content": "Sunny."}]}
    row = chat_row(record)
    assert row["messages"] == [{"role": "user", "content": "Weather in Oslo?"},
                               {"role": "function_call", "content": json.dumps([call["function"]])},
                               {"role": "tool", "content": "sunny"}, {"role": "assistant", "content": "Sunny."}]
    assert json.loads(row["tools"])[0]["function"]["parameters"] == \
        {"type": "object", "properties": {"city": {"type": "string"}}}
    assert chat_row({**record, "tools": None})["tools"] == ""
    two = {**record, "messages": [*record["messages"][:3], {"role": "tool", "content": "windy"},
                                  record["messages"][3]]}
    assert [m["role"] for m in chat_row(two)["messages"]] == ["user", "function_call", "tool", "assistant"]
    assert chat_row(two)["messages"][2]["content"] == "sunny\n</tool_response>\n<tool_response>\nwindy"


@pytest.mark.slow  # run_dir is a whole `prepare run`
def test_the_attention_kernel_the_plan_timed_is_the_one_each_trainer_gets(tmp_path, run_dir, capsys):
    """`--attn fa2` is timed as FlashAttention-2 (plan.time_model); the emitted configs asked for sdpa."""
    from trl.scripts.sft import make_parser

    code, out = emit(tmp_path, run_dir, "trl", "--attn", "fa2")
    assert code == 0, capsys.readouterr().err
    assert json.loads((out / "prepare-plan.json").read_text())["attn"] == "fa2"
    cpu = [] if _cuda() else ["--use_cpu", "true"]
    _, _, model, _ = make_parser().parse_args_and_config(["--config", str(out / "trl_sft.yaml"), *cpu])
    assert model.attn_implementation == "flash_attention_2"
    code, out = emit(tmp_path, run_dir, "llamafactory", "--attn", "fa2")
    assert code == 0, capsys.readouterr().err
    assert yaml.safe_load((out / "llamafactory.yaml").read_text())["flash_attn"] == "fa2"
    assert external("validate_llamafactory.py", out / "llamafactory.yaml")["unknown"] == []


def test_a_version_is_read_with_each_shard_at_its_base(tmp_path):
    """A version's earlier shards live at their `base` under the names of the new ones: each is read there,
    and the packing is the whole version's (report.json `version`), not the new records' alone."""
    from pipeline.train.rundata import read_run

    shard = {"path": "train/part-00000.parquet", "split": "train", "rows": 1, "bytes": 1, "sha256": "0" * 64}
    manifest = {"run_id": "v2", "previous": {"run_id": "v1", "location": "/data/v1"},
                "kinds": {"chat": {"train": {"records": 2}}},
                "shards": [{**shard, "base": "/data/v1"}, shard]}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    report = {"lengths": {"packing": {"sequences_per_epoch": 1}},
              "version": {"packing": {"after": {"sequences_per_epoch": 2}}}}
    (tmp_path / "report.json").write_text(json.dumps(report))
    run = read_run(str(tmp_path))
    here = f"{tmp_path.resolve()}/train/part-00000.parquet"
    assert run["train"] == ["/data/v1/train/part-00000.parquet", here]
    assert run["bases"] == ["/data/v1", str(tmp_path.resolve())]
    assert run["kinds"]["chat"]["train"] == run["train"] and run["kinds"]["chat"]["rows"]["train"] == 2
    assert run["packing"] == {"sequences_per_epoch": 2}


def test_shards_of_two_s3_bases_sync_to_one_folder_each():
    """train/part-00000.parquet of two prefixes of the same last name: two local folders, two sync lines."""
    from pipeline.train.emit import _sync_header, by_base, local_names, local_path

    a, b = "s3://one/v1", "s3://two/v1"
    paths = [f"{a}/train/part-00000.parquet", f"{b}/train/part-00000.parquet"]
    spec = {"shards": {"root": b, "bases": [a, b]},
            "datasets": [{"kind": "chat", "train": paths, "validation": []}]}
    names = local_names(spec)
    assert len(set(names.values())) == 2 and all(n.startswith("data/v1-") for n in names.values())
    local = [local_path(spec, Path("/cfg"), p) for p in paths]
    assert len(set(local)) == 2 and all(p.endswith("/train/part-00000.parquet") for p in local)
    assert by_base(spec, paths) == [[paths[0]], [paths[1]]]
    header = _sync_header(spec, "trl", Path("/cfg"))
    assert header.count("aws s3 sync") == 2 and f"sync {a}/ {Path('/cfg').resolve()}/{names[a]}/" in header


@pytest.fixture(scope="module")
def version_dir(tmp_path_factory):
    """A version (--append-to) of a run of the English chats, adding the Russian ones: both write
    train/part-00000.parquet."""
    from pipeline.cli import main

    folder = tmp_path_factory.mktemp("version")
    assert main(["run", str(CHATS[0]), "--out", str(folder / "v1"), "--no-pii", "--no-estimate"]) == 0
    assert main(["run", str(CHATS[1]), "--out", str(folder / "v2"), "--no-pii", "--no-estimate",
                 "--append-to", str(folder / "v1")]) == 0
    return folder / "v2"


def _version_shards(version: Path) -> dict[str, list[str]]:
    manifest = json.loads((version / "manifest.json").read_text())
    return {split: [f"{s.get('base') or version.resolve()}/{s['path']}" for s in manifest["shards"]
                    if s["split"] == split] for split in ("train", "validation")}


@pytest.mark.slow  # version_dir is two `prepare run`s
@pytest.mark.parametrize("trainer", ["trl", "axolotl", "llamafactory"])
def test_a_version_trains_on_every_shard_once(tmp_path, version_dir, trainer, capsys):
    from pipeline.train.emit import CONFIG_NAMES

    shards = _version_shards(version_dir)
    assert len(shards["train"]) >= 2 and len({Path(p).name for p in shards["train"]}) < len(shards["train"])
    code, out = emit(tmp_path, version_dir, trainer)
    assert code == 0, capsys.readouterr().err
    plan = json.loads((out / "prepare-plan.json").read_text())
    manifest = json.loads((version_dir / "manifest.json").read_text())
    assert [d["rows"]["train"] for d in plan["datasets"]] == [manifest["kinds"]["chat"]["train"]["records"]]
    assert plan["datasets"][0]["packed_sequences"] == manifest["kinds"]["chat"]["train"]["packed_sequences"]
    if trainer == "trl":
        files = yaml.safe_load((out / "trl_datasets" / "README.md").read_text().split("---")[1])["configs"][0]
        read = {f["split"]: f["path"] for f in files["data_files"]}
    elif trainer == "axolotl":
        cfg = yaml.safe_load((out / CONFIG_NAMES[trainer]).read_text())
        read = {"train": [p for d in cfg["datasets"] for p in d["data_files"]],
                "validation": [p for d in cfg["test_datasets"] for p in d["data_files"]]}
        assert external("validate_axolotl.py", out / "axolotl.yaml")["unknown"] == []
    else:  # one JSON Lines copy per split, holding the records of every shard once, in the version's order
        info = json.loads((out / "dataset_info.json").read_text())
        cfg = yaml.safe_load((out / CONFIG_NAMES[trainer]).read_text())
        assert external("validate_llamafactory.py", out / CONFIG_NAMES[trainer])["unknown"] == []
        copied = {split: _jsonl_ids(info[cfg[key]]["file_name"])
                  for split, key in (("train", "dataset"), ("validation", "eval_dataset"))}
        assert copied == {split: _shard_ids(paths) for split, paths in shards.items()}
        return
    assert read == shards  # every shard once, none twice, each at its base


def _jsonl_ids(path: str) -> list[str]:
    return [json.loads(line)["id"] for line in Path(path).read_text().splitlines()]


def _shard_ids(paths: list[str]) -> list[str]:
    import pyarrow.parquet as pq

    return [i for p in paths for i in pq.read_table(p, columns=["id"]).column("id").to_pylist()]


@pytest.mark.slow  # two `prepare run`s uploaded to the moto server
def test_a_version_on_s3_gives_llamafactory_every_record_once(tmp_path, bucket, capsys):
    """Both runs of an S3 version wrote train/part-00000.parquet under prefixes of the same last name: the
    LLaMA-Factory copy, read from each prefix, holds every record of the version once."""
    from pipeline.cli import main

    first, version = f"s3://{bucket}/a/data", f"s3://{bucket}/b/data"
    flags = ["--no-pii", "--no-estimate"]
    assert main(["run", str(CHATS[0]), "--out", str(tmp_path / "v1"), "--s3", first, *flags]) == 0
    assert main(["run", str(CHATS[1]), "--out", str(tmp_path / "v2"), "--s3", version, "--append-to", first,
                 *flags]) == 0
    code, out = emit(tmp_path, None, "llamafactory", shards=version)
    assert code == 0, capsys.readouterr().err
    info = json.loads((out / "dataset_info.json").read_text())
    cfg = yaml.safe_load((out / "llamafactory.yaml").read_text())
    manifest = json.loads((tmp_path / "v2" / "manifest.json").read_text())
    ids = _jsonl_ids(info[cfg["dataset"]]["file_name"])
    assert len(ids) == len(set(ids)) == manifest["counts"]["splits"]["train"]
    local = {*_shard_ids(sorted(str(p) for p in (tmp_path / "v1" / "train").glob("*.parquet"))),
             *_shard_ids(sorted(str(p) for p in (tmp_path / "v2" / "train").glob("*.parquet")))}
    assert set(ids) == local
