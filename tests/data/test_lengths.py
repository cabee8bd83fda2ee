"""LengthStep (counts, cache), the overflow policies and precheck sampling."""
import json
import multiprocessing as mp
import pickle

import pytest

from pipeline.core.config import LengthsConfig
from pipeline.core.records import record_id, template_inputs
from pipeline.core.stats import StageStats
from pipeline.data.lengths.step import LengthCache, LengthStep, apply_overflow, chunk_id, sample_for_precheck
from pipeline.data.lengths.tokenizer.chat_template import is_chat

WORDS = ("merhaba dünya bugün hava çok güzel привет мир как дела сегодня the quick brown fox jumps over "
         "the lazy dog again and again").split()


def _text(n, seed=0):
    return " ".join(WORDS[(i * 7 + seed) % len(WORDS)] for i in range(n))


def _chat(n_user, n_answer, turns=1, system=True):
    msgs = [{"role": "system", "content": "Sen yardımcı bir asistansın."}] if system else []
    for t in range(turns):
        msgs += [{"role": "user", "content": f"Q{t}: " + _text(n_user, t)},
                 {"role": "assistant", "content": f"A{t}: " + _text(n_answer, t + 1)}]
    return {"id": f"c{n_user}-{n_answer}-{turns}", "kind": "chat", "messages": msgs, "text": None,
            "source": {"file": "c.jsonl", "line": 1}, "meta": "{}"}


def _doc(n, i=0):
    return {"id": f"t{n}-{i}", "kind": "text", "messages": None, "text": _text(n, i),
            "source": {"file": "t.txt", "line": i}, "meta": json.dumps({"lang": "tr"})}


def _records():
    return [_chat(20, 40), _chat(5, 10, turns=3, system=False), _doc(30), _doc(300, 1),
            {"id": "i1", "kind": "instruction", "messages": [{"role": "user", "content": "2+2?"},
                                                              {"role": "assistant", "content": "4"}],
             "text": None, "source": {"file": "i.jsonl", "line": 1}, "meta": "{}"}]


@pytest.fixture(scope="module")
def step():
    return LengthStep(LengthsConfig(text_chunking="off"), None)  # text records follow the overflow policies too


def _direct(step, rec):
    tok = step.handle.tokenizer
    if is_chat(rec):
        msgs, tools = template_inputs(rec)
        out = tok.apply_chat_template(msgs, tools=tools, chat_template=step.handle.template,
                                      tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
        return len(out["input_ids"]), int(sum(out["assistant_masks"]))
    n = len(tok(rec["text"] + tok.eos_token)["input_ids"])
    return n, n


def test_process_sets_counts_equal_to_direct_calls(step):
    stats = StageStats("lengths")
    out = step.annotate([dict(r) for r in _records()], stats)
    assert len(out) == 5
    for rec in out:
        assert (rec["_tokens"], rec["_trainable"]) == _direct(step, rec)
        assert rec["_trainable"] <= rec["_tokens"]
    assert stats.counters["tokens"] == sum(r["_tokens"] for r in out)
    assert stats.counters["cache"] == {"hits": 0, "misses": 5}
    assert "mistral-32k" in step.tokenizer_name and "offline default" in step.tokenizer_name


def test_cache_hit_on_rerun_without_loading_the_tokenizer(tmp_path):
    cfg = LengthsConfig()
    first = LengthStep(cfg, str(tmp_path))
    s1 = StageStats("lengths")
    a = first.annotate([dict(r) for r in _records()], s1)
    assert s1.counters["cache"] == {"hits": 0, "misses": 5}
    again = pickle.loads(pickle.dumps(LengthStep(cfg, str(tmp_path))))  # as a worker process gets it
    s2 = StageStats("lengths")
    b = again.annotate([dict(r) for r in _records()], s2)
    assert s2.counters["cache"] == {"hits": 5, "misses": 0}
    assert again._handle is None  # counts came from the cache: nothing was tokenized, nothing loaded
    assert [(r["_tokens"], r["_trainable"]) for r in a] == [(r["_tokens"], r["_trainable"]) for r in b]
    # changed content, or another template: a miss
    changed = [dict(r) for r in _records()]
    changed[2]["text"] += " more"
    s3 = StageStats("lengths")
    again.annotate(changed, s3)
    assert s3.counters["cache"] == {"hits": 4, "misses": 1}
    other = LengthStep(LengthsConfig(chat_template="{{ bos_token }}{% for m in messages %}{{ m['content'] }}"
                                                   "{% endfor %}"), str(tmp_path))
    s4 = StageStats("lengths")
    other.annotate([dict(r) for r in _records()], s4)
    assert s4.counters["cache"] == {"hits": 0, "misses": 5}


def _writer(path, start, n, barrier):
    cache = LengthCache(path)
    barrier.wait()
    for i in range(start, start + n, 500):
        cache.put_many([(j.to_bytes(16, "big"), j, j // 2)
                        for j in range(i, min(i + 500, start + n))])


def test_cache_with_two_processes_writing_at_once(tmp_path):
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), k * 10_000, 10_000, barrier)) for k in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    cache = LengthCache(str(tmp_path))
    assert len(cache) == 20_000
    keys = [j.to_bytes(16, "big") for j in (0, 9_999, 10_000, 19_999)]
    assert cache.get_many(keys) == {k: (j, j // 2) for k, j in zip(keys, (0, 9_999, 10_000, 19_999))}


def test_template_errors_are_quarantined(tmp_path):
    cfg = LengthsConfig(chat_template="{% for m in messages %}{% if m['role'] == 'system' %}"
                                      "{{ raise_exception('no system') }}{% endif %}{{ m['content'] }}"
                                      "{% endfor %}")
    step = LengthStep(cfg, None)
    stats = StageStats("lengths")
    out = step.annotate([dict(r) for r in _records()], stats)
    assert len(out) == 4 and stats.quarantined["chat_template_error"] == 1
    assert "no system" in stats.counters["chat_template_errors"][0]["error"]


def test_bare_model_config_gives_the_named_offline_default(tmp_path):
    (tmp_path / "any-name.json").write_text("{}")
    step = LengthStep(LengthsConfig(), None, model=str(tmp_path / "any-name.json"))
    assert "mistral-32k" in step.tokenizer_name and "no tokenizer files next to" in step.tokenizer_name


# ------------------------------------------------------------------------------------------------- overflow

def _measured(step, recs):
    return step.annotate([dict(r) for r in recs], StageStats("lengths"))


def test_keep_counts_what_the_trainer_will_cut(step):
    recs = _measured(step, _records())
    L = 64
    stats = StageStats("write")
    out = apply_overflow(recs, L, step, stats)
    over = [r for r in recs if r["_tokens"] > L]
    assert out == recs and over
    o = stats.counters["overflow"]
    assert o["over"] == len(over) and o["tokens_cut"] == sum(r["_tokens"] - L for r in over)


def test_drop(step):
    recs = _measured(step, _records())
    stats = StageStats("write")
    cfg = step.cfg.model_copy(update={"overflow": "drop"})
    out = apply_overflow(recs, 64, _with_cfg(step, cfg), stats)
    assert all(r["_tokens"] <= 64 for r in out)
    assert stats.dropped["too_long"] == len(recs) - len(out) > 0


def _with_cfg(step, cfg):
    other = LengthStep(cfg, step.cache_dir, step.model)
    other._handle = step._handle
    return other


def test_truncate_response(step):
    s = _with_cfg(step, step.cfg.model_copy(update={"overflow": "truncate_response"}))
    chat, doc = _measured(step, [_chat(20, 200), _doc(300)])
    L = 128
    stats = StageStats("write")
    out = apply_overflow([chat, doc], L, s, stats)
    assert len(out) == 2 and stats.counters["overflow"]["truncated"] == 2
    new_chat, new_doc = out
    assert new_chat["id"] == chat["id"]
    assert json.loads(new_doc["meta"]) == {"lang": "tr", "truncated": {"policy": "truncate_response",
                                                                      "tokens_before": doc["_tokens"]}}
    for rec in out:  # the stored counts are the real counts, and they fit
        assert (rec["_tokens"], rec["_trainable"]) == _direct(step, rec) and rec["_tokens"] <= L
    # the prompt is kept, the answer cut at a token boundary, as long as possible
    assert new_chat["messages"][:-1] == chat["messages"][:-1]
    answer, cut = chat["messages"][-1]["content"], new_chat["messages"][-1]["content"]
    assert answer.startswith(cut) and 0 < len(cut) < len(answer)
    ends = step.handle.piece_ends(answer)
    longer = next(e for e in ends if e > len(cut))
    bigger = json.loads(json.dumps(new_chat))
    bigger["messages"][-1]["content"] = answer[:longer]
    assert _direct(step, bigger)[0] > L
    assert doc["text"].startswith(new_doc["text"]) and new_doc["text"]
    assert stats.counters["overflow"]["tokens_removed"] == (chat["_tokens"] + doc["_tokens"]
                                                           - new_chat["_tokens"] - new_doc["_tokens"])


def test_truncate_response_when_the_prompt_alone_is_too_long(step):
    s = _with_cfg(step, step.cfg.model_copy(update={"overflow": "truncate_response"}))
    chat = _measured(step, [_chat(10, 10, turns=1, system=False) | {
        "messages": [{"role": "user", "content": "short"}, {"role": "assistant", "content": "ok " * 5},
                     {"role": "user", "content": _text(400)}, {"role": "assistant", "content": "fine"}]}])[0]
    stats = StageStats("write")
    out = apply_overflow([chat], 64, s, stats)
    # the last exchange cannot fit: the conversation ends at the earlier answer instead
    assert len(out) == 1 and len(out[0]["messages"]) == 2 and out[0]["_tokens"] <= 64
    assert stats.counters["overflow"]["turns_removed"] == 1
    hopeless = _measured(step, [{**chat, "messages": [{"role": "user", "content": _text(400)},
                                                      {"role": "assistant", "content": "x"}]}])[0]
    stats = StageStats("write")
    assert apply_overflow([hopeless], 64, s, stats) == [] and stats.dropped["too_long"] == 1


def test_truncate_prompt(step):
    s = _with_cfg(step, step.cfg.model_copy(update={"overflow": "truncate_prompt"}))
    multi = _measured(step, [_chat(60, 20, turns=3)])[0]
    L = multi["_tokens"] - 40
    stats = StageStats("write")
    (out,) = apply_overflow([multi], L, s, stats)
    assert out["_tokens"] <= L and (out["_tokens"], out["_trainable"]) == _direct(step, out)
    assert out["messages"][-1] == multi["messages"][-1]            # the answer is whole
    assert out["messages"][0] == multi["messages"][0]              # the system message stays
    assert len(out["messages"]) < len(multi["messages"])            # the oldest turns went first
    assert stats.counters["overflow"]["turns_removed"] >= 1
    # a single long question: its end is cut
    single = _measured(step, [_chat(400, 20)])[0]
    stats = StageStats("write")
    (out,) = apply_overflow([single], 128, s, stats)
    question, cut = single["messages"][1]["content"], out["messages"][1]["content"]
    assert out["_tokens"] <= 128 and question.startswith(cut) and len(cut) < len(question)
    assert out["messages"][2] == single["messages"][2]
    # the answer alone is longer than the limit: it is cut too, and counted
    long_answer = _measured(step, [_chat(5, 400)])[0]
    stats = StageStats("write")
    (out,) = apply_overflow([long_answer], 128, s, stats)
    assert out["_tokens"] <= 128 and stats.counters["overflow"]["other_side_cut"] == 1


def test_text_chunking_cuts_long_documents_into_chunks(step):
    assert LengthsConfig().text_chunking == "max_len"  # the default
    s = _with_cfg(step, step.cfg.model_copy(update={"text_chunking": "max_len"}))
    doc, short, chat = _measured(step, [_doc(1000, 3), _doc(10), _chat(300, 300)])
    L = 100
    stats = StageStats("write")
    out = apply_overflow([doc, short, chat], L, s, stats)
    chunks = [r for r in out if r["kind"] == "text" and json.loads(r["meta"]).get("chunk")]
    assert len(chunks) >= doc["_tokens"] // L
    assert "".join(c["text"] for c in chunks) == doc["text"]       # nothing lost, nothing repeated
    for i, c in enumerate(chunks):
        meta = json.loads(c["meta"])
        assert meta["chunk"] == {"index": i, "count": len(chunks), "parent": doc["id"]} and meta["lang"] == "tr"
        assert c["_tokens"] <= L and (c["_tokens"], c["_trainable"]) == _direct(step, c)
        assert c["id"] == chunk_id(doc["id"], i, c) != record_id(c) and c["source"] == doc["source"]
    assert len({c["id"] for c in chunks}) == len(chunks)           # unique, though the text repeats itself
    again = apply_overflow([doc], L, s, StageStats("write"))
    assert [c["id"] for c in again] == [c["id"] for c in chunks]    # and stable
    assert short in out and chat in out                             # short text and (under keep) chat unchanged
    assert stats.counters["chunking"] == {"records": 1, "chunks": len(chunks)}
    assert stats.counters["overflow"]["over"] == 1                  # the chat record, not the document
    assert len(out) == 2 + len(chunks)


def test_without_text_chunking_documents_follow_the_overflow_policy(step):
    s = _with_cfg(step, step.cfg.model_copy(update={"overflow": "drop"}))
    doc, short = _measured(step, [_doc(1000, 3), _doc(10)])
    stats = StageStats("write")
    assert apply_overflow([doc, short], 100, s, stats) == [short]
    assert stats.dropped == {"too_long": 1} and "chunking" not in stats.counters


# ------------------------------------------------------------------------------------------------- sampling

def test_sample_for_precheck():
    few = sample_for_precheck(({"i": i} for i in range(150)), size=200)
    assert few.exact and few.total == 150 and [r["i"] for r in few.records] == list(range(150))
    many = sample_for_precheck(({"i": i} for i in range(100_000)), size=2000, seed=1)
    assert not many.exact and many.total == 100_000 and len(many.records) == 2000
    idx = [r["i"] for r in many.records]
    assert len(set(idx)) == 2000
    assert 45_000 < sum(idx) / len(idx) < 55_000                    # uniform: mean index near the middle
    assert sum(i >= 90_000 for i in idx) > 120                      # the tail of the stream is sampled too
    assert [r["i"] for r in sample_for_precheck(({"i": i} for i in range(100_000)), 2000, 1).records] == idx


def test_tools_are_counted_and_keep_their_own_cache_entries(tmp_path):
    """The tool definitions are part of what the trainer sees: counted, and part of the cache key (a record
    with other tools is not served the counts of the same messages without them)."""
    weather = {"type": "function", "function": {"name": "weather", "description": "Hava durumu",
                                                "parameters": {"type": "object", "properties": {
                                                    "city": {"type": "string"}}}}}
    clock = {"type": "function", "function": {"name": "clock", "description": "Saat"}}
    base = _chat(5, 10)
    base["messages"][2:2] = [
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call00001", "type": "function", "function": {"name": "weather", "arguments": {"city": "İzmir"}}}]},
        {"role": "tool", "content": "21", "tool_call_id": "call00001", "name": "weather"}]
    records = [dict(base, tools=None), dict(base, tools=[weather]), dict(base, tools=[weather, clock])]
    step = LengthStep(LengthsConfig(), str(tmp_path))
    first = [(r["_tokens"], r["_trainable"]) for r in step.annotate([dict(r) for r in records], StageStats("l"))]
    assert first == [_direct(step, r) for r in records]
    assert first[0][0] < first[1][0] < first[2][0] and first[0][1] == first[1][1] == first[2][1]
    again = LengthStep(LengthsConfig(), str(tmp_path))
    stats = StageStats("l")
    assert [(r["_tokens"], r["_trainable"]) for r in again.annotate([dict(r) for r in records], stats)] == first
    assert stats.counters["cache"] == {"hits": 3, "misses": 0}


@pytest.mark.slow  # a whole run, then datasets and the template
def test_a_run_counts_exactly_what_the_trainer_renders_from_its_shards(tmp_path):
    """Whole path: glaive tool calls through `run_prepare` with Llama 3.1's template; the report's token total
    equals the sum over the written shards, loaded with datasets and rendered by apply_chat_template with
    their tools (221,168 tokens for the 261 records kept)."""
    from pathlib import Path

    import datasets
    from conftest import PEER_FORMATS, fast_config

    from pipeline.data.lengths.tokenizer.load import load_tokenizer
    from pipeline.runner import run_prepare

    template = (Path(__file__).parents[1] / "fixtures" / "templates" / "llama-3.1-instruct.jinja").read_text()
    cfg = fast_config(tmp_path, [PEER_FORMATS / "glaive_toolcall_en_demo.json"])
    cfg.lengths.enabled = True
    cfg.lengths.chat_template = template
    cfg.lengths.untrained = "keep"  # one glaive record's answer lies past the chosen max length
    result = run_prepare(cfg, progress=False)
    assert result.report["lengths"]["untrained"]["records"] == 1
    counters = result.report["stages"]["lengths"]["counters"]
    tok = load_tokenizer(None).tokenizer
    shards = datasets.load_dataset("parquet", data_dir=str(result.run_dir))
    rows = [row for split in shards.values() for row in split]
    assert len(rows) == result.report["counts"]["kept"] and any(row["tools"] for row in rows)
    direct = sum(len(tok.apply_chat_template(row["messages"], tools=row["tools"], chat_template=template,
                                             tokenize=True, return_dict=True)["input_ids"]) for row in rows)
    assert counters["tokens"] == direct


# --------------------------------------------------------------------- the model's own tokenizer, or flagged

def _cli_run(tmp_path, *args, env=None):
    import os
    import subprocess
    import sys

    from conftest import ROOT, SAMPLE_DATA

    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "pipeline.cli", "run", str(SAMPLE_DATA / "support_en_openai.jsonl"),
                           "--out", str(tmp_path / "run"), "--workers", "1", "--no-pii", "--no-dedup", *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.integration  # the CLI in a subprocess
def test_a_run_without_the_models_tokenizer_says_so_everywhere(tmp_path):
    """llama-3.1-8b with an empty Hugging Face cache and no Hub: the counts come from mistral-32k, and the
    terminal, report.json (lengths.tokenizer.exact, plan.approximate), report.md and report.html say so."""
    proc = _cli_run(tmp_path, "--model", "llama-3.1-8b")
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = tmp_path / "run"
    report = json.loads((run / "report.json").read_text())
    tok = report["lengths"]["tokenizer"]
    assert tok["exact"] is False and tok["kind"] == "mistral-32k"
    assert "meta-llama/Llama-3.1-8B" in tok["fallback_reason"]
    assert report["plan"]["approximate"] == tok["fallback_reason"]
    # once on the terminal: by preflight, after the setting checks and before a record is read
    assert proc.stderr.count("APPROXIMATE") == 1 and "APPROXIMATE" not in proc.stdout
    assert (run / "report.md").read_text().count("APPROXIMATE") == 2 and "Approximate:" in (run / "report.md").read_text()
    assert 'id="tokenizer-warning"' in (run / "report.html").read_text()


@pytest.mark.integration  # the CLI in a subprocess
def test_a_run_with_the_models_tokenizer_in_the_cache_is_exact(tmp_path):
    from conftest import write_hf_cache

    snapshot = write_hf_cache(tmp_path / "hf")
    proc = _cli_run(tmp_path, "--model", "llama-3.1-8b", env={"HF_HUB_CACHE": str(tmp_path / "hf")})
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    tok = report["lengths"]["tokenizer"]
    assert (tok["exact"], tok["fallback_reason"], tok["kind"]) == (True, None, "hf")
    assert "meta-llama/Llama-3.1-8B-Instruct" in tok["name"] and "approximate" not in report["plan"]
    assert "APPROXIMATE" not in proc.stdout + proc.stderr
    assert 'id="tokenizer-warning"' not in (tmp_path / "run" / "report.html").read_text()
    assert snapshot.is_dir()


# ------------------------------------------------------------------------------------------- text chunking

def test_whole_documents_do_not_choose_the_max_length_when_they_are_chunked():
    import numpy as np

    from pipeline.data.lengths.summary import summarize_lengths

    chat = np.arange(200, 1200, 10)                  # 100 chat records, up to 1,190 tokens
    docs = np.array([3_000, 9_000, 30_000] * 10)     # 30 documents far longer
    tokens = np.concatenate([chat, docs])
    trainable = np.concatenate([chat // 2, docs])
    is_text = np.concatenate([np.zeros(chat.size, bool), np.ones(docs.size, bool)])
    groups = {"all": (tokens, trainable)}
    whole = summarize_lengths(groups, LengthsConfig(text_chunking="off"))
    assert whole["max_seq_len"] == 30_016 and "chunking" not in whole
    s = summarize_lengths(groups, LengthsConfig(), text={"all": is_text})
    assert s["max_seq_len"] == 2048                  # documents count as at most 2,048 tokens
    assert s["chunking"] == {"policy": "max_len", "max_seq_len": 2048, "records": 30,
                             "chunks": 10 * (2 + 5 + 15), "estimated": True}
    assert s["overflow"]["records_over"] == 0 and s["packing"]["tokens"] == int(tokens.sum())
    chat_only = summarize_lengths({"all": (chat, chat // 2)}, LengthsConfig(), text={"all": is_text[:100]})
    assert chat_only["max_seq_len"] == 1216 and chat_only["chunking"]["records"] == 0
