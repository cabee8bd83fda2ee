"""Decontamination against eval sets (pipeline.data.decontam): the kinds of copies it finds, what it keeps, the
Turkish and Russian folding, the step's accounting and audit, and eval files left as they were."""
from __future__ import annotations

import json
import random

import pytest

from pipeline.core.config import DecontamConfig, PrepareConfig
from pipeline.data.decontam import DecontamStep, EvalIndex, content_text, fold, words

EVAL_TEXT = ("The committee approved the new bridge design after engineers showed that the steel arches "
             "would survive a flood twice as high as the one recorded in nineteen fifty three")
# file names are checked for personal data as a run's are (pipeline.data.readers.names): not the subject here
NO_PII = PrepareConfig(pii={"enabled": False})
EVAL_QA = ("Which river did the expedition follow to reach the northern lakes in the spring of the third year",
           "They followed the Copper River upstream for eleven days until the ice broke on the lakes")


def write_eval_sets(folder):
    """Two eval files in two input formats: Alpaca JSON lines and plain text."""
    folder.mkdir()
    qa = {"instruction": EVAL_QA[0], "input": "", "output": EVAL_QA[1]}
    short = {"instruction": "Name the capital of Peru.", "input": "", "output": "Lima"}
    (folder / "qa.jsonl").write_text("\n".join(json.dumps(r) for r in (qa, short)) + "\n", encoding="utf-8")
    (folder / "passages.txt").write_text(EVAL_TEXT + "\n", encoding="utf-8")
    return folder


def record(i: int, text: str, **extra) -> dict:
    return {"id": f"train-{i}", "_order": i, "kind": "text", "text": text,
            "source": {"file": "train.jsonl", "line": i + 1}, **extra}


def chat(i: int, user: str, answer: str) -> dict:
    return {"id": f"train-{i}", "_order": i, "kind": "chat", "source": {"file": "train.jsonl", "line": i + 1},
            "messages": [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]}


@pytest.fixture
def index(tmp_path):
    return EvalIndex.from_files([str(write_eval_sets(tmp_path / "evals"))], cfg=NO_PII)


def kept_ids(index, records) -> set[str]:
    return {r["id"] for r in DecontamStep(index)(records)}


def test_the_eval_sets_are_read_in_any_input_format_without_text(index):
    assert len(index.refs) == 3
    assert {r.file for r in index.refs} == {"evals/qa.jsonl", "evals/passages.txt"}
    assert all(len(r.id) > 8 and " " not in r.id for r in index.refs)  # record ids, not text


def test_exact_truncated_and_retemplated_copies_are_found(index):
    half = len(EVAL_TEXT.split()) // 2
    records = [
        record(0, EVAL_TEXT),                                           # exact
        record(1, " ".join(EVAL_TEXT.split()[:half])),                  # first half
        record(2, " ".join(EVAL_TEXT.split()[half:])),                  # last half
        chat(3, f"### Instruction:\nAnswer the question.\n\n### Input:\n{EVAL_QA[0]}?", EVAL_QA[1]),  # re-templated
        record(4, f"<|im_start|>user\n{EVAL_TEXT.upper()}<|im_end|>"),  # re-templated, upper case
    ]
    step = DecontamStep(index)
    assert step(records) == []
    assert step.stats.dropped == {"eval_ngram": 5}


def test_a_short_eval_item_quoted_whole_is_found():
    """Shorter than the window: indexed whole (SHORT_MIN_WORDS and more), so a wrapper around it is found."""
    question = "In which year did the first transatlantic telegraph cable carry a message"  # 12 words
    index = EvalIndex.from_records([{"id": "q", "text": question, "source": {"file": "eval.json", "line": 1}}])
    assert index.short_lengths == (12,)
    assert kept_ids(index, [record(0, f"Quiz time! {question}? Answer in one line."),
                            record(1, "In which year did the first telegraph cable carry a message")]) == {"train-1"}


def test_a_short_question_of_a_chat_eval_record_quoted_alone_is_found():
    question = "Which planet in the solar system has the longest day"  # 10 words; the record has 12
    index = EvalIndex.from_records([{"id": "q", "messages": [{"role": "user", "content": question},
                                                             {"role": "assistant", "content": "Venus, probably."}],
                                     "source": {"file": "eval.jsonl", "line": 1}}])
    assert index.short_lengths == (10, 12)
    assert kept_ids(index, [record(0, f"### Instruction:\n{question}?\n\n### Response:\nMercury."),
                            record(1, "Which planet in the solar system has the shortest day")]) == {"train-1"}


def test_a_near_duplicate_of_an_eval_record_is_dropped_as_such(index):
    """"Name the capital of Peru. Lima" has no n-gram of 8 words; a copy of it differing only in
    punctuation and case is its near duplicate (character n-grams, as dedup does short texts)."""
    step = DecontamStep(index)
    assert step([record(0, "NAME the capital of Peru?! Lima...")]) == []
    assert step.stats.dropped == {"eval_near_dup": 1}
    assert step.removed[0]["similarity"] == pytest.approx(1.0)


def test_clean_records_that_share_topic_words_are_kept(index):
    rng = random.Random(3)
    topic = EVAL_TEXT.split()
    shuffled = [" ".join(rng.sample(topic, len(topic))) for _ in range(20)]
    other = ["The committee discussed a bridge over the river; engineers want steel, not stone, after the flood.",
             "Which lakes are in the north? The expedition took the Copper River road in spring."]
    records = [record(i, t) for i, t in enumerate(shuffled + other)]
    step = DecontamStep(index)
    assert len(step(records)) == len(records)
    assert step.stats.dropped == {}


def test_turkish_and_russian_copies_fold_to_the_same_words():
    tr = "Işık İstanbul'da yandı ve ılık rüzgâr sabaha kadar esti, kimse uyumadı çünkü şehir ışıl ışıldı"
    ru = "Ёжик шёл по лесу, и всё вокруг было тихо, только ёлки шумели над его головой до самого утра"
    copies = {tr: [tr.upper(), tr.lower(), tr.casefold()], ru: [ru.replace("ё", "е").replace("Ё", "Е")]}
    for text, variants in copies.items():
        for copy in variants:
            assert words(copy) == words(text)
    # without the folding these copies share no 13-gram: the case that fails without it
    assert tr.upper().casefold().split()[0] != tr.casefold().split()[0]  # "işik" and "işık"
    assert copies[ru][0].casefold().split()[0] != ru.casefold().split()[0]  # "ежик" and "ёжик"
    index = EvalIndex.from_records([{"id": "tr", "text": tr, "source": {"file": "e", "line": 1}},
                                    {"id": "ru", "text": ru, "source": {"file": "e", "line": 2}}])
    records = [record(i, copy) for i, copy in enumerate(v for vs in copies.values() for v in vs)]
    step = DecontamStep(index)
    assert step(records) == []
    assert {r["duplicate_of"] for r in step.removed} == {"tr", "ru"}
    assert fold("İI ıi Ёё") == "ii ii ее"


def test_numbers_are_words_and_punctuation_is_not():
    assert words("Order #100-200: 3.5 kg, “fast”!") == ["order", "100", "200", "3", "5", "kg", "fast"]


def test_the_step_accounts_for_every_record_and_audits_by_reference(index):
    records = [record(0, EVAL_TEXT), record(1, "Nothing to see here, a plain support answer about refunds."),
               record(2, "NAME the capital of Peru. Lima"), record(3, EVAL_TEXT, _eval=True)]
    step = DecontamStep(index)
    out = step(records)
    st = step.stats
    assert st.records_in == st.records_out + sum(st.dropped.values()) == 4
    assert [r["id"] for r in out] == ["train-1", "train-3"]  # a validation record is not trained on: kept
    audit = step.audit_table().to_pylist()
    assert [(a["id"], a["reason"]) for a in audit] == [("train-0", "eval_ngram"), ("train-2", "eval_near_dup")]
    ref = {r.id: r for r in index.refs}[audit[0]["duplicate_of"]]
    assert (audit[0]["duplicate_of_file"], audit[0]["duplicate_of_line"]) == (ref.file, ref.line)
    assert (ref.file, ref.line) == ("evals/passages.txt", 1)
    assert (audit[0]["source_file"], audit[0]["source_line"]) == ("train.jsonl", 1)
    texts = [w for r in records for w in content_text(r).split() if len(w) > 3]
    values = [str(v) for row in audit for v in row.values()]
    assert not [w for w in texts if any(w in v for v in values)]  # ids, files and lines, no text


def test_the_eval_files_are_left_unchanged(tmp_path):
    folder = write_eval_sets(tmp_path / "evals")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    index = EvalIndex.from_files([str(folder)], cfg=NO_PII)
    DecontamStep(index)([record(0, EVAL_TEXT)])
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_the_index_saved_and_loaded_matches_the_same(index, tmp_path):
    index.save(tmp_path / "index")
    loaded = EvalIndex.load(tmp_path / "index")
    records = [record(0, EVAL_TEXT), record(1, "NAME the capital of Peru. Lima"), record(2, "refunds take a week")]
    a, b = DecontamStep(index), DecontamStep(loaded)
    assert a(records) == b(records) and a.removed == b.removed and len(a.removed) == 2


def test_the_config_section():
    cfg = DecontamConfig()
    assert (cfg.eval_sets, cfg.ngram, cfg.enabled) == ([], 13, False)
    assert DecontamConfig(eval_sets=["evals/"]).enabled
    with pytest.raises(ValueError):
        DecontamConfig(ngram=2)
    with pytest.raises(ValueError):
        DecontamConfig(enabled=True)  # derived from eval_sets: not a setting


@pytest.mark.parametrize("evals", [[], [{"id": "e", "text": " .,; ", "source": {"file": "e", "line": 1}}]])
def test_an_index_without_eval_words_keeps_everything(evals):
    index = EvalIndex.from_records(evals)
    assert len(index.hashes) == 0
    step = DecontamStep(index)
    assert len(step([record(0, EVAL_TEXT), record(1, " .,; ")])) == 2 and step.stats.dropped == {}
