"""The whole path on CPU: `prepare run` (S3 on the moto server) -> `precheck --emit trl` -> trl's SFTTrainer
trains a tiny randomly initialised Llama on the shards the emitted config names, with S3Checkpoints putting
checkpoints in the bucket -> only the best is kept -> `checkpoints pull` restores it and training resumes from
it -> `calibrate` reads the trial's log. Needs the `train` extra (trl, torch)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("trl")
pytest.importorskip("torch")

from conftest import ROOT, SAMPLE_DATA  # noqa: E402

pytestmark = pytest.mark.slow

CHATS = [SAMPLE_DATA / "support_en_openai.jsonl", SAMPLE_DATA / "support_ru_sharegpt.jsonl",
         SAMPLE_DATA / "support_tr_alpaca.json"]
# the flags a CPU trial adds to an emitted config (which is for the GPU and its steps)
TRIAL = ("--use_cpu", "true", "--logging_steps", "1", "--dataloader_num_workers", "0", "--disable_tqdm", "true")

# {% generation %} blocks: what trl's assistant_only_loss (return_assistant_tokens_mask) needs, and what the
# pipeline's length step counts as trainable
CHAT_TEMPLATE = (
    "{%- for m in messages %}"
    "{{- '<|' + m['role'] + '|>\n' }}"
    "{%- if m['role'] == 'assistant' %}"
    "{%- generation %}{{- m['content'] + '<|end|>' }}{%- endgeneration %}"
    "{%- else %}{{- m['content'] + '<|end|>' }}{%- endif %}"
    "{{- '\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|assistant|>\n' }}{%- endif %}")


def tiny_model(folder: Path, texts: list[str]) -> Path:
    """A 2-layer Llama (hidden 32) with a byte-level BPE tokenizer trained here: no download."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|pad|>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>", "<|tool|>"]
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=400, special_tokens=specials, show_progress=False,
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|end|>", pad_token="<|pad|>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(folder)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(fast), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=1024,
                      eos_token_id=fast.eos_token_id, pad_token_id=fast.pad_token_id, bos_token_id=None,
                      tie_word_embeddings=True)
    LlamaForCausalLM(cfg).save_pretrained(folder)
    return folder


def parse_trl(config: Path, *overrides: str):
    """`trl sft --config FILE` as trl parses it: (ScriptArguments, SFTConfig, ModelConfig, DatasetMixtureConfig)."""
    from trl.scripts.sft import make_parser

    return make_parser().parse_args_and_config(["--config", str(config), *overrides])


def build_trainer(script_args, training_args, model_args, callbacks):
    """What trl's sft script (trl.scripts.sft.main) builds, plus the callback its CLI cannot take."""
    from datasets import load_dataset
    from trl import SFTTrainer, get_peft_config

    dataset = load_dataset(script_args.dataset_name, name=script_args.dataset_config)
    return SFTTrainer(model=model_args.model_name_or_path, args=training_args,
                      train_dataset=dataset[script_args.dataset_train_split],
                      eval_dataset=dataset[script_args.dataset_test_split], peft_config=get_peft_config(model_args),
                      callbacks=callbacks)


def test_run_emit_train_checkpoint_pull_resume_calibrate(tmp_path, bucket, capsys, monkeypatch):
    import boto3

    from pipeline.cli import main
    from pipeline.train import S3Checkpoints
    from pipeline.train.checkpoints import FINAL, MANIFEST, list_remote

    monkeypatch.setenv("PREPARE_CALIBRATION", str(tmp_path / "calibration.json"))
    texts = [line for f in CHATS[:2] for line in f.read_text(encoding="utf-8").splitlines()]
    model = tiny_model(tmp_path / "model", texts)
    run = tmp_path / "run"
    data_uri = f"s3://{bucket}/datasets/v1"
    assert main(["run", *map(str, CHATS), "--out", str(run), "--s3", data_uri, "--model", str(model),
                 "--method", "lora", "--no-pii"]) == 0
    capsys.readouterr()
    emit = tmp_path / "emit"
    out = tmp_path / "output"
    assert main(["precheck", *map(str, CHATS), "--model", str(model), "--method", "lora", "--emit", "trl",
                 "--shards", str(run), "--out", str(emit), "--global-batch", "8",
                 "--trainer-output", str(out)]) == 0
    capsys.readouterr()
    config = emit / "trl_sft.yaml"
    plan = json.loads((emit / "prepare-plan.json").read_text())
    assert plan["framework"] == "hf" and plan["global_batch"] == 8 and plan["assistant_only_loss"]

    # a trial: a few steps on CPU, saving and evaluating every 2 steps (the emitted interval is for the GPU)
    ckpt_uri = f"s3://{bucket}/jobs/trial-1"
    script, training, model_args, _ = parse_trl(config, "--use_cpu", "true", "--max_steps", "4", "--save_steps", "2",
                                                "--eval_steps", "2", "--logging_steps", "1",
                                                "--dataloader_num_workers", "0")
    assert (script.dataset_name, training.max_length, training.packing, training.assistant_only_loss) == \
        (str(run), plan["max_length"], True, True)
    assert model_args.use_peft and model_args.lora_r == plan["lora"]["r"]
    callback = S3Checkpoints(ckpt_uri, keep=2, keep_final=1)
    trainer = build_trainer(script, training, model_args, [callback])
    trainer.train()
    state = trainer.state
    assert state.global_step == 4
    best = Path(state.best_model_checkpoint).name
    remote = list_remote(ckpt_uri)
    # the end of training keeps the best checkpoint and the final adapter, prunes the rest
    assert {n for n, e in remote.items() if e.complete} == {best, FINAL}, remote
    assert not [n for n, e in remote.items() if not e.complete]
    s3 = boto3.client("s3")
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="jobs/trial-1/")["Contents"]}
    assert f"jobs/trial-1/{FINAL}/adapter_model.safetensors" in keys
    report = json.loads(s3.get_object(Bucket=bucket, Key="jobs/trial-1/eval_report.json")["Body"].read())
    assert report["best_model_checkpoint"] == best and len(report["evaluations"]) == 2
    manifest = json.loads(s3.get_object(Bucket=bucket, Key=f"jobs/trial-1/{best}/{MANIFEST}")["Body"].read())
    assert {"adapter_model.safetensors", "optimizer.pt", "trainer_state.json"} <= {f["path"] for f in manifest["files"]}
    # step times were logged for calibrate
    assert any("step_seconds" in e for e in state.log_history)

    # a new server: pull the latest complete checkpoint and resume from it
    restored = tmp_path / "restored"
    capsys.readouterr()  # the trainer's own log lines
    assert main(["checkpoints", "pull", ckpt_uri, str(restored)]) == 0
    pulled = Path(capsys.readouterr().out.strip())
    assert pulled == restored / best and (pulled / "adapter_model.safetensors").is_file()
    resumed_at = int(best.split("-")[1])
    script, training, model_args, _ = parse_trl(config, "--use_cpu", "true", "--max_steps", str(resumed_at + 2),
                                                "--save_steps", "2", "--eval_steps", "2", "--logging_steps", "1",
                                                "--output_dir", str(tmp_path / "output2"))
    trainer = build_trainer(script, training, model_args, [S3Checkpoints(f"s3://{bucket}/jobs/trial-2")])
    trainer.train(resume_from_checkpoint=str(pulled))
    assert trainer.state.global_step == resumed_at + 2
    # the resumed run continued the log of the pulled one (its history starts before the resume point)
    assert min(e["step"] for e in trainer.state.log_history if "loss" in e) <= resumed_at

    capsys.readouterr()
    # calibrate reads the trial's log against the plan it was emitted with
    assert main(["calibrate", str(pulled), "--plan", str(emit / "prepare-plan.json"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["measured"]["steps"] == resumed_at and result["measured"]["step_seconds"] > 0
    # a CPU trial's speed is no measurement of the planned card: labelled, nothing corrected or stored
    assert result["measured"]["devices"] == ["cpu"] and result["off_gpu"] == "cpu"
    assert "corrected" not in result and not (tmp_path / "calibration.json").exists()


@pytest.fixture(scope="module")
def mixed_job(tmp_path_factory):
    """sample_data itself (chats, instructions, plain text): run with a tiny model and emitted for trl, one config
    per kind (shared by the tests that train from it: each trains into folders of its own)."""
    from pipeline.cli import main

    tmp = tmp_path_factory.mktemp("mixed")
    texts = [line for f in SAMPLE_DATA.glob("*.json*") for line in f.read_text(encoding="utf-8").splitlines()]
    model = tiny_model(tmp / "model", texts)
    run, emit, out = tmp / "run", tmp / "emit", tmp / "output"
    assert main(["run", str(SAMPLE_DATA), "--out", str(run), "--model", str(model), "--method", "lora",
                 "--no-pii"]) == 0
    assert main(["precheck", str(SAMPLE_DATA), "--model", str(model), "--method", "lora", "--emit", "trl",
                 "--shards", str(run), "--out", str(emit), "--global-batch", "8", "--trainer-output", str(out)]) == 0
    return SimpleNamespace(model=model, run=run, emit=emit, out=out)


# tools and tool calls rendered (as JSON) inside the same {% generation %} blocks: a tool-calling model trains on
# its calls and its answers, not on the tool results
TOOL_TEMPLATE = (
    "{%- if tools %}{{- '<|system|>\n' + (tools | tojson) + '<|end|>\n' }}{%- endif %}"
    "{%- for m in messages %}"
    "{{- '<|' + m['role'] + '|>\n' }}"
    "{%- if m['role'] == 'assistant' %}{%- generation %}{{- m['content'] or '' }}"
    "{%- for c in m.get('tool_calls') or [] %}{{- '<call>' + (c['function'] | tojson) + '</call>' }}{%- endfor %}"
    "{{- '<|end|>' }}{%- endgeneration %}"
    "{%- else %}{{- m['content'] + '<|end|>' }}{%- endif %}"
    "{{- '\n' }}"
    "{%- endfor %}")


def tool_call_records(n: int) -> list[dict]:
    """Chats in the OpenAI tool-calling form: the tool, the assistant's call, the tool's result, the answer."""
    tools = [{"type": "function", "function": {"name": "order_status", "description": "Look up an order",
                                                "parameters": {"type": "object",
                                                               "properties": {"order": {"type": "string"}}}}}]
    out = []
    for i in range(n):
        order = f"A{1000 + i * 7}"
        out.append({"tools": tools, "messages": [
            {"role": "user", "content": f"Where is my order {order}? It was due {i % 5 + 1} days ago."},
            {"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "id": f"call_{i}",
                 "function": {"name": "order_status", "arguments": {"order": order}}}]},
            {"role": "tool", "tool_call_id": f"call_{i}", "name": "order_status",
             "content": json.dumps({"order": order, "status": ["packed", "shipped", "delayed"][i % 3]})},
            {"role": "assistant", "content": f"Order {order} is {['packed', 'shipped', 'delayed'][i % 3]}; "
                                             f"I will follow up within {i % 4 + 1} business days."}]})
    return out


def test_a_tool_call_run_trains_from_the_emitted_config_unedited(tmp_path, bucket, capsys):
    """Issue 32, item 5: a run of tool-calling chats; trl's own `trl sft` trains 2 steps from the emitted config
    as written (only trial flags added), on the calls and answers only, with S3Checkpoints to the local S3 server,
    and the config's packed sequences are trl's."""
    from trl_with_callbacks import trl_sft

    from pipeline.cli import main
    from pipeline.core.s3 import read_json
    from pipeline.train import S3Checkpoints
    from pipeline.train.checkpoints import FINAL, list_remote

    data = tmp_path / "tools_openai.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in tool_call_records(80)), encoding="utf-8")
    model = tiny_model(tmp_path / "model", data.read_text(encoding="utf-8").splitlines())
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model)
    tok.chat_template = TOOL_TEMPLATE
    tok.save_pretrained(model)
    run, emit, out = tmp_path / "run", tmp_path / "emit", tmp_path / "output"
    assert main(["run", str(data), "--out", str(run), "--model", str(model), "--method", "lora", "--no-pii"]) == 0
    assert main(["precheck", str(data), "--model", str(model), "--method", "lora", "--emit", "trl", "--shards",
                 str(run), "--out", str(emit), "--global-batch", "4", "--trainer-output", str(out)]) == 0
    capsys.readouterr()
    plan = json.loads((emit / "prepare-plan.json").read_text())
    (dataset,) = plan["datasets"]
    assert dataset["kind"] == "chat" and plan["assistant_only_loss"]
    args = parse_trl(emit / "trl_sft.yaml", "--use_cpu", "true", "--max_steps", "2")
    trainer = build_trainer(*args[:3], [])
    assert len(trainer.train_dataset) == dataset["packed_sequences"]
    first = trainer.train_dataset[0]
    trained = tok.decode([t for t, label in zip(first["input_ids"], first["labels"]) if label != -100])
    assert "order_status" in trained and '"status"' not in trained  # the call is trained, the tool result is not
    uri = f"s3://{bucket}/jobs/tools"
    trl_sft(["--config", str(emit / "trl_sft.yaml"), *TRIAL, "--max_steps", "2", "--save_steps", "2",
             "--eval_steps", "2"], [S3Checkpoints(uri)])
    state = json.loads((out / "checkpoint-2" / "trainer_state.json").read_text())
    assert state["global_step"] == 2 and (out / "adapter_model.safetensors").is_file()
    assert {n for n, e in list_remote(uri).items() if e.complete} == {"checkpoint-2", FINAL}
    report = read_json(f"{uri}/eval_report.json")
    assert report["best_model_checkpoint"] == "checkpoint-2" and [e["step"] for e in report["evaluations"]] == [2]


def sft_process(log: Path, uri: str, *args) -> subprocess.Popen:
    """tests/e2e/trl_with_callbacks.py: `trl sft ARGS` (trl's own entry point) with S3Checkpoints to `uri`, in a
    process of its own, as on a training server; its output goes to `log` (a pipe nobody reads would fill)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(log, "w") as out:
        return subprocess.Popen([sys.executable, str(Path(__file__).with_name("trl_with_callbacks.py")), uri,
                                 *map(str, args)], env=env, stdout=out, stderr=subprocess.STDOUT)


def latest_checkpoint_after_the_best(uri: str, step: int) -> str | None:
    """The best checkpoint by the state saved in checkpoint-`step` on S3 (trainer_state.json: the trainer's own
    record of its evaluations), once that checkpoint is complete there and later than the best; else None."""
    from pipeline.core.s3 import read_json
    from pipeline.train.checkpoints import best_of, list_remote

    entry = list_remote(uri).get(f"checkpoint-{step}")
    if entry is None or not entry.complete:
        return None
    best = best_of(read_json(f"{uri}/checkpoint-{step}/trainer_state.json"))
    return best if best and int(best.split("-")[1]) < step else None


def test_a_mixed_run_trains_by_kind_and_a_sigkilled_run_resumes_keeping_the_best(mixed_job, tmp_path, bucket,
                                                                                capsys):
    """Issue 32, item 5, on sample_data (chats, instructions, plain text): trl's own `sft` entry point trains each
    kind from its emitted config as written (only trial flags added), with S3Checkpoints to the local S3 server, on
    trl's own count of the packed sequences and steps the config states. The text run, in a process of its own,
    is SIGKILLed once a checkpoint later than the best is on S3, pulled into a fresh folder and resumed there; at
    the end S3 still holds the best and eval_report.json names it."""
    import boto3
    from trl_with_callbacks import Seen, Worse, trl_sft

    from pipeline.cli import main
    from pipeline.train import S3Checkpoints
    from pipeline.train.checkpoints import FINAL, list_remote, read_best

    emit = mixed_job.emit
    plan = {d["kind"]: d for d in json.loads((emit / "prepare-plan.json").read_text())["datasets"]}
    chat_uri, text_uri = f"s3://{bucket}/jobs/chat", f"s3://{bucket}/jobs/text"
    # the text run evaluates and saves every step, gets worse after step 2 and stops progressing at step 5
    text_args = ("--config", emit / "trl_sft.text.yaml", *TRIAL, "--max_steps", "6", "--save_steps", "1",
                 "--eval_steps", "1")
    log = tmp_path / "text-a.log"
    text = sft_process(log, text_uri, "--worse-after", "2", "--hold-at", "5", *text_args,
                       "--output_dir", tmp_path / "text-a")
    try:
        # meanwhile the chats, here
        chat_args = ["--config", str(emit / "trl_sft.chat.yaml"), *TRIAL, "--max_steps", "2", "--save_steps", "2",
                     "--eval_steps", "2", "--output_dir", str(tmp_path / "chat")]
        seen = {"chat": Seen(), "text": Seen()}
        trl_sft(chat_args, [S3Checkpoints(chat_uri, keep=1), seen["chat"]])
        assert (tmp_path / "chat" / "adapter_model.safetensors").is_file()
        deadline = time.monotonic() + 400  # a loaded CI machine; quiet, seconds
        while (best := latest_checkpoint_after_the_best(text_uri, 4)) is None:
            assert text.poll() is None, log.read_text()[-3000:]
            if time.monotonic() > deadline:
                text.kill()
                pytest.fail(f"no checkpoint-4 later than the best on S3: {sorted(list_remote(text_uri))}, best "
                            f"{read_best(text_uri)}; trl sft said: {log.read_text()[-3000:]}")
            time.sleep(0.2)
    finally:
        text.kill()  # SIGKILL: no end of training, no clean-up, the upload thread dies with it
    assert text.wait() == -signal.SIGKILL
    assert read_best(text_uri)["checkpoint"] == best

    capsys.readouterr()
    assert main(["checkpoints", "pull", text_uri, str(tmp_path / "text-b")]) == 0
    pulled = Path(capsys.readouterr().out.strip())
    assert pulled.name == "checkpoint-4" and not (tmp_path / "text-b" / best).exists()
    trl_sft([*map(str, text_args), "--output_dir", str(tmp_path / "text-b"), "--resume_from_checkpoint",
             str(pulled)], [S3Checkpoints(text_uri, keep=1), Worse(2), seen["text"]])
    # resumed at step 4: the fresh folder's first new checkpoint is step 5, and the log says where it resumed
    steps = sorted(int(p.name.split("-")[1]) for p in (tmp_path / "text-b").glob("checkpoint-*"))
    assert steps == [4, 5, 6]
    state = json.loads((tmp_path / "text-b" / "checkpoint-6" / "trainer_state.json").read_text())
    assert [e["resumed_from_step"] for e in state["log_history"] if "resumed_from_step" in e] == [4]

    s3 = boto3.client("s3")
    report = json.loads(s3.get_object(Bucket=bucket, Key="jobs/text/eval_report.json")["Body"].read())
    losses = {e["step"]: e["eval_loss"] for e in report["evaluations"]}
    assert set(losses) == {1, 2, 3, 4, 5, 6} and f"checkpoint-{min(losses, key=losses.get)}" == best
    assert report["best_model_checkpoint"] == best == read_best(text_uri)["checkpoint"]
    assert {n for n, e in list_remote(text_uri).items() if e.complete} == {best, FINAL}
    chat_report = json.loads(s3.get_object(Bucket=bucket, Key="jobs/chat/eval_report.json")["Body"].read())
    assert chat_report["best_model_checkpoint"] == "checkpoint-2" and chat_report["global_step"] == 2
    assert {n for n, e in list_remote(chat_uri).items() if e.complete} == {"checkpoint-2", FINAL}

    for kind in ("chat", "text"):
        training = parse_trl(emit / f"trl_sft.{kind}.yaml", "--use_cpu", "true")[1]
        assert training.assistant_only_loss == (kind == "chat")
        # the packed sequences and steps per epoch the config states are trl's own (issue 32: the plan's 328
        # packed sequences against trl's 303)
        assert len(seen[kind].dataset) == plan[kind]["packed_sequences"]
        assert -(-seen[kind].batches // training.gradient_accumulation_steps) == plan[kind]["steps_per_epoch"]
    # the run's own report plans the same sequences, each kind packed apart, and its steps per epoch at its batch
    packing = json.loads((mixed_job.run / "report.json").read_text())["lengths"]["packing"]
    assert packing["by_kind"] == {kind: len(seen[kind].dataset) for kind in ("chat", "text")}
    assert packing["packed_sequences"] == sum(len(seen[kind].dataset) for kind in ("chat", "text"))
    assert packing["steps_per_epoch"] == sum(-(-len(seen[kind].dataset) // packing["batch_size"])
                                             for kind in ("chat", "text"))


def test_trl_trains_on_every_record_of_an_appended_version(tmp_path, capsys):
    """A version (--append-to) whose two runs both wrote train/part-00000.parquet: the emitted trl config loads
    the records of both, each from its own run directory, and trains on them on CPU."""
    from pipeline.cli import main

    texts = [line for f in CHATS[:2] for line in f.read_text(encoding="utf-8").splitlines()]
    model = tiny_model(tmp_path / "model", texts)
    flags = ["--model", str(model), "--method", "lora", "--no-pii"]
    assert main(["run", str(CHATS[0]), "--out", str(tmp_path / "v1"), *flags]) == 0
    assert main(["run", str(CHATS[1]), "--out", str(tmp_path / "v2"), "--append-to", str(tmp_path / "v1"),
                 *flags]) == 0
    emit = tmp_path / "emit"
    assert main(["precheck", *map(str, CHATS[:2]), "--model", str(model), "--method", "lora", "--emit", "trl",
                 "--shards", str(tmp_path / "v2"), "--out", str(emit), "--global-batch", "8"]) == 0
    capsys.readouterr()
    manifest = json.loads((tmp_path / "v2" / "manifest.json").read_text())
    script, training, model_args, _ = parse_trl(emit / "trl_sft.yaml", "--use_cpu", "true", "--max_steps", "2",
                                                "--logging_steps", "1", "--dataloader_num_workers", "0",
                                                "--output_dir", str(tmp_path / "output"))
    trainer = build_trainer(script, training, model_args, [])
    from datasets import load_dataset

    loaded = load_dataset(script.dataset_name, name=script.dataset_config)
    rows = {split: sum(s["rows"] for s in manifest["shards"] if s["split"] == split)
            for split in ("train", "validation")}
    assert {split: len(loaded[split]) for split in rows} == rows  # the earlier run's records and the new ones
    assert len({r["id"] for r in loaded["train"]}) == rows["train"]
    trainer.train()
    assert trainer.state.global_step == 2
