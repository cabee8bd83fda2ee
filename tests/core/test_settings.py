"""Settings from the command line and the config file: a flag left out never overrides the file, a flag given
always does; every check that needs no data runs before the data is read; the approximate-tokenizer warning is
printed once."""
import json

import pytest
from conftest import prepare_in_process


def _parse(*argv):
    from pipeline.cli import build_parser

    return build_parser().parse_args(list(argv))


def _subcommand(name):
    import argparse

    from pipeline.cli import build_parser

    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def _parsers(parser=None, path=("prepare",)):
    """(command path, parser) of every command and subcommand, front ends' included."""
    import argparse

    from pipeline.cli import build_parser

    parser = parser or build_parser()
    yield " ".join(path), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


def _config_keys() -> dict[str, str]:
    """{field name: dotted key} of every config field (a name in several sections: the last one)."""
    from pydantic import BaseModel

    from pipeline.core.config import PrepareConfig

    keys = {}
    for name, field in PrepareConfig.model_fields.items():
        keys[name] = name
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            keys |= {sub: f"{name}.{sub}" for sub in field.annotation.model_fields}
    return keys


# flags named like a config field that stand for another setting, and why
NOT_CONFIG_FLAGS = {
    ("prepare estimate", "micro_batch"): "one step's micro-batch, not estimate.micro_batch's 'at most, or the largest "
                                         "that fits'",
    ("prepare show", "model"): "defaults to the model the shown run recorded",
    ("prepare show", "tokenizer"): "defaults to the tokenizer the shown run recorded",
    ("prepare show", "max_seq_len"): "defaults to the max length the shown run recorded",
    ("prepare show", "split"): "which shards of a run directory, not the split settings",
    ("prepare checkpoints sync", "keep"): "checkpoints kept on S3, not dedup.keep",
}


def test_every_flag_that_stands_for_a_config_field_defaults_to_not_given_and_shows_its_description():
    """precheck passed its own defaults (--model llama-3.1-8b, --method qlora, --epochs 3, --coverage 0.99) as
    overrides, so the config file's values were never used; help written beside a flag drifted from the
    field's description. Every parser is walked: a flag added later is checked too."""
    from pipeline.cli.args import CONFIG_FLAGS, config_field

    keys = _config_keys()
    checked, exempt = 0, set()
    for command, parser in _parsers():
        registered = parser.get_default(CONFIG_FLAGS) or {}
        for action in parser._actions:
            if action.dest in registered:
                key, flag = registered[action.dest]
                model, name = config_field(key)
                description = model.model_fields[name].description
                assert action.default is None, f"{command} {flag}: default {action.default!r} overrides the file"
                assert description, f"config {key} has no description for {command} {flag}"
                assert action.help.startswith(description.rstrip(".").replace("%", "%%") + " (config " + key), \
                    f"{command} {flag}: help is not the description of config {key}"
                checked += 1
            elif action.dest in keys and action.dest != "config":
                exempt.add((command, action.dest))
                assert (command, action.dest) in NOT_CONFIG_FLAGS, \
                    f"{command} {action.option_strings or action.dest}: named like config {keys[action.dest]} but " \
                    f"not a config flag (add_config_flag), nor in NOT_CONFIG_FLAGS"
    assert checked >= 40 and exempt == set(NOT_CONFIG_FLAGS)


def test_a_config_flag_cannot_bring_its_own_help_or_default():
    import argparse

    from pipeline.cli.args import add_config_flag

    for extra in ({"help": "my own words"}, {"default": 2}):
        with pytest.raises(TypeError):
            add_config_flag(argparse.ArgumentParser(), "--workers", "workers", **extra)


def test_every_config_field_has_a_description():
    """The CLI and docs/configuration.md show it: a field without one is a flag without help."""
    from pipeline.cli.args import config_field
    from pipeline.core.config import Section

    missing = []
    for key in _config_keys().values():
        model, name = config_field(key)
        field = model.model_fields[name]
        is_section = isinstance(field.annotation, type) and issubclass(field.annotation, Section)
        if not field.description and not is_section:
            missing.append(key)
    assert not missing, missing


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


PRECHECK_SETTINGS = {
    # config key: (value in the file, flag, value given on the command line, as the config holds it)
    "estimate.model": ("Llama-3.2-1B", "--model", "Mistral-7B", "Mistral-7B"),
    "estimate.epochs": (1.5, "--epochs", "2", 2.0),
    "lengths.coverage": (0.9, "--coverage", "0.95", 0.95),
    "estimate.method": ("lora", "--method", "full", "full"),
}


def _setting(cfg, key):
    section, name = key.split(".")
    return getattr(getattr(cfg, section), name)


@pytest.mark.parametrize("key", PRECHECK_SETTINGS)
def test_precheck_uses_the_config_file_unless_a_flag_is_given(tmp_path, monkeypatch, key):
    in_file, flag, given, expected = PRECHECK_SETTINGS[key]
    section, name = key.split(".")
    cfg_file = _write(tmp_path, "cfg.json", {section: {name: in_file}})
    assert _setting(_precheck_config(monkeypatch, "data.jsonl", "--config", cfg_file), key) == in_file
    assert _setting(_precheck_config(monkeypatch, "data.jsonl", "--config", cfg_file, flag, given), key) == expected


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


def _cli(tmp_path, *args):
    return prepare_in_process(*args, cwd=tmp_path)


def _bad_gzip(tmp_path):
    path = tmp_path / "broken.jsonl.gz"
    path.write_bytes(b"not gzip")
    return str(path)


@pytest.mark.slow  # the CLI's main(), up to a run
def test_a_bad_s3_uri_comes_before_the_tokenizer_warning(tmp_path):
    proc = _cli(tmp_path, "run", _bad_gzip(tmp_path), "--out", str(tmp_path / "run"), "--s3", "s3:/bucket")
    assert proc.returncode == 2 and "not an s3:// URI" in proc.stderr
    assert "APPROXIMATE" not in proc.stderr  # was printed before the error


@pytest.mark.slow  # the CLI's main(), up to a run
@pytest.mark.parametrize("flags, message", [
    (["--emit", "trl"], "--emit needs --shards"),
    (["--tokenizer", "no/such-tokenizer-here"], "tokenizer no/such-tokenizer-here: cannot load"),
])
def test_precheck_checks_its_settings_before_reading(tmp_path, flags, message):
    """The input cannot be read: an error about it would mean the data was read before the settings were checked
    (it was: --emit without --shards and a tokenizer that does not load failed only after the whole read)."""
    proc = _cli(tmp_path, "precheck", _bad_gzip(tmp_path), *flags)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr[-2000:]


@pytest.mark.slow  # the CLI's main(), up to a run
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
