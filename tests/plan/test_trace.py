"""The VRAM tracer (pipeline/plan/trace/, `prepare estimate --trace`): byte counts against hand computations on a
tiny 2-layer Llama config, the storage accounting itself, and the CLI. Needs the 'trace' extra (torch, peft);
`make test` installs it. Without torch only the tests of the torch-free paths run."""
from __future__ import annotations

import functools
import json
import math
import subprocess
import sys

import pytest

from pipeline.plan.memory import estimate_memory, load_constants, nf4_bytes_per_param, resolve_constants
from pipeline.plan.setup import TrainingSetup

pytestmark = pytest.mark.slow

TINY = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256, "tie_word_embeddings": False,
        "max_position_embeddings": 4096}
H, I, L, HEADS, KV, V = 64, 128, 2, 4, 2, 256
HD = H // HEADS
# (in, out) of the linears of one decoder layer
LINEARS = [(H, HEADS * HD), (H, KV * HD), (H, KV * HD), (HEADS * HD, H), (H, I), (H, I), (I, H)]
PARAMS = 2 * V * H + L * (sum(i * o for i, o in LINEARS) + 2 * H) + H   # embed, lm_head, layers, final norm
ROPE_BUFFER = 2 * 4 * HD // 2                                   # inv_freq and original_inv_freq, fp32
R = 16
LORA = L * sum(R * (i + o) for i, o in LINEARS)
LORA_TENSORS = L * len(LINEARS) * 2                                       # A and B


def _needs_torch():
    pytest.importorskip("torch", reason="the tracer needs the 'trace' extra: pip install -e '.[trace]'")
    pytest.importorskip("peft", reason="the tracer needs the 'trace' extra: pip install -e '.[trace]'")


def _trace(method, **kw):
    _needs_torch()
    kw.setdefault("seq_len", 16)
    kw.setdefault("micro_batch", 2)
    return _cached_trace(method, tuple(sorted(kw.items())))


@functools.lru_cache(maxsize=None)
def _cached_trace(method, kw):
    from pipeline.plan.trace.run import trace_step

    return trace_step("tiny", method, config=TINY, block=1, **dict(kw))


def test_lora_sizes_are_the_hand_count():
    r = _trace("lora")
    assert r.sizes["parameters"] == 2 * PARAMS + 4 * LORA + ROPE_BUFFER        # bf16 base, fp32 adapters
    assert r.sizes["trainable_parameters"] == r.sizes["gradients"] == 4 * LORA
    # fused AdamW: exp_avg and exp_avg_sq in fp32 per adapter, and one fp32 step counter per tensor
    assert r.sizes["optimizer_state"] == 2 * 4 * LORA + 4 * LORA_TENSORS
    assert sum(r.at_peak.values()) == r.peak_allocated
    assert r.at_peak["parameters"] == r.sizes["parameters"]
    assert r.at_peak["optimizer_state"] == r.sizes["optimizer_state"]   # second step: states exist throughout


def test_lora_checkpointed_forward_keeps_what_the_code_saves():
    """At the end of the forward pass (loss returned) with activation checkpointing, what is live beyond the
    weights and optimizer states is, by reading the code: each layer's input (bf16), rotary cos/sin and the
    positions, the final RMSNorm's fp32 input copy and its rsqrt, and from the HF loss the fp32 log-softmax
    of all logits, the shifted labels and the two scalars of nll_loss. The bf16 logits and their fp32 copy
    are freed once the loss is computed."""
    B, S = 2, 16
    r = _trace("lora", seq_len=S, micro_batch=B)
    end = r.at_forward_end
    assert end["gradients"] == 0
    assert end["activations"] == (L * B * S * H * 2       # checkpointed layer inputs
                                  + 2 * S * HD * 2        # cos, sin (bf16, one row shared by the batch)
                                  + S * 8                 # positions (int64)
                                  + B * S * H * 4         # final norm: fp32 copy of its input
                                  + B * S * 4)            # final norm: rsqrt of the variance
    assert end["logits_loss"] == B * S * V * 4 + B * S * 8 + 2 * 4
    # the forward peak itself holds bf16 logits + their fp32 upcast + log-softmax: 10 bytes per logit
    loss_phase = r.phases["loss (lm_head + cross-entropy)"]
    assert loss_phase >= r.sizes["parameters"] + r.sizes["optimizer_state"] + 10 * B * S * V


def test_full_mixed_precision_sizes():
    r = _trace("full", precision="mixed")
    tensors = 2 + L * (len(LINEARS) + 2) + 1
    assert r.sizes["parameters"] == 4 * PARAMS + ROPE_BUFFER
    assert r.sizes["gradients"] == 4 * PARAMS
    assert r.sizes["optimizer_state"] == 8 * PARAMS + 4 * tensors
    r16 = _trace("full", precision="bf16", optimizer="sgd")
    assert r16.sizes["parameters"] == 2 * PARAMS + ROPE_BUFFER
    assert r16.sizes["optimizer_state"] == 0


def test_qlora_weights_are_nf4_sized_and_the_rest_fp32():
    r = _trace("qlora")
    per_param = nf4_bytes_per_param(resolve_constants(load_constants(), "hf"), True)
    nf4 = L * sum(math.ceil(i * o * per_param) for i, o in LINEARS)
    others = 4 * (2 * V * H + L * 2 * H + H)  # prepare_model_for_kbit_training casts them to fp32
    assert r.sizes["parameters"] == nf4 + others + 4 * LORA + ROPE_BUFFER
    assert any("NF4" in step and "modelled" in step for step in r.code_path)
    assert r.notes and "QLoRA" in r.notes[0]


def test_no_checkpointing_keeps_more_and_eager_keeps_the_scores():
    ckpt, plain = _trace("lora"), _trace("lora", grad_ckpt=False)
    assert plain.at_forward_end["activations"] > 3 * ckpt.at_forward_end["activations"]
    B, S = 2, 64
    sdpa, eager = _trace("lora", seq_len=S, micro_batch=B), _trace("lora", seq_len=S, micro_batch=B, attn="eager")
    # eager attention keeps per layer at least the fp32 softmax (4 B per score) for backward; SDPA keeps none
    scores = B * HEADS * S * S
    assert eager.phases["backward, layer 1 (recompute)"] - sdpa.phases["backward, layer 1 (recompute)"] >= 4 * scores


def test_storage_accounting_views_once_frees_seen():
    _needs_torch()
    import torch

    from pipeline.plan.trace.tracker import Tracker

    t = Tracker(1)
    with t:
        a = torch.empty(100, 10, device="meta")           # 4000 bytes
        views = [a[1:], a.t(), a.view(1000)]              # same storage: nothing new
        b = a + 1                                         # 4000 more
        del a, views
        c = torch.empty(5, device="meta", dtype=torch.bfloat16)
    totals, running = [], 0
    for _, delta, _ in t.events:
        running += delta
        totals.append(running)
    assert max(totals) == 8000
    assert totals[-1] == 4000 + 10                        # a freed, b and c live
    del b, c


def test_two_traces_in_one_process_share_no_state():
    """Each trace keeps its tracker and autocast emulation to itself: a second trace leaves the first one's
    storages as they were, and torch.autocast is torch's own again after each."""
    _needs_torch()
    import torch

    from pipeline.plan.trace.run import trace_step

    real_autocast = torch.autocast
    first = trace_step("tiny", "lora", config=TINY, block=1, seq_len=16, micro_batch=2)
    first_live = first.explain_live("end_live", skip=())
    assert torch.autocast is real_autocast
    second = trace_step("tiny", "full", config=TINY, block=1, seq_len=32, micro_batch=1, optimizer="sgd",
                        precision="bf16")
    assert torch.autocast is real_autocast
    assert second.replay.tracker is not first.replay.tracker
    assert first.explain_live("end_live", skip=()) == first_live
    assert first_live != second.explain_live("end_live", skip=())
    # the inspection adds up to what the trace reports
    assert sum(int(line.split()[1]) for line in first_live) == sum(first.at_forward_end.values())


def test_analytical_model_against_trace_on_a_small_config():
    """Not equal by construction: the analytical model's constants are fitted on published peaks, the trace
    counts this code path. The figures are reported; a gross disagreement (a term off by a factor) fails."""
    r = _trace("lora", seq_len=256, micro_batch=2)
    from pipeline.core.models import spec_from_config

    e = estimate_memory(TrainingSetup.build(spec_from_config(TINY, "tiny"), "lora", seq_len=256, micro_batch=2))
    ratio = e.peak_allocated / r.peak_allocated
    assert 0.5 < ratio < 2.0, ratio


def _cli(*argv, env_block_torch=False):
    pre = "import sys; sys.modules['torch'] = None; " if env_block_torch else "import sys; "
    code = pre + ("from pipeline.cli import main; rc = main(sys.argv[1:]); "
                  "print('TORCH' if 'torch' in sys.modules and sys.modules['torch'] is not None else 'NOTORCH', "
                  "file=sys.stderr); sys.exit(rc)")
    return subprocess.run([sys.executable, "-c", code, "estimate", *argv], capture_output=True, text=True,
                          timeout=300)


def test_estimate_without_trace_never_imports_torch():
    proc = _cli("--model", "Llama-3.1-8B", "--method", "lora", "--seq-len", "512", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "trace" not in json.loads(proc.stdout)
    assert proc.stderr.strip().endswith("NOTORCH")


def test_estimate_trace_without_the_extra_is_one_line():
    proc = _cli("--model", "Llama-3.1-8B", "--method", "lora", "--seq-len", "512", "--trace", env_block_torch=True)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines[0] == "prepare: error: the tracer needs the 'trace' extra: pip install -e '.[trace]' " \
                       "(torch, peft)"
    assert "Traceback" not in proc.stderr


def _main(capsys, *argv):
    from pipeline.cli import main

    rc = main(["estimate", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_estimate_trace_json_adds_a_field_and_keeps_the_contract(tmp_path, capsys):
    _needs_torch()
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(TINY))
    rc, out, err = _main(capsys, "--model", str(cfg), "--method", "qlora", "--seq-len", "32", "--trace", "--json")
    assert rc == 0, err
    out = json.loads(out)
    for key in ("peak_allocated_gib", "peak_reserved_gib", "nvidia_smi_gib", "components", "params", "settings"):
        assert key in out
    trace = out["trace"]
    assert trace["peak_allocated_bytes"] == sum(trace["at_peak_bytes"].values())
    assert trace["peak_phase"] and trace["code_path"]
    rc, out, err = _main(capsys, "--model", str(cfg), "--method", "lora", "--seq-len", "32", "--trace")
    assert rc == 0, err
    assert "traced peak allocated" in out and "PEFT" in out


def test_trace_refuses_what_it_does_not_run(capsys):
    _needs_torch()
    rc, _, err = _main(capsys, "--model", "Llama-3.1-8B", "--method", "lora", "--seq-len", "512", "--trace",
                       "--gpus", "2")
    assert rc == 2 and "not traced: --gpus > 1" in err
    rc, _, err = _main(capsys, "--model", "Llama-3.1-8B", "--method", "lora", "--seq-len", "512", "--trace",
                       "--optimizer", "adamw8bit")
    assert rc == 2 and err.count("\n") == 1 and "not traced" in err


def test_committed_grid_is_whole_and_comparable():
    """bench/trace/grid.json (the traced grid): every point's categories add up to its peak, its parameters match
    the analytical model's weight bytes for the bf16 LoRA points (same architecture read from config.json, two
    independent counts), and the comparison prints (no torch needed)."""
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "trace"))
    import grid

    rows = json.loads(grid.OUT.read_text())["points"]
    families = {row["family"].split()[0] for row in rows}
    assert len(families) >= 10, families
    for row in rows:
        trace = row["trace"]
        assert sum(trace["at_peak_bytes"].values()) == trace["peak_allocated_bytes"]
        if row["method"] == "lora":
            e = estimate_memory(TrainingSetup.build(grid._spec(row["model"]), **grid._settings(row)))
            traced = trace["at_peak_bytes"]["parameters"]
            analytic = e.components["weights"] + e.components["lora_adapters"]
            assert abs(traced / analytic - 1) < 0.01, (row["model"], traced, analytic)
    assert "median |diff|" in grid.compare(rows)


def test_precheck_trace_adds_the_traced_step(tmp_path, capsys):
    _needs_torch()
    from pathlib import Path

    from pipeline.cli import main

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(TINY))
    data = Path(__file__).resolve().parents[2] / "sample_data" / "support_en_openai.jsonl"
    rc = main(["precheck", str(data), "--model", str(cfg), "--method", "lora", "--trace", "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    result = json.loads(out.out)
    assert result["trace"]["settings"]["seq_len"] == result["max_seq_len"]
    assert result["trace"]["peak_allocated_bytes"] > 0 and "memory" in result


@pytest.mark.parametrize("name", ["Llama-3.2-1B", "Qwen2.5-0.5B", "Gemma-2-2B", "Phi-3-mini"])
def test_builtin_model_rebuilt_from_its_spec_has_the_published_size(name):
    """The tracer rebuilds a built-in model's config.json from data/models.json; built by transformers on the
    meta device it has the parameter count of the model card."""
    _needs_torch()
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from pipeline.core.models import builtin_spec
    from pipeline.plan.trace.model_config import hf_config_dict

    cfg, _ = hf_config_dict(name)
    cfg = dict(cfg)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(cfg.pop("model_type"), **cfg))
    # tied embeddings are one parameter: count each once
    total = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    assert total == builtin_spec(name).published_params
