"""Configs that contradict themselves: a setting that another section (or a flag) turns off would be silently
ignored, and for kvkk: strict that means personal data in the shards. Each is refused as the config is read:
exit 2, one line naming both keys (or the flag), no shard written, no record content in the message."""
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

TCKN, PHONE = "10000000146", "+90 532 123 45 67"


def _data(tmp_path):
    path = tmp_path / "crm.jsonl"
    rows = [{"instruction": f"Müşteri {i} arıyor, numarası {PHONE}, TC kimlik {TCKN}.",
             "output": f"Kayıt {i} güncellendi, teşekkürler."} for i in range(5)]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _run(tmp_path, config: str, *flags):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(config, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PREPARE_PII_SALT": "s" * 32}
    return subprocess.run([sys.executable, "-m", "pipeline.cli", "run", str(_data(tmp_path)), "--config", str(cfg),
                           "--out", str(tmp_path / "run"), "--workers", "1", "--no-lengths", "--no-estimate",
                           *flags], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def _refused(proc, tmp_path, *named):
    assert proc.returncode == 2, proc.stderr[-2000:]
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("prepare: error: ") and "Traceback" not in proc.stderr
    for name in named:
        assert name in line, line
    assert TCKN not in proc.stderr + proc.stdout and "532 123" not in proc.stderr + proc.stdout
    assert not list(tmp_path.rglob("*.parquet")), "no shard may be written"


@pytest.mark.integration  # the CLI in a subprocess
def test_strict_kvkk_with_pii_off_is_refused_before_any_shard(tmp_path):
    """Was exit 0 with the phone number and the TCKN in the shard: the runner never built the PII step that
    refuses this combination."""
    proc = _run(tmp_path, "pii:\n  enabled: false\n  kvkk: strict\n")
    _refused(proc, tmp_path, "pii.kvkk: strict", "pii.enabled")


@pytest.mark.integration  # the CLI in a subprocess
def test_no_pii_under_a_strict_config_names_the_flag(tmp_path):
    proc = _run(tmp_path, "pii:\n  kvkk: strict\n", "--no-pii")
    _refused(proc, tmp_path, "pii.kvkk: strict", "--no-pii")


@pytest.mark.parametrize("data, named", [
    ({"pii": {"enabled": False, "kvkk": "strict"}}, ("pii.kvkk", "pii.enabled")),
    ({"pii": {"enabled": False, "special": "drop"}}, ("pii.special", "pii.enabled")),
    ({"pii": {"enabled": False, "special": "quarantine"}}, ("pii.special", "pii.enabled")),
    ({"lengths": {"enabled": False, "overflow": "truncate_response"}}, ("lengths.overflow", "lengths.enabled")),
    ({"validation_inputs": ["eval.jsonl"], "dedup": {"enabled": False}}, ("validation_inputs", "dedup.enabled")),
    ({"validation_inputs": ["eval.jsonl"], "dedup": {"exact": False, "near": False}},
     ("validation_inputs", "dedup.exact", "dedup.near")),
    ({"formats": {"format": "alpaca", "mapping": {"text": "body"}}}, ("formats.mapping", "formats.format")),
    ({"quality": {"enabled": False, "threads": "drop"}}, ("quality.threads", "quality.enabled")),
    ({"quality": {"enabled": False, "signatures": "strip"}}, ("quality.signatures", "quality.enabled")),
    ({"quality": {"enabled": False, "no_words": "drop"}}, ("quality.no_words", "quality.enabled")),
    ({"quality": {"enabled": False, "canned": "cap"}}, ("quality.canned", "quality.enabled")),
])
def test_cross_section_contradictions_are_config_errors(data, named):
    """Each of these was accepted, and the first setting silently did nothing."""
    from pipeline.core.config import ConfigError, validate_config

    with pytest.raises(ConfigError) as err:
        validate_config(data, "cfg.yaml")
    message = str(err.value)
    assert message.startswith("config cfg.yaml: ") and "\n" not in message and "{" not in message
    for name in named:
        assert name in message


def test_a_contradiction_set_by_a_flag_names_the_flag():
    from pipeline.core.config import ConfigError, load_config

    for overrides, flags, flag in [
            ({"pii": {"enabled": False}}, {"pii.enabled": "--no-pii"}, "--no-pii"),
            ({"dedup": {"enabled": False}, "validation_inputs": ["e.jsonl"]},
             {"dedup.enabled": "--no-dedup", "validation_inputs": "--validation"}, "--no-dedup")]:
        with pytest.raises(ConfigError, match=flag):
            load_config(None, {**overrides, "pii": {**overrides.get("pii", {}), "kvkk": "strict"}}, flags)


def test_consistent_settings_are_accepted():
    from pipeline.core.config import validate_config

    validate_config({"pii": {"enabled": False}, "lengths": {"enabled": False}, "quality": {"enabled": False},
                     "dedup": {"enabled": False}, "formats": {"mapping": {"text": "body"}}})
    validate_config({"pii": {"kvkk": "strict", "special": "quarantine"}, "validation_inputs": ["e.jsonl"],
                     "dedup": {"near": False}, "lengths": {"overflow": "drop"}})
