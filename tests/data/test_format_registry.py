"""One registry of input formats: the names live in the config (core), each converter registers against
them, and the config's choices, detection and conversion all derive from that one list."""
import pytest

ROWS = {  # one row of each format, as its detector recognises it
    "sharegpt": {"conversations": [{"from": "human", "value": "Hi?"}, {"from": "gpt", "value": "Hello."}]},
    "openai": {"messages": [{"role": "user", "content": "Hi?"}, {"role": "assistant", "content": "Hello."}]},
    "alpaca": {"instruction": "Say hello.", "input": "", "output": "Hello."},
    "prompt_completion": {"prompt": "Say hello.", "completion": "Hello."},
    "qa": {"question": "Say hello?", "answer": "Hello."},
    "text": {"text": "Hello, world."},
}


def test_the_registry_holds_exactly_the_formats_the_config_names():
    from pipeline.cli.args import literal_choices
    from pipeline.core.config import INPUT_FORMATS, FormatConfig
    from pipeline.data.formats import REGISTRY

    assert set(REGISTRY) == {*INPUT_FORMATS, "mapped"}
    assert literal_choices(FormatConfig, "format") == ["auto", *INPUT_FORMATS]
    assert set(ROWS) == set(INPUT_FORMATS)


@pytest.mark.parametrize("name", ROWS)
def test_each_format_is_detected_and_converted_through_the_registry(name):
    from pipeline.data.formats import detect_format, to_record

    assert detect_format([ROWS[name]]) == name
    record = to_record(ROWS[name], name, {}, {"file": "a.jsonl", "line": 1})
    assert "Hello" in (record.get("text") or record["messages"][-1]["content"])


def test_a_converter_can_register_only_under_a_configured_name():
    from pipeline.data.formats import register

    with pytest.raises(ValueError, match="INPUT_FORMATS"):
        register("csv_chat")


def test_ties_in_detection_go_to_the_earlier_format():
    from pipeline.core.config import INPUT_FORMATS
    from pipeline.data.formats import detect_format

    both = [ROWS["alpaca"], ROWS["qa"]]  # one vote each
    assert detect_format(both) == min(("alpaca", "qa"), key=INPUT_FORMATS.index)
