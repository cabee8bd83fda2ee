"""Model specs: parameter counts from the architecture against published totals, and config loading."""
import json
import sys
import types

import pytest

from pipeline.core.models import (
    builtin_models,
    builtin_spec,
    load_model_spec,
    param_breakdown,
    param_count,
    spec_from_config,
)

# Totals as the model cards state them (rounded there), independent of the data file's exact figures.
MODEL_CARD_TOTALS = {
    "Llama-2-7B": 6.74e9, "Llama-2-13B": 13.0e9, "Llama-2-70B": 69.0e9,
    "Llama-3.1-8B": 8.03e9, "Llama-3.1-70B": 70.6e9, "Llama-3.2-1B": 1.24e9, "Llama-3.2-3B": 3.21e9,
    "Mistral-7B": 7.24e9, "Mixtral-8x7B": 46.7e9,
    "Qwen2.5-0.5B": 0.49e9, "Qwen2.5-1.5B": 1.54e9, "Qwen2.5-3B": 3.09e9, "Qwen2.5-7B": 7.61e9,
    "Qwen2.5-14B": 14.7e9, "Qwen2.5-32B": 32.5e9, "Qwen2.5-72B": 72.7e9,
    "Gemma-2-2B": 2.61e9, "Gemma-2-9B": 9.24e9, "Gemma-2-27B": 27.2e9, "Phi-3-mini": 3.8e9,
}

LLAMA_31_8B_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
    "tie_word_embeddings": False, "max_position_embeddings": 131072, "rms_norm_eps": 1e-5,
}


@pytest.mark.parametrize("name,published", sorted(MODEL_CARD_TOTALS.items()))
def test_param_count_matches_model_card(name, published):
    # Qwen2.5-32B's card says 32.5B while its safetensors hold 32.76B: hence 1.5%, not 1%
    assert param_count(load_model_spec(name)) == pytest.approx(published, rel=0.015)


@pytest.mark.parametrize("name", builtin_models())
def test_param_count_matches_safetensors_total(name):
    spec = builtin_spec(name)
    assert spec.published_params, f"{name} lacks published_params"
    assert param_count(spec) == pytest.approx(spec.published_params, rel=0.01)


def test_every_required_model_is_built_in():
    required = ["Llama-2-7B", "Llama-2-13B", "Llama-2-70B", "Llama-3.1-8B", "Llama-3.1-70B", "Llama-3.2-1B",
                "Llama-3.2-3B", "Mistral-7B", "Mixtral-8x7B", "Qwen2.5-0.5B", "Qwen2.5-1.5B", "Qwen2.5-3B",
                "Qwen2.5-7B", "Qwen2.5-14B", "Qwen2.5-32B", "Qwen2.5-72B", "Gemma-2-2B", "Gemma-2-9B",
                "Gemma-2-27B", "Phi-3-mini"]
    assert set(required) <= set(builtin_models())


def test_moe_active_parameters():
    mixtral = load_model_spec("Mixtral-8x7B")
    parts = param_breakdown(mixtral)
    assert parts["active"] == pytest.approx(12.9e9, rel=0.01)  # Mistral's stated 12.9B active per token
    assert parts["total"] > 3.5 * parts["active"]


def test_hand_count_llama_2_7b():
    h, i, L, V = 4096, 11008, 32, 32000
    per_layer = 4 * h * h + 3 * h * i + 2 * h  # q,k,v,o + gate,up,down + two RMSNorms
    assert param_count(load_model_spec("Llama-2-7B")) == L * per_layer + 2 * V * h + h


@pytest.mark.parametrize("alias", ["meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b",
                                   "LLAMA-3.1-8B", "meta-llama/Meta-Llama-3.1-8B-Instruct"])
def test_aliases_case_insensitive(alias):
    assert load_model_spec(alias).name == "Llama-3.1-8B"


@pytest.mark.parametrize("alias", ["Llama-3-8B", "meta-llama/Meta-Llama-3-8B-Instruct", "llama3-8b"])
def test_llama3_is_not_taken_for_llama31(alias):
    # same shapes, but Llama 3 was trained to 8k positions: taking it for 3.1 allowed a 128k length cap
    spec = load_model_spec(alias)
    assert spec.name == "Llama-3-8B" and spec.max_position_embeddings == 8192


def test_config_file_of_any_name(tmp_path):
    path = tmp_path / "my model settings.json"
    path.write_text(json.dumps(LLAMA_31_8B_CONFIG))
    spec = load_model_spec(str(path))
    assert param_count(spec) == param_count(load_model_spec("Llama-3.1-8B"))
    assert spec.num_key_value_heads == 8 and spec.max_position_embeddings == 131072


def test_folder_with_config_json(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_31_8B_CONFIG))
    assert param_count(load_model_spec(tmp_path)) == 8_030_261_248


def test_folder_without_config_json(tmp_path):
    with pytest.raises(ValueError, match="no config.json"):
        load_model_spec(tmp_path)


def test_broken_config_file(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="cannot read model config"):
        load_model_spec(path)


def test_gpt2_style_keys():
    # GPT-2 small: LayerNorms with bias, biased linears, plain GELU MLP, learned positions, tied: 124,439,808
    cfg = {"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "vocab_size": 50257, "n_positions": 1024}
    assert param_count(spec_from_config(cfg)) == 124_439_808


def test_moe_config_keys():
    cfg = {"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000, "tie_word_embeddings": False,
           "num_local_experts": 8, "num_experts_per_tok": 2}
    assert param_count(spec_from_config(cfg)) == 46_702_792_704


def test_multimodal_text_config_is_used():
    cfg = {"model_type": "llava", "text_config": LLAMA_31_8B_CONFIG}
    assert param_count(spec_from_config(cfg)) == 8_030_261_248


def test_missing_keys_and_unsupported_attention():
    with pytest.raises(ValueError, match="lacks"):
        spec_from_config({"hidden_size": 64})
    with pytest.raises(ValueError, match="latent attention"):
        spec_from_config({**LLAMA_31_8B_CONFIG, "kv_lora_rank": 512})


def test_unknown_name_lists_built_ins():
    with pytest.raises(ValueError, match="Llama-3.1-8B"):
        load_model_spec("no-such-model")


def _fake_transformers(monkeypatch, from_pretrained):
    module = types.ModuleType("transformers")
    module.AutoConfig = types.SimpleNamespace(from_pretrained=from_pretrained)
    monkeypatch.setitem(sys.modules, "transformers", module)


def test_hub_id_online_uses_autoconfig(monkeypatch):
    _fake_transformers(monkeypatch, lambda repo: types.SimpleNamespace(to_dict=lambda: dict(LLAMA_31_8B_CONFIG)))
    spec = load_model_spec("someorg/custom-8b")
    assert spec.name == "someorg/custom-8b" and param_count(spec) == 8_030_261_248


def test_hub_id_offline_is_one_clear_error(monkeypatch):
    def offline(repo):
        raise OSError("We couldn't connect to 'https://huggingface.co'")
    _fake_transformers(monkeypatch, offline)
    with pytest.raises(ValueError, match="offline or gated"):
        load_model_spec("someorg/custom-8b")


def test_models_command_lists_every_builtin_with_its_aliases():
    import subprocess
    import sys

    from conftest import ROOT

    proc = subprocess.run([sys.executable, "-m", "pipeline.cli", "models", "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert set(rows) == set(builtin_models())
    assert "llama3.1-8b" in rows["Llama-3.1-8B"]["aliases"] and rows["Llama-3-8B"]["max_position_embeddings"] == 8192
    assert all(load_model_spec(a).name == n for n, r in rows.items() for a in r["aliases"])
