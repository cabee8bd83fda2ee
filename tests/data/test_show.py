"""`prepare show`: records as the trainer sees them (template rendered, trainable tokens marked, the max-length
cut), on data files, shards and run directories; the zero-trainable check fails a run that would train nothing."""
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import SAMPLE_DATA

from pipeline.cli import main
from pipeline.core.config import LengthsConfig, PrepareConfig
from pipeline.data.lengths.step import LengthStep
from pipeline.data.lengths.tokenizer.hf_handle import HFHandle
from pipeline.data.lengths.tokenizer.load import load_tokenizer
from pipeline.data.lengths.tokenizer.resolve import resolve_tokenizer
from pipeline.data.show import format_view, view_record
from pipeline.runner import run_prepare

TEMPLATES = Path(__file__).parents[1] / "fixtures" / "templates"
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
                                            "parameters": {"type": "object",
                                                           "properties": {"city": {"type": "string"}}}}}
RECORDS = [
    {"id": "a", "kind": "chat", "messages": [{"role": "system", "content": "Kısa cevap ver."},
                                              {"role": "user", "content": "Merhaba, kargom nerede? 😀"},
                                              {"role": "assistant", "content": "Yarın teslim edilecek."},
                                              {"role": "user", "content": "Teşekkürler"},
                                              {"role": "assistant", "content": "Rica ederim!"}]},
    {"id": "b", "kind": "chat", "tools": [WEATHER], "messages": [
        {"role": "user", "content": "Погода в Москве?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "call00001", "type": "function", "function": {
            "name": "get_weather", "arguments": {"city": "Moscow"}}}]},
        {"role": "tool", "content": "{\"temp\": -3}", "tool_call_id": "call00001", "name": "get_weather"},
        {"role": "assistant", "content": "Минус три."}]},
    {"id": "c", "kind": "instruction", "messages": [{"role": "user", "content": "Say hi"},
                                                     {"role": "assistant", "content": "Hi!"}]},
    {"id": "d", "kind": "text", "text": "Plain document text for language modelling."},
]


def handles(tmp_path):
    default = load_tokenizer(resolve_tokenizer(None, None))
    jinja = HFHandle(resolve_tokenizer(None, None), tmp_path)      # the same template through Jinja
    jinja.builtin_template = False
    qwen = HFHandle(resolve_tokenizer(None, None), tmp_path,      # a real template without generation blocks
                    chat_template=(TEMPLATES / "qwen2.5-instruct.jinja").read_text())
    tekken = load_tokenizer(resolve_tokenizer("tekken", None))
    return {"default": default, "jinja": jinja, "qwen": qwen, "tekken": tekken}


def test_the_marked_tokens_are_the_counted_ones(tmp_path):
    """The view is the counting's own rendering: its tokens and its trainable tokens are exactly what the run
    counts, for every template path and record kind (tools included)."""
    for name, handle in handles(tmp_path).items():
        counts = handle.measure(RECORDS)
        for rec, (tokens, trainable) in zip(RECORDS, counts):
            view = view_record(handle, rec)
            assert (view.tokens, sum(view.trainable)) == (tokens, trainable), (name, rec["id"])
            assert trainable > 0


def test_brackets_mark_exactly_the_answers(tmp_path):
    handle = load_tokenizer(resolve_tokenizer(None, None))
    out = format_view(view_record(handle, RECORDS[0]), None, color=False)
    marked = [part.split("]]")[0] for part in out.split("[[")[1:]]
    assert marked == ["Yarın teslim edilecek.</s>", "Rica ederim!</s>"]
    assert out.startswith("<s>[INST] Kısa cevap ver.\n\nMerhaba, kargom nerede? 😀 [/INST]")
    tools = format_view(view_record(handle, RECORDS[1]), None, color=False)
    assert tools.startswith('<s>[AVAILABLE_TOOLS] [{"type": "function"')   # the tool definitions are rendered
    runs = [part.split("]]")[0] for part in tools.split("[[")[1:]]
    # the call is trained on (the token "][" straddles the prompt's end: it counts, as in transformers' mask)
    assert runs[0].startswith('][TOOL_CALLS] [{"id": "call00001"') and runs[1] == "Минус три.</s>"


def test_the_cut_falls_after_max_seq_len_tokens(tmp_path):
    handle = load_tokenizer(resolve_tokenizer(None, None))
    view = view_record(handle, RECORDS[0])
    for cut in (5, view.tokens // 2, view.tokens - 1):
        out = format_view(view, cut, color=False)
        before = out.split(f"<<<CUT max_seq_len={cut}>>>")[0].replace("[[", "").replace("]]", "")
        assert before == "".join(view.pieces[:cut])
        assert view.trainable_within(cut) == sum(view.trainable[:cut])
    assert "<<<CUT" not in format_view(view, view.tokens, color=False)
    last = view.tokens - 1
    colored = format_view(view, last, color=True)   # trainable green, past the cut dimmed
    assert "\x1b[1;32m" in colored and "\x1b[2;32m" in colored and f"✂ max_seq_len {last}" in colored
    assert "[[" not in colored


def test_show_on_sample_data_prints_templates_counts_and_checks(capsys):
    assert main(["show", str(SAMPLE_DATA / "support_en_openai.jsonl"), "--n", "2", "--max-seq-len", "4096"]) == 0
    out = capsys.readouterr().out
    headers = [line for line in out.splitlines() if line.startswith("── record")]
    assert len(headers) == 2 and all("tokens" in h and "trainable" in h for h in headers)
    assert out.count("[[") >= 2 and "[INST]" in out
    assert "checked 111 records" in out and "0 with no trainable token" in out


def test_a_run_whose_answers_lie_beyond_the_cut_fails_unless_allowed(tmp_path, capsys):
    """The "all labels are -100" trap: every answer comes after max_seq_len tokens of prompt."""
    inputs = tmp_path / "in"
    inputs.mkdir()
    prompt = "Please read the whole order history below before you answer. " * 12
    (inputs / "long.jsonl").write_text("".join(
        json.dumps({"instruction": f"{prompt} Order {i}: where is it?", "output": f"Order {i} ships tomorrow."}) + "\n"
        for i in range(6)))
    cfg = PrepareConfig(inputs=[str(inputs)], out=str(tmp_path / "run"), workers=1)
    cfg.pii.enabled = cfg.estimate.enabled = False
    cfg.lengths.max_seq_len = 64          # kept (overflow "keep"): the trainer will cut at 64
    cfg.lengths.untrained = "keep"    # else the run itself drops these records (lengths.untrained)
    result = run_prepare(cfg, progress=False)
    assert result.report["lengths"]["max_seq_len"] == 64
    capsys.readouterr()

    assert main(["show", str(result.run_dir)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("prepare: error: all ")
    assert "no trainable token" in err and "--allow-untrained" in err and "max_seq_len 64" in err
    run_ids = set(pq.read_table(next((result.run_dir / "train").glob("*.parquet")), columns=["id"])
                  .column("id").to_pylist())
    assert any(i in err for i in run_ids)
    assert "Please read" not in err                     # ids, never content

    assert main(["show", str(result.run_dir), "--allow-untrained", "--n", "1"]) == 0
    captured = capsys.readouterr()
    assert "<<<CUT max_seq_len=64>>>" in captured.out and "0 trainable left after the cut" in captured.out
    assert "prepare: warning:" in captured.err

    # the same records with room for the answers: nothing to report
    assert main(["show", str(result.run_dir), "--max-seq-len", "512", "--n", "0"]) == 0
    assert "0 with no trainable token" in capsys.readouterr().out


def test_show_reads_a_run_directory_and_its_shards(tmp_path, capsys):
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a.jsonl").write_text("".join(json.dumps({"instruction": f"question {i}?", "output": f"answer {i}."})
                                            + "\n" for i in range(8)))
    cfg = PrepareConfig(inputs=[str(inputs)], out=str(tmp_path / "run"), workers=1)
    cfg.pii.enabled = cfg.estimate.enabled = cfg.dedup.enabled = False
    result = run_prepare(cfg, progress=False)
    capsys.readouterr()
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    assert main(["show", str(result.run_dir), "--n", "3", "--split", "all"]) == 0
    out = capsys.readouterr().out
    assert out.count("── record") == 3 and f"the cut at max_seq_len {manifest['max_seq_len']}" in out
    assert "checked 8 records" in out

    shard = result.run_dir / manifest["shards"][0]["path"]
    first = pq.read_table(shard, columns=["id"]).to_pylist()[0]
    assert main(["show", str(shard), "--ids", first["id"]]) == 0
    out = capsys.readouterr().out
    assert out.count("── record") == 1 and first["id"] in out


def test_counts_in_the_header_are_the_run_step_counts(capsys):
    """The header's figures come from the lengths step (the run's counts, cache included)."""
    data = SAMPLE_DATA / "support_tr_alpaca.json"
    assert main(["show", str(data), "--n", "1"]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("── record"))
    from pipeline.data.normalize import Normalizer
    from pipeline.data.readers import expand_inputs

    cfg = PrepareConfig(inputs=[str(data)])
    rec = next(Normalizer(expand_inputs(cfg.inputs, cfg)[0], cfg).batches())[0]
    step = LengthStep(LengthsConfig(), None, model=cfg.estimate.model)
    tokens, trainable = step.measure([rec])[0]
    assert f": {tokens:,} tokens, {trainable:,} trainable" in header and rec["id"] in header


@pytest.mark.parametrize("args, words", [
    (["show", "/nonexistent/data.jsonl"], "no such file or folder"),
    (["show", str(SAMPLE_DATA), "--n", "-1"], "--n must be"),
])
def test_errors_are_one_line(args, words, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err


def test_an_unfinished_run_directory_is_one_line(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / ".prepare-run").write_text("")
    assert main(["show", str(run)]) == 2
    assert "no manifest.json" in capsys.readouterr().err
