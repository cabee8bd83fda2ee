import json

import pytest
from jsonschema import ValidationError

from pipeline.core.config import PrepareConfig, config_json_schema
from pipeline.core.schemas import SCHEMA_DIR, validate


def test_config_schema_file_is_generated_from_the_model():
    on_disk = json.loads((SCHEMA_DIR / "config.schema.json").read_text())
    assert on_disk == json.loads(json.dumps(config_json_schema())), "run `make schemas`"


def test_default_config_validates_and_bad_values_are_rejected():
    validate(PrepareConfig().model_dump(mode="json"), "config")
    with pytest.raises(ValidationError):
        validate({"workers": 0}, "config")
    with pytest.raises(ValidationError):
        validate({"dedup": {"threshold": 1.5}}, "config")


def test_record_schema_rejects_what_the_trainer_cannot_take():
    good = {"id": "0" * 32, "kind": "chat", "text": None, "source": {"file": "a", "line": 1}, "meta": "{}",
            "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
            "tools": None}
    validate(good, "record")
    for broken in (
        {**good, "messages": [{"role": "human", "content": "hi"}]},
        {**good, "kind": "text"},
        {**good, "source": {"file": "a", "line": 0}},
        # arguments as a JSON string: templates would render them quoted
        {**good, "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "f", "arguments": "{}"}}]}]},
    ):
        with pytest.raises(ValidationError):
            validate(broken, "record")


def test_report_tables_survive_odd_file_names():
    from pipeline.core.markdown import table

    lines = table(["file", "records"], [["in/a|b\nc.jsonl", 3]], numeric=(1,)).splitlines()
    assert lines[1] == "|---|---:|" and lines[2] == "| in/a\\|b c.jsonl | 3 |"


def test_report_schema_takes_the_plans_time_range_and_stack():
    """The plan part of report.schema.json: the time model's keys are described and checked."""
    import jsonschema

    from pipeline.core.schemas import load_schema
    from pipeline.plan.gpus import plan_training

    plan = plan_training("Llama-3.1-8B", "qlora", seq_len=2048, tokens_per_epoch=2_048_000, sequences_per_epoch=1000,
                         epochs=1, hints=False, attn="fa2", padding_ratio=0.1)
    schema = load_schema("report")
    plan_only = jsonschema.Draft202012Validator({**schema, "required": []})
    plan_only.validate({"plan": json.loads(json.dumps(plan))})
    plan["time_model"]["stack"]["attention"] = "flash"
    with pytest.raises(ValidationError):
        plan_only.validate({"plan": plan})
    plan["time_model"]["stack"]["attention"] = "fa2"
    plan["recommendation"]["hours_range"] = [1.0]
    with pytest.raises(ValidationError):
        plan_only.validate({"plan": plan})
