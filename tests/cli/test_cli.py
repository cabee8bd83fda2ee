"""The `prepare` command's shape: choices come from the config's Literals, front ends plug in through entry
points (the library never imports flows/), and `estimate --trace` traces every stack the tracer supports."""
import ast
import json
import typing
from pathlib import Path

import pytest
from conftest import ROOT

pytestmark = pytest.mark.integration

TINY = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256, "tie_word_embeddings": False,
        "max_position_embeddings": 4096}


def _subparsers(parser):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield name, sub
                yield from _subparsers(sub)


def test_flag_choices_are_the_config_literals():
    """--method, --attn, --optimizer, --framework, --cross-entropy: one list, the config's, in every command."""
    from pipeline.cli import build_parser
    from pipeline.core.config import EstimateConfig

    checked = set()
    for command, sub in _subparsers(build_parser()):
        for action in sub._actions:
            field = EstimateConfig.model_fields.get(action.dest)
            if action.choices is None or field is None:
                continue
            literal = next(a for a in (field.annotation, *typing.get_args(field.annotation))
                           if typing.get_origin(a) is typing.Literal)
            assert list(action.choices) == list(typing.get_args(literal)), (command, action.dest)
            checked.add((command, action.dest))
    assert {("run", "method"), ("precheck", "method"), ("estimate", "method"), ("estimate", "framework"),
            ("run", "cross_entropy"), ("precheck", "optimizer")} <= checked


def test_the_library_never_imports_flows_and_serve_is_a_plugin():
    for path in (ROOT / "pipeline").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            assert not any(n.split(".")[0] in ("flows", "prefect", "prefect_dask") for n in names), path
    from importlib.metadata import entry_points

    from pipeline.cli import build_parser

    assert "serve" in {ep.name for ep in entry_points(group="prepare.commands")}
    assert "serve" in dict(_subparsers(build_parser()))


def test_a_policy_error_is_recognised_by_its_class():
    from pipeline.cli import EXIT_POLICY, describe_error
    from pipeline.data.pii import PiiPolicyError

    class PiiPolicyErrorLookalike(Exception):
        pass

    PiiPolicyErrorLookalike.__name__ = "PiiPolicyError"
    assert describe_error(PiiPolicyError("3 findings remain")) == ("kvkk strict policy: 3 findings remain",
                                                                   EXIT_POLICY)
    assert describe_error(PiiPolicyErrorLookalike("x"))[0] is None  # a bug of the same name is not a policy


@pytest.mark.parametrize("flags", [["--framework", "unsloth"], ["--framework", "axolotl"],
                                   ["--cross-entropy", "chunked"], ["--framework", "torchtune",
                                                                    "--cross-entropy", "bf16"]])
def test_estimate_trace_runs_every_stack_and_loss(tmp_path, capsys, flags):
    """The tracer follows each framework preset and loss path; the CLI refused all but hf with the HF loss."""
    pytest.importorskip("torch", reason="the tracer needs the 'trace' extra")
    pytest.importorskip("peft", reason="the tracer needs the 'trace' extra")
    from pipeline.cli import main

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(TINY))
    rc = main(["estimate", "--model", str(cfg), "--method", "lora", "--seq-len", "64", "--json", "--trace", *flags])
    out = capsys.readouterr()
    assert rc == 0, out.err
    trace = json.loads(out.out)["trace"]
    assert trace["peak_allocated_bytes"] > 0
    asked = dict(zip(flags[::2], flags[1::2]))
    if "--framework" in asked:
        assert trace["settings"]["framework"] == asked["--framework"]
    if "--cross-entropy" in asked:
        assert trace["settings"]["cross_entropy"] == asked["--cross-entropy"]


def test_estimate_trace_of_several_gpus_is_one_line(tmp_path, capsys):
    from pipeline.cli import main
    from pipeline.plan.trace.run import trace_available

    if not trace_available():
        pytest.skip("the tracer needs the 'trace' extra")
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(TINY))
    rc = main(["estimate", "--model", str(cfg), "--method", "lora", "--seq-len", "64", "--gpus", "2", "--trace"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err[-1].startswith("prepare: error: --trace traces one GPU")
