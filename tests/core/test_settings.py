"""Settings from the command line and the config file: a flag left out never overrides the file, a flag given
always does; every check that needs no data runs before the data is read; the approximate-tokenizer warning is
printed once."""
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT


def _parse(*argv):
    from pipeline.cli import build_parser

    return build_parser().parse_args(list(argv))


def _subcommand(name):
    import argparse

    from pipeline.cli import build_parser

    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def _config_field_names() -> set[str]:
    from pydantic import BaseModel

    from pipeline.core.config import PrepareConfig

    names = set()
    for name, field in PrepareConfig.model_fields.items():
        names.add(name)
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            names |= set(field.annotation.model_fields)
    return names


@pytest.mark.parametrize("command", ["run", "precheck"])
def test_flags_that_mirror_config_fields_default_to_not_given(command):
    """precheck passed its own defaults (--model llama-3.1-8b, --method qlora, --epochs 3, --coverage 0.99) as
    overrides, so the config file's values were never used."""
    from pipeline.cli.args import CONFIG_FLAGS

    sub = _subcommand(command)
    registered = sub.get_default(CONFIG_FLAGS)
    fields = _config_field_names()
    mirrored = [a for a in sub._actions if a.dest in fields or a.dest in registered]
    assert len(mirrored) >= 10
    for action in mirrored:
        assert action.dest in registered, f"{command} {action.dest}: not a config flag"
        assert action.default is None, f"{command} {action.dest}: default {action.default!r} overrides the file"
        assert f"(config {registered[action.dest][0]}" in action.help  # help names the setting it stands for


def _write(tmp_path, name, data) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


class _Stop(Exception):
    pass


def _precheck_config(monkeypatch, *argv):
    """The config `prepare precheck` would measure with (run_precheck stopped before any read)."""
    import pipeline.runner.precheck as precheck

    seen = {}

    def stop(cfg, *args, **kwargs):
        seen["cfg"] = cfg
        raise _Stop

    monkeypatch.setattr(precheck, "run_precheck", stop)
    args = _parse("precheck", *argv)
    with pytest.raises(_Stop):
        args.func(args)
    return seen["cfg"]


def test_precheck_uses_the_config_file_unless_a_flag_is_given(tmp_path, monkeypatch):
    cfg_file = _write(tmp_path, "cfg.json", {"estimate": {"model": "Llama-3.2-1B", "method": "lora", "epochs": 1.5},
                                             "lengths": {"coverage": 0.9}})
    cfg = _precheck_config(monkeypatch, "data.jsonl", "--config", cfg_file)
    assert (cfg.estimate.model, cfg.estimate.method, cfg.estimate.epochs, cfg.lengths.coverage) == \
        ("Llama-3.2-1B", "lora", 1.5, 0.9)
    cfg = _precheck_config(monkeypatch, "data.jsonl", "--config", cfg_file, "--model", "Mistral-7B",
                           "--method", "full", "--epochs", "2", "--coverage", "0.95")
    assert (cfg.estimate.model, cfg.estimate.method, cfg.estimate.epochs, cfg.lengths.coverage) == \
        ("Mistral-7B", "full", 2.0, 0.95)


def test_run_uses_the_config_file_unless_a_flag_is_given(tmp_path):
    """The file's inputs too: INPUT was required, so a config's inputs could never be used from the CLI."""
    from pipeline.cli import config_from_args

    cfg_file = _write(tmp_path, "cfg.json", {
        "inputs": ["a.jsonl"], "out": "runs/x", "workers": 3, "estimate": {"model": "Llama-3.2-1B", "lora_rank": 8},
        "read": {"skip_unreadable": True}, "pii": {"enabled": False}, "s3_check": False})
    cfg = config_from_args(_parse("run", "--config", cfg_file))
    assert (cfg.inputs, cfg.out, cfg.workers, cfg.estimate.model, cfg.estimate.lora_rank) == \
        (["a.jsonl"], "runs/x", 3, "Llama-3.2-1B", 8)
    assert cfg.read.skip_unreadable and not cfg.pii.enabled and not cfg.s3_check
    cfg = config_from_args(_parse("run", "b.jsonl", "--config", cfg_file, "--out", "runs/y", "--workers", "1",
                                  "--model", "Mistral-7B", "--lora-rank", "4", "--no-dedup"))
    assert (cfg.inputs, cfg.out, cfg.workers, cfg.estimate.model, cfg.estimate.lora_rank, cfg.dedup.enabled) == \
        (["b.jsonl"], "runs/y", 1, "Mistral-7B", 4, False)


def test_no_inputs_anywhere_is_one_line():
    from pipeline.cli import config_from_args
    from pipeline.cli.errors import UserError

    with pytest.raises(UserError, match="no inputs"):
        config_from_args(_parse("run"))


def test_a_bad_flag_value_names_the_flag(tmp_path):
    from pipeline.cli import config_from_args
    from pipeline.core.config import ConfigError

    with pytest.raises(ConfigError, match=r"workers \(--workers\)"):
        config_from_args(_parse("run", "a.jsonl", "--workers", "0"))


@pytest.mark.parametrize("mapping, message", [
    ({"messages": "dialog", "rol": "speaker"}, "unknown mapping key 'rol'; did you mean 'role'?"),
    ({"prompt": "question"}, "a mapping names the content"),
])
def test_a_mapping_typo_is_refused_with_the_config(mapping, message):
    """Was found only after the whole read: every row quarantined as bad_mapping, or the key ignored."""
    from pipeline.core.config import ConfigError, validate_config

    with pytest.raises(ConfigError, match="formats.mapping") as err:
        validate_config({"formats": {"mapping": mapping}}, "cfg.yaml")
    assert message in str(err.value)


def _cli(tmp_path, *args, timeout=300):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _bad_gzip(tmp_path):
    path = tmp_path / "broken.jsonl.gz"
    path.write_bytes(b"not gzip")
    return str(path)


@pytest.mark.integration  # the CLI in a subprocess
def test_a_bad_s3_uri_comes_before_the_tokenizer_warning(tmp_path):
    proc = _cli(tmp_path, "run", _bad_gzip(tmp_path), "--out", str(tmp_path / "run"), "--s3", "s3:/bucket")
    assert proc.returncode == 2 and "not an s3:// URI" in proc.stderr
    assert "APPROXIMATE" not in proc.stderr  # was printed before the error


@pytest.mark.integration  # the CLI in a subprocess
@pytest.mark.parametrize("flags, message", [
    (["--emit", "trl"], "--emit needs --shards"),
    (["--tokenizer", "no/such-tokenizer-here"], "tokenizer no/such-tokenizer-here: cannot load"),
])
def test_precheck_checks_its_settings_before_reading(tmp_path, flags, message):
    """The input cannot be read: an error about it would mean the data was read before the settings were checked
    (it was: --emit without --shards and a tokenizer that does not load failed only after the whole read)."""
    proc = _cli(tmp_path, "precheck", _bad_gzip(tmp_path), *flags)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr[-2000:]


@pytest.mark.integration  # the CLI in a subprocess
def test_precheck_skips_unreadable_inputs_and_warns_once(tmp_path):
    data = tmp_path / "chat.jsonl"
    data.write_text("".join(json.dumps({"instruction": f"Question {i} about the weather today",
                                        "output": f"Answer {i}: it will be sunny and warm."}) + "\n"
                            for i in range(10)), encoding="utf-8")
    proc = _cli(tmp_path, "precheck", str(data), _bad_gzip(tmp_path), "--skip-unreadable")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "skipped 1 unreadable input(s): " in proc.stdout and "broken.jsonl.gz" in proc.stdout
    assert (proc.stdout + proc.stderr).count("APPROXIMATE") == 1  # was 2: the lengths and the plan
    proc = _cli(tmp_path, "precheck", str(data), _bad_gzip(tmp_path))
    assert proc.returncode == 2 and "broken.jsonl.gz" in proc.stderr
