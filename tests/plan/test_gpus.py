"""GPU catalog, fit checks, time and cost, the plan, its rendering, and the estimate/gpus commands."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import worked_example_tokens

from pipeline.core import numfmt
from pipeline.core.models import load_model_spec
from pipeline.plan.gpus import (
    checkpoint_sizes,
    cost_usd,
    fits,
    largest_micro_batch,
    load_catalog,
    plan_training,
    render_plan_markdown,
    render_plan_text,
    usable_gib,
)
from pipeline.plan.memory import GIB, MemoryEstimate, estimate_memory
from pipeline.plan.setup import TrainingSetup

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable

# /work/shared/gpu_catalog.md: price per hour excluding VAT
BRIEF_PRICES = {"L4": 0.74, "RTX 4090": 1.11, "A40": 0.74, "L40S": 1.36, "RTX PRO 6000": 3.11, "A100": 2.24,
                "H100": 4.99, "H200": 6.61, "B200": 9.99}


def _fake_estimate(smi_gib: float) -> MemoryEstimate:
    return MemoryEstimate(model="x", method="lora", settings={}, components={}, params={}, peak_allocated=0,
                          peak_reserved=0, nvidia_smi=smi_gib * GIB, peak_phase="")


def test_catalog_matches_the_brief():
    catalog = load_catalog()
    assert {g.name: g.price_per_hour for g in catalog.gpus} == BRIEF_PRICES
    h200 = catalog.get("h200")
    assert h200.memory_mib == 143771 and h200.memory_gib == pytest.approx(140.4, abs=0.05)
    for gpu in catalog.gpus:
        assert gpu.bf16_tflops > 100 and gpu.bandwidth_gbs > 200 and 0.1 < gpu.utilisation < 0.95
        assert gpu.interconnect_gbs >= 32  # PCIe 4.0 x16 at least; NVLink on the SXM cards
        assert gpu.memory_gib <= gpu.nominal_gb  # the driver shows no more than the marketing figure


def test_fit_compares_gib_with_gib_and_keeps_the_margin():
    a40 = load_catalog().get("A40")              # 46068 MiB = 44.99 GiB; 10% margin -> 40.49 GiB usable
    assert usable_gib(a40) == pytest.approx(46068 / 1024 * 0.9)
    assert fits(_fake_estimate(40.4), a40)
    assert not fits(_fake_estimate(40.6), a40)
    assert fits(_fake_estimate(43.0), a40, margin=0.0)


def test_largest_micro_batch_is_the_boundary():
    l40s = load_catalog().get("L40S")
    mb, est = largest_micro_batch("Llama-3.1-8B", "qlora", 2048, l40s)
    assert mb >= 1 and fits(est, l40s)
    assert not fits(estimate_memory(TrainingSetup.build("Llama-3.1-8B", "qlora", seq_len=2048, micro_batch=mb + 1)), l40s)
    mb, _ = largest_micro_batch("Llama-3.1-70B", "lora", 2048, l40s)
    assert mb == 0


def test_attention_kernel_changes_the_planned_time():
    """LLaMA-Factory's A100 run at 1024 tokens: eager attention slower than FlashAttention-2 (published 0.81x)."""
    rates = {}
    for attn in ("fa2", "sdpa", "eager"):
        plan = plan_training("Llama-2-7B", "lora", seq_len=1024, tokens_per_epoch=10_000_000,
                             sequences_per_epoch=10_000, epochs=1, lora_rank=8, lora_targets="q,v", hints=False,
                             attn=attn)
        rates[attn] = next(c for c in plan["candidates"] if c["gpu"] == "A100")["tokens_per_second"]
        assert plan["time_model"]["stack"]["attention"] == attn
    assert 0.65 < rates["eager"] / rates["fa2"] < 0.9
    assert rates["sdpa"] <= rates["fa2"]


def test_plan_gives_time_and_cost_as_a_range_and_names_its_stack():
    plan = plan_training("Llama-3.1-8B", "lora", seq_len=2048, tokens_per_epoch=20_000_000,
                         sequences_per_epoch=10_000, epochs=1, hints=False, framework="unsloth", attn="fa2",
                         padding_ratio=0.04)
    rec = plan["recommendation"]
    low, high = rec["hours_range"]
    assert low < rec["hours"] < high
    assert rec["cost_range"][0] < rec["cost_usd"] < rec["cost_range"][1]
    model = plan["time_model"]
    assert model["stack"] == {"framework": "unsloth", "attention": "fa2", "cross_entropy": "fused",
                              "fused_kernels": True, "eager_adapters": False}
    assert model["padding_ratio"] == 0.04 and "without its source" in model["range_basis"]
    for text in (render_plan_text(plan), render_plan_markdown(plan)):
        assert "Times assume the unsloth stack with fa2 attention, fused cross-entropy, fused kernels" in text
        assert "likely " in text and "4.0% of the token positions are padding" in text
    # the trl stack's LoRA adapters are PEFT modules run eagerly: the plan times them so and says it
    trl = plan_training("Llama-3.1-8B", "lora", seq_len=2048, tokens_per_epoch=20_000_000,
                        sequences_per_epoch=10_000, epochs=1, hints=False)
    assert trl["time_model"]["stack"]["eager_adapters"] is True
    assert all(c["step_seconds"]["eager_adapters"] > 0 for c in trl["candidates"] if c["fits"])
    assert "PEFT's adapters run eagerly" in render_plan_text(trl)


def test_worked_example_qlora_8b_on_a40_for_20_hours():
    assert cost_usd(20, 0.74) == 14.80
    assert numfmt.cost(cost_usd(20, 0.74)) == "$14.80 + VAT"
    # a data set sized so the estimated QLoRA run on one A40 takes 20 hours must cost $14.80 + VAT
    tokens_per_epoch = worked_example_tokens()
    plan = plan_training("Llama-3.1-8B", "qlora", seq_len=2048, tokens_per_epoch=tokens_per_epoch,
                         sequences_per_epoch=tokens_per_epoch // 2048, epochs=3)
    row = next(c for c in plan["candidates"] if c["gpu"] == "A40")
    assert row["fits"] and row["count"] == 1
    assert row["hours"] == pytest.approx(20.0, abs=0.01)
    assert row["cost_usd"] == 14.80
    assert "$14.80 + VAT" in render_plan_markdown(plan) and "$14.80 + VAT" in render_plan_text(plan)


def _plan(**kw):
    args = {"model": "Llama-3.1-8B", "method": "qlora", "seq_len": 2048, "tokens_per_epoch": 20_000_000,
            "sequences_per_epoch": 10_000} | kw
    return plan_training(args.pop("model"), args.pop("method"), **args)


def test_plan_shape_and_choices():
    plan = _plan()
    json.dumps(plan)  # JSON-serializable as it is
    for key in ("model", "method", "max_seq_len", "memory", "recommendation", "fastest", "candidates", "hints",
                "checkpoint_gib"):
        assert key in plan
    for key in ("peak_allocated_gib", "peak_reserved_gib", "components", "params"):
        assert key in plan["memory"]
    rec, fastest = plan["recommendation"], plan["fastest"]
    assert set(rec) >= {"gpu", "count", "micro_batch", "hours", "cost_usd", "sharding"}
    fitting = [c for c in plan["candidates"] if c["fits"]]
    assert rec["cost_usd"] == min(c["cost_usd"] for c in fitting)
    assert fastest["hours"] == min(c["hours"] for c in fitting)
    for c in fitting:
        assert c["vram_need_gib"] <= c["usable_gib"]
        # hours are shown rounded to 0.01 h; the cost comes from the unrounded hours
        assert c["cost_usd"] == pytest.approx(c["hours"] * c["price_per_hour"] * c["count"],
                                              abs=0.005 * c["price_per_hour"] * c["count"] + 0.01)


def test_multi_gpu_when_one_card_does_not_fit():
    plan = _plan(model="Llama-3.1-8B", method="full", seq_len=2048)
    a100 = next(c for c in plan["candidates"] if c["gpu"] == "A100")
    assert a100["fits"] and a100["count"] > 1 and a100["sharding"] in ("zero2", "zero3")
    plan = _plan(model="Llama-3.1-70B", method="lora")
    l40s = next(c for c in plan["candidates"] if c["gpu"] == "L40S")
    assert l40s["count"] > 1 and l40s["sharding"] == "fsdp"


def test_nothing_fits_is_said():
    plan = _plan(model="Llama-3.1-70B", method="full", seq_len=8192, grad_ckpt=False)
    assert plan["recommendation"] is None and plan["fastest"] is None
    assert any("Nothing in the catalog fits" in h for h in plan["hints"])
    assert "nothing in the catalog fits" in render_plan_text(plan)


def test_cheaper_path_hints(tmp_path):
    two_cards = tmp_path / "two.json"
    two_cards.write_text(json.dumps({"counts": [1], "gpus": [
        {"name": "Small", "memory_mib": 24564, "price_per_hour": 0.5, "bf16_tflops": 165},
        {"name": "Big", "memory_mib": 81920, "price_per_hour": 3.0, "bf16_tflops": 312}]}))
    plan = _plan(method="lora", catalog_path=two_cards)
    assert plan["recommendation"]["gpu"] == "Big"  # LoRA of an 8B model needs more than 24 GiB at 2048
    assert any(h.startswith("QLoRA (4-bit base) instead of LoRA fits Small x1") for h in plan["hints"])
    # an 8B full fine-tune at 16k without checkpointing fits only eight B200s; half the length costs less
    assert any(h.startswith("A max length of 8192 instead of 16384 fits ")
               for h in _plan(model="Llama-3.1-8B", method="full", seq_len=16384, grad_ckpt=False)["hints"])
    assert any(h.startswith("A max length of 4096") for h in _plan(method="lora", seq_len=8192)["hints"])


def test_user_catalog(tmp_path):
    path = tmp_path / "cloud.json"
    path.write_text(json.dumps({"gpus": [{"name": "Big", "memory_mib": 200_000, "price_per_hour": 1.0,
                                          "bf16_tflops": 500}]}))
    plan = _plan(catalog_path=path)
    assert plan["recommendation"]["gpu"] == "Big" and len(plan["candidates"]) == 1
    path.write_text(json.dumps({"gpus": [{"name": "Broken", "memory_mib": 1000}]}))
    with pytest.raises(ValueError, match="lacks price_per_hour"):
        load_catalog(path)


def test_checkpoint_sizes():
    spec = load_model_spec("Llama-3.1-8B")
    lora = estimate_memory(TrainingSetup.build(spec, "qlora", seq_len=512))
    sizes = checkpoint_sizes(spec, "qlora", lora)
    assert sizes["adapter_gib"] == pytest.approx(lora.params["lora"] * 4 / GIB, abs=1e-3)
    assert sizes["merged_model_gib"] == pytest.approx(8_030_261_248 * 2 / GIB, abs=1e-3)
    full = estimate_memory(TrainingSetup.build(spec, "full", seq_len=512, gpus=8, sharding="zero3"))
    sizes = checkpoint_sizes(spec, "full", full)
    assert sizes["weights_gib"] == pytest.approx(8_030_261_248 * 2 / GIB, abs=1e-3)
    assert sizes["resume_checkpoint_gib"] == pytest.approx(8_030_261_248 * 14 / GIB, abs=1e-2)  # + fp32 master + Adam


def test_renderings():
    plan = _plan()
    md = render_plan_markdown(plan)
    assert "| GPU | cards |" in md and "|---|" in md and plan["recommendation"]["gpu"] in md
    assert "max_memory_allocated" in md and "nvidia-smi" in md
    text = render_plan_text(plan)
    assert "Recommended (cheapest that fits)" in text and "|" not in text


# ---------------------------------------------------------------- commands

def _run(argv):
    from pipeline.cli import main
    return main(argv)


def test_estimate_json(capsys):
    assert _run(["estimate", "--model", "Llama-3.1-8B", "--method", "qlora", "--seq-len", "2048", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["peak_reserved_gib"] > out["peak_allocated_gib"] > 5
    assert out["params"]["total"] == 8_030_261_248
    assert set(out["components"]) >= {"weights", "lora_adapters", "gradients", "optimizer_states", "activations",
                                      "logits_cross_entropy", "cuda_context"}


def test_estimate_text_and_flags(capsys):
    assert _run(["estimate", "--model", "Qwen2.5-7B", "--method", "lora", "--seq-len", "1024", "--micro-batch", "2",
                 "--no-grad-ckpt", "--attn", "eager", "--optimizer", "adamw8bit", "--lora-rank", "8",
                 "--lora-targets", "q,v", "--gpus", "2", "--sharding", "fsdp"]) == 0
    out = capsys.readouterr().out
    assert "peak allocated" in out and "peak reserved" in out and "LoRA r8 on q_proj,v_proj" in out


def test_adapter_dtype_overrides_the_preset(capsys):
    """A plain loop with PEFT's defaults: fp32 adapters without autocast keep an fp32 copy of each adapter's input
    (measured on an H200, bench/gpu_peak), so without checkpointing the step needs more than with bf16 ones."""
    peaks = {}
    for dtype in ("bf16", "fp32"):
        assert _run(["estimate", "--model", "Llama-3.1-8B", "--method", "lora", "--seq-len", "2048",
                     "--no-grad-ckpt", "--framework", "plain", "--adapter-dtype", dtype, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["settings"]["adapter_dtype"] == dtype and out["settings"]["autocast"] is False
        peaks[dtype] = out["peak_allocated_gib"]
    assert peaks["fp32"] - peaks["bf16"] > 5


def test_lora_flags_with_full_are_ignored_with_a_note(capsys):
    assert _run(["estimate", "--model", "Llama-3.2-1B", "--method", "full", "--seq-len", "512", "--lora-rank", "64",
                 "--json"]) == 0
    captured = capsys.readouterr()
    assert "--lora-rank ignored" in captured.err
    assert json.loads(captured.out)["params"]["lora"] == 0


def test_gpus_command(capsys, tmp_path):
    assert _run(["gpus", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["gpus"]) == 9
    assert _run(["gpus"]) == 0
    assert "143771" in capsys.readouterr().out
    assert _run(["gpus", "--catalog", str(tmp_path / "missing.json")]) == 2


def test_errors_are_one_line_exit_2_no_traceback():
    code = ("import sys; from pipeline.cli import main; "
            "sys.exit(main(['estimate', '--model', 'no-such-model', '--method', 'lora', '--seq-len', '512']))")
    result = subprocess.run([PYTHON, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert "unknown model 'no-such-model'" in result.stderr


def test_json_output_is_only_json_and_torch_free():
    code = ("import sys; from pipeline.cli import main; rc = main(['estimate', '--model', 'Mixtral-8x7B', "
            "'--method', 'qlora', '--seq-len', '4096', '--json']); "
            "assert 'torch' not in sys.modules and 'transformers' not in sys.modules; sys.exit(rc)")
    result = subprocess.run([PYTHON, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["params"]["active"] < json.loads(result.stdout)["params"]["total"]


def test_cheaper_paths_name_the_loss_that_never_holds_the_logits():
    from pipeline.plan.gpus import plan_training

    # 8B QLoRA at 16k tokens: the fp32 logits of the standard loss need a bigger card than the rest
    kw = dict(seq_len=16384, tokens_per_epoch=5_000_000, sequences_per_epoch=300)
    standard = plan_training("llama-3.1-8b", "qlora", **kw)
    hint = next(h for h in standard["hints"] if "--cross-entropy" in h)
    ce = hint.rsplit("--cross-entropy ", 1)[1].rstrip(").")
    cheaper = plan_training("llama-3.1-8b", "qlora", cross_entropy=ce, **kw)
    assert cheaper["recommendation"]["cost_usd"] < standard["recommendation"]["cost_usd"]
    assert cheaper["recommendation"]["gpu"] in hint and not any("--cross-entropy" in h for h in cheaper["hints"])
