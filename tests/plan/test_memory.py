"""Memory estimate: each component by hand for fixed configurations, monotonicity, options, calibration."""
import importlib.util
import json
import math
import statistics
import sys
from pathlib import Path

import pytest

from pipeline.core.models import load_model_spec
from pipeline.plan.memory import (
    GIB,
    calibration_summary,
    calibration_table,
    estimate_memory,
    format_calibration_table,
    load_calibration_points,
    load_constants,
    lora_param_count,
    parse_lora_targets,
    resolve_constants,
)
from pipeline.plan.setup import TrainingSetup

HF = resolve_constants(load_constants(), "hf")
OVERHEAD = HF["framework_overhead_gib"] * GIB

# Llama-3.1-8B
H, I, L, V, Q, KV, A = 4096, 14336, 32, 128256, 4096, 1024, 32
TOTAL_8B = 8_030_261_248
LINEAR_8B = L * (H * Q + 2 * H * KV + Q * H + 3 * H * I)


def test_qlora_components_by_hand():
    """Llama-3.1-8B QLoRA r16 all-linear, 2 x 2048 tokens, checkpointing, SDPA, hf preset (fp32 adapters,
    prepare_model_for_kbit_training's fp32 casts, HF loss, fused AdamW, double quantization): the peak is in the
    loss backward, and it is the sum of what the traced code holds there."""
    B, S, r = 2, 2048, 16
    T, N = B * S, B * S * V
    assert LINEAR_8B == 6_979_321_856
    nf4_dq = (4 + 8 / 64 + 32 / (64 * 256)) / 8          # 4-bit codes + 8-bit absmax/64 + fp32 absmax/(64*256)
    weights = LINEAR_8B * nf4_dq + (TOTAL_8B - LINEAR_8B) * 4  # embeddings, lm_head, norms cast to fp32
    lora = L * r * ((H + Q) + 2 * (H + KV) + (Q + H) + 3 * (H + I))
    assert lora_param_count(load_model_spec("Llama-3.1-8B"), r, "all-linear") == lora == 41_943_040
    e = estimate_memory(TrainingSetup.build("Llama-3.1-8B", "qlora", seq_len=S, micro_batch=B, lora_rank=r))
    comp = e.components
    assert comp["weights"] == pytest.approx(weights)
    assert comp["lora_adapters"] == comp["gradients"] == pytest.approx(lora * 4)
    assert comp["optimizer_states"] == pytest.approx(lora * 8)
    assert comp["optimizer_step_workspace"] == 0  # adamw_torch_fused: no state-sized temporaries
    static = weights + 4 * lora + 8 * lora
    checkpoints = L * T * H * 4          # fp32 embedding -> fp32 residual stream: each layer's input in fp32
    rope = 2 * S * 128 * 4 + 8 * S       # cos, sin (fp32, like the stream), positions
    final_norm = T * (4 * H + 4)         # final RMSNorm: its fp32 input and rsqrt
    head_copy = 2 * V * H                # the fp32 lm_head cast to bf16 by autocast, kept by the matmul
    loss_backward = 12 * N               # saved fp32 log-softmax + nll grad + log-softmax grad
    assert e.peak_phase == "backward, loss"
    assert e.peak_allocated == pytest.approx(static + checkpoints + rope + final_norm + head_copy + loss_backward)
    assert e.nvidia_smi == pytest.approx(e.peak_reserved + HF["cuda_context_gib"] * GIB)
    assert comp["allocator_overhead"] == pytest.approx(e.peak_reserved - e.peak_allocated)
    assert e.params["trainable"] == lora and e.params["total"] == TOTAL_8B
    assert set(e.terms) >= {"parameters", "gradients", "optimizer_state", "checkpointed_layers", "recompute_layer",
                            "logits_loss", "allocator_overhead", "cuda_context"}


def test_full_mixed_precision_by_hand():
    """Llama-2-7B full fine-tuning, mixed precision: fp32 weights (the master copy), fp32 AdamW moments, fp32
    gradients: 16 bytes/param once all gradients exist; fused AdamW adds nothing in step()."""
    total = 6_738_415_616
    e = estimate_memory(TrainingSetup.build("Llama-2-7B", "full", seq_len=512, micro_batch=1))
    comp = e.components
    assert comp["master_weights"] == 4 * total and comp["weights"] == 2 * total  # bf16 copies: autocast's cache
    assert comp["gradients"] == 4 * total
    assert comp["optimizer_states"] == 8 * total
    assert comp["optimizer_step_workspace"] == 0
    assert e.phases["optimizer step"] == pytest.approx(16 * total)
    assert e.peak_allocated > 16 * total
    # torch's foreach AdamW (the plain preset) allocates one state-sized temporary: + 2 bytes/param in bf16
    plain = estimate_memory(TrainingSetup.build("Llama-2-7B", "full", seq_len=512, framework="plain"))
    assert plain.components["optimizer_step_workspace"] == 2 * total
    assert plain.phases["optimizer step"] == pytest.approx(10 * total)


def test_pure_bf16_full_is_8_bytes_per_param():
    e = estimate_memory(TrainingSetup.build("Llama-3.2-1B", "full", seq_len=512, precision="bf16"))
    total = e.params["total"]
    assert e.components["master_weights"] == 0
    assert e.components["weights"] + e.components["gradients"] + e.components["optimizer_states"] == 8 * total


def test_nf4_double_quantization_saves_0_373_bits_per_weight():
    with_dq = estimate_memory(TrainingSetup.build("Llama-3.1-8B", "qlora", seq_len=512))
    without = estimate_memory(TrainingSetup.build("Llama-3.1-8B", "qlora", seq_len=512, double_quant=False))
    saved_bits = 32 / 64 - (8 / 64 + 32 / (64 * 256))
    assert without.components["weights"] - with_dq.components["weights"] == pytest.approx(LINEAR_8B * saved_bits / 8)


def test_int8_base_for_lora():
    e = estimate_memory(TrainingSetup.build("Llama-3.1-8B", "lora", seq_len=512, quantization="int8"))
    # int8 codes + fp32 row scales; prepare_model_for_kbit_training casts the rest to fp32
    assert LINEAR_8B < e.components["weights"] < LINEAR_8B * 1.01 + (TOTAL_8B - LINEAR_8B) * 4


def test_zero3_shards_states_weights_and_gradients():
    one = estimate_memory(TrainingSetup.build("Llama-3.1-8B", "full", seq_len=2048))
    eight = estimate_memory(TrainingSetup.build("Llama-3.1-8B", "full", seq_len=2048, gpus=8, sharding="zero3"))
    assert eight.components["optimizer_states"] == pytest.approx(one.components["optimizer_states"] / 8)
    assert eight.components["master_weights"] == pytest.approx(one.components["master_weights"] / 8)
    assert one.components["weights"] / 8 < eight.components["weights"] < one.components["weights"] / 2
    assert eight.components["gradients"] < one.components["gradients"] / 4
    zero2 = estimate_memory(TrainingSetup.build("Llama-3.1-8B", "full", seq_len=2048, gpus=8, sharding="zero2"))
    assert zero2.components["weights"] == one.components["weights"]  # ZeRO-2 keeps full weights
    assert eight.peak_allocated < zero2.peak_allocated < one.peak_allocated


def test_fsdp_shards_frozen_base_for_lora():
    one = estimate_memory(TrainingSetup.build("Llama-3.1-70B", "lora", seq_len=2048))
    four = estimate_memory(TrainingSetup.build("Llama-3.1-70B", "lora", seq_len=2048, gpus=4, sharding="fsdp"))
    assert four.components["weights"] < one.components["weights"] / 3


def test_paged_optimizer_is_outside_torch_counters():
    plain = estimate_memory(TrainingSetup.build("Llama-3.1-8B", "full", seq_len=1024, optimizer="adamw8bit", precision="bf16"))
    paged = estimate_memory(TrainingSetup.build("Llama-3.1-8B", "full", seq_len=1024, optimizer="paged_adamw8bit", precision="bf16"))
    assert paged.components["optimizer_states"] == plain.components["optimizer_states"] == 2 * TOTAL_8B
    assert paged.peak_allocated < plain.peak_allocated
    assert any("managed memory" in n for n in paged.notes)


def test_optimizer_state_sizes():
    sizes = {opt: estimate_memory(TrainingSetup.build("Llama-3.2-1B", "full", seq_len=256, optimizer=opt)).components["optimizer_states"]
             for opt in ("adamw", "adamw8bit", "sgd", "adafactor")}
    assert sizes["adamw"] > sizes["adamw8bit"] > sizes["adafactor"] > sizes["sgd"] == 0


def test_attention_and_cross_entropy_options():
    def peak(**kw):
        return estimate_memory(TrainingSetup.build("Llama-3.1-8B", "lora", seq_len=4096, micro_batch=2, **kw)).peak_allocated
    assert peak(attn="eager", grad_ckpt=False) > peak(attn="sdpa", grad_ckpt=False)
    assert peak(grad_ckpt=False) > peak(grad_ckpt=True)
    assert peak(cross_entropy="standard") > peak(cross_entropy="chunked") > peak(cross_entropy="fused")


def test_lora_targets_parsing():
    spec = load_model_spec("Llama-3.1-8B")
    assert parse_lora_targets("q,v", spec) == ["q_proj", "v_proj"]
    assert parse_lora_targets("qkv_proj,w2", spec) == ["q_proj", "k_proj", "v_proj", "down_proj"]
    assert len(parse_lora_targets("all-linear", spec)) == 7
    with pytest.raises(ValueError, match="matches no linear"):
        parse_lora_targets("nonsense", spec)


def test_invalid_arguments():
    with pytest.raises(ValueError, match="method"):
        estimate_memory(TrainingSetup.build("Llama-3.1-8B", "dpo", seq_len=512))
    with pytest.raises(ValueError, match=">= 1"):
        estimate_memory(TrainingSetup.build("Llama-3.1-8B", "lora", seq_len=0))
    with pytest.raises(ValueError, match="sharding"):
        estimate_memory(TrainingSetup.build("Llama-3.1-8B", "lora", seq_len=512, gpus=2, sharding="zero4"))


def test_seq_len_beyond_context_is_noted():
    assert any("max_position_embeddings" in n for n in estimate_memory(TrainingSetup.build("Llama-2-7B", "lora", seq_len=8192)).notes)


# ---------------------------------------------------------------- monotonicity

CASES = [("Llama-3.1-8B", "qlora", {}), ("Llama-3.1-8B", "lora", {"grad_ckpt": False}),
         ("Qwen2.5-7B", "full", {"attn": "eager"}), ("Mixtral-8x7B", "qlora", {}),
         ("Gemma-2-2B", "lora", {"cross_entropy": "chunked"}),
         ("Llama-3.1-70B", "full", {"gpus": 8, "sharding": "zero3"})]


def _figures(e):
    return (e.peak_allocated, e.peak_reserved, e.nvidia_smi)


def _never_less(figures):
    """Non-decreasing at every step (the peak may sit in the optimizer step, which does not depend on tokens)
    and growing overall."""
    for smaller, larger in zip(figures, figures[1:]):
        assert all(a <= b for a, b in zip(smaller, larger))
    assert all(a < b for a, b in zip(figures[0], figures[-1]))


@pytest.mark.parametrize("model,method,extra", CASES)
def test_longer_sequences_never_need_less(model, method, extra):
    _never_less([_figures(estimate_memory(TrainingSetup.build(model, method, seq_len=s, **extra)))
                 for s in (128, 512, 1024, 2048, 4096, 8192, 32768)])


@pytest.mark.parametrize("model,method,extra", CASES)
def test_larger_batches_never_need_less(model, method, extra):
    _never_less([_figures(estimate_memory(TrainingSetup.build(model, method, seq_len=1024, micro_batch=b, **extra)))
                 for b in (1, 2, 3, 4, 8, 16, 64)])


@pytest.mark.parametrize("model,method,extra", [c for c in CASES if c[1] != "full"])
def test_higher_rank_never_needs_less(model, method, extra):
    _never_less([_figures(estimate_memory(TrainingSetup.build(model, method, seq_len=1024, lora_rank=r, **extra)))
                 for r in (1, 4, 8, 16, 64, 256)])


def test_rank_and_targets_barely_move_the_peak():
    """torchtune measured a Llama-2-7B LoRA (bf16 adapters) at 15.57 GB with r8 on q,v and 17.04 GB with r64 on
    all layers and the output projection: +9.4%."""
    def peak(rank, targets):
        return estimate_memory(TrainingSetup.build("Llama-2-7B", "lora", seq_len=512, micro_batch=2, lora_rank=rank, lora_targets=targets,
                               framework="torchtune")).peak_allocated
    assert 1.05 < peak(64, "all-linear,lm_head") / peak(8, "q,v") < 1.15


# ---------------------------------------------------------------- calibration

def test_calibration_errors_within_goal():
    rows = calibration_table()
    print("\n" + format_calibration_table(rows))  # pytest -s shows the per-point table
    summary = calibration_summary(rows)
    assert summary["points"] >= 25, "most published points must stay in the fit"
    # reached: median 6.3%, max 22.4% over 29 points (a small margin above); the compiled torchtune LoRA/QLoRA
    # points are marked outside_model in the data file and are not in these figures
    assert summary["median_abs_error"] <= 0.07
    assert summary["max_abs_error"] <= 0.25


def _calibrate_bench():
    path = Path(__file__).resolve().parents[2] / "bench" / "calibrate_memory.py"
    spec = importlib.util.spec_from_file_location("calibrate_memory", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_leave_one_source_out_within_goal():
    """The honest figure: each source scored with constants fitted on the other sources only. Reached: median
    8.0%, max 22.4%, all 29 points within 25%."""
    bench = _calibrate_bench()
    points = [p for p in load_calibration_points() if p["use"]]
    table = load_constants()
    errors = sorted(abs(r["error"]) for r in bench.leave_one_source_out(points, table["fitted"], table["fit_bounds"]))
    assert len(errors) == len(points) >= 25
    assert errors[len(errors) // 2] <= 0.085
    assert errors[-1] <= 0.25


def test_points_outside_the_model_are_shown_not_fitted():
    """Marked points stay on record with their estimate and error, out of the fit, with the reason."""
    marked = [p for p in load_calibration_points() if p.get("outside_model")]
    assert len(marked) == 4
    rows = {r["id"]: r for r in calibration_table()}
    for p in marked:
        assert not p["use"] and p["reason"].startswith("outside the model")
        assert rows[p["id"]]["error"] is not None
    assert "outside the model" in format_calibration_table(list(rows.values()))


def test_stored_fit_result_matches_the_constants():
    summary = calibration_summary(calibration_table())
    stored = load_constants()["fit_result"]
    assert stored["points"] == summary["points"]
    assert stored["median_abs_error"] == pytest.approx(summary["median_abs_error"], abs=1e-3)
    assert stored["max_abs_error"] == pytest.approx(summary["max_abs_error"], abs=1e-3)


def test_fitted_constants_stay_physical():
    table = load_constants()
    for name, value in table["fitted"].items():
        low, high = table["fit_bounds"][name]
        assert low <= value <= high, name


def test_stored_constants_are_the_fit_optimum():
    """Refitting from the stored constants must not find a clearly better fit (the file is up to date)."""
    path = Path(__file__).resolve().parents[2] / "bench" / "calibrate_memory.py"
    spec = importlib.util.spec_from_file_location("calibrate_memory", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    points = [p for p in load_calibration_points() if p["use"]]
    table = load_constants()
    stored = bench.objective(table["fitted"], points)
    refit = bench.objective(bench.fit(points, table["fitted"], table["fit_bounds"], min_step=1e-2), points)
    assert math.sqrt(stored) <= math.sqrt(refit) + 0.005


def test_every_calibration_point_is_accounted_for():
    for point in load_calibration_points():
        assert point["metric"] in ("alloc", "active", "reserved", "unknown", "smi")
        assert point["use"] or point.get("reason"), f"{point['id']}: excluded without a reason"


# ---------------------------------------------------------------- against the traced grid (no torch needed)

def _grid_rows():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "trace"))
    import grid

    cached = {grid.point_key(r): r for r in json.loads(grid.OUT.read_text())["points"]}
    return grid, [dict(p, trace=cached[grid.point_key(p)]["trace"]) for p in grid.grid() if grid.point_key(p) in cached]


def test_top_layer_backward_at_small_hidden_size_matches_the_trace():
    """Qwen2.5-0.5B QLoRA 16k (bf16 adapters): the top layer's MLP backward frees down_proj's saved input and holds
    three width-sized gradients plus the incoming one; counting a whole recomputed layer plus fixed h-sized
    extras overestimated it by 9.7%."""
    grid, rows = _grid_rows()
    row = next(r for r in rows if r["model"] == "Qwen2.5-0.5B" and r["seq_len"] == 16384)
    e = estimate_memory(TrainingSetup.build(grid._spec(row["model"]), **grid._settings(row)))
    assert e.peak_phase == row["trace"]["peak_phase"].split(" layer")[0] + " top layer"
    assert abs(e.peak_allocated / row["trace"]["peak_allocated_bytes"] - 1) < 0.01


def test_analytical_model_within_5_percent_of_every_traced_point():
    """Every committed trace, the held-out ones included: points traced only after the terms were written and
    never used to write or tune one (held_out True)."""
    grid, rows = _grid_rows()
    assert len(rows) == len(grid.grid()) >= 76
    assert sum(r.get("held_out") is True for r in rows) >= 9
    for row in rows:
        e = estimate_memory(TrainingSetup.build(grid._spec(row["model"]), **grid._settings(row)))
        ratio = e.peak_allocated / row["trace"]["peak_allocated_bytes"]
        assert abs(ratio - 1) <= 0.05, (row["model"], row["method"], row["seq_len"], ratio)


def test_estimate_matches_the_peaks_measured_on_an_h200():
    """bench/gpu_peak/h200_peaks.jsonl: ../shared/tools/gpu_peak.py on an H200 (torch 2.11, transformers 5.17,
    PEFT, bitsandbytes), 32 scored points never used to write or fit a term. PEFT's fp32 input copy per adapter
    without autocast was missing before them (LoRA without checkpointing: -8% to -31%)."""

    path = Path(__file__).parents[2] / "bench" / "gpu_peak" / "compare.py"
    spec = importlib.util.spec_from_file_location("gpu_peak_compare", path)
    compare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare)
    clean, contaminated = compare.scored_points(compare.load_points(path.parent / "h200_peaks.jsonl"))
    assert len(clean) >= 32 and len(contaminated) <= 1
    allocated = {id(c): abs(compare.relative_errors(c)["allocated"]) for c in clean}
    assert statistics.median(allocated.values()) <= 0.01
    assert max(allocated.values()) <= 0.06
    assert max(allocated[id(c)] for c in clean if c["method"] != "full") <= 0.02
