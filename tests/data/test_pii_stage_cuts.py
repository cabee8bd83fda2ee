"""The PII stage's speed cuts give what the plain computations they replace give."""
from __future__ import annotations

import pytest

from pipeline.data.pii.name_signals import COMMON_ZIPF, EVERYDAY_ZIPF, common_words
from pipeline.data.pii.text import fold


@pytest.mark.parametrize("lang", ["tr", "ru", "en"])
def test_common_words_read_from_buckets_equal_the_frequency_dict(lang):
    import wordfreq

    freqs = wordfreq.get_frequency_dict(lang, "best")
    for zipf in (COMMON_ZIPF, EVERYDAY_ZIPF):
        floor = 10 ** (zipf - 9)
        expected = frozenset(fold(w) for w, f in freqs.items() if f >= floor and w.isalpha())
        assert common_words(lang, zipf) == expected
    assert "ve" in common_words("tr") and "и" in common_words("ru", EVERYDAY_ZIPF)


def test_common_words_of_a_language_wordfreq_lacks_are_empty():
    assert common_words("xx") == frozenset()


def test_book_forms_hold_exactly_the_words_a_stem_and_a_case_ending_make():
    from pipeline.data.pii.found_partner import _RU_ENDINGS, _book_forms, _book_key

    keys = frozenset({"иванов", "петр", "ли"})

    def split_test(low):  # the test the forms replace: each split before an ending's length, looked up
        n = len(low)
        return any(len(x) < n and low.endswith(x) and low[:n - len(x)] in keys for x in _RU_ENDINGS)

    forms = _book_forms(keys, "ru")
    for word in ("Иванова", "ИВАНОВЫМ", "петру", "Петр", "петрович", "лия", "ли", "и", "Иван", "ивановых"):
        assert (_book_key(word, "ru") in forms) == split_test(word.lower()), word
    assert _book_forms(frozenset({"smith"}), "en") == {"smith"}
    assert _book_key("SMITH", "en") == "smith" and _book_key("Işık", "en") == fold("ışık")


@pytest.mark.parametrize("lang", ["ru", "tr", "de"])
def test_frequent_buckets_are_the_head_of_wordfreqs_list(lang):
    import wordfreq

    from pipeline.data.pii.name_signals import _frequent_buckets

    whole = wordfreq.get_frequency_list(lang, "best")
    assert _frequent_buckets(lang, 551) == whole[:551]
    assert _frequent_buckets(lang, 10_000) == whole  # asked past the end: the whole list
    with pytest.raises(LookupError):
        _frequent_buckets("xx", 10)


def test_fold_of_ascii_is_its_lower_case_and_turkish_i_still_folds():
    assert fold("JOHN Smith-42") == "john smith-42"
    assert fold("İSMAİL Işık") == "ismail işik" and len(fold("İ")) == 1


def test_rarity_of_turkish_and_english_share_one_union():
    from pipeline.data.pii.name_signals import Rarity

    tr, en, ru = Rarity("tr"), Rarity("en"), Rarity("ru")
    assert tr.common is en.common and tr.common == common_words("tr") | common_words("en")
    assert ru.everyday_words == common_words("ru", EVERYDAY_ZIPF) | tr.everyday_words


def test_russian_subject_candidates_serve_both_passes_alike_in_any_order():
    from pipeline.data.pii.ru_subject import _subject_candidates, subject_names, subjects_beside_a_name

    text = "Привет. Лиана перезвонит завтра. Тимур Бекмамбетов позвонил утром."
    _subject_candidates.cache_clear()
    beside_first = subjects_beside_a_name(text), subject_names(text)
    _subject_candidates.cache_clear()
    names_first = subject_names(text)
    assert beside_first == (subjects_beside_a_name(text), names_first)
    assert [(h.start, h.end) for h in names_first] == [(33, 50)]  # "Тимур Бекмамбетов"
    assert [(h.start, h.end) for h in beside_first[0]] == [(8, 13)]  # "Лиана", beside a name


_CLAUSE_TEXTS = [
    "Berke Topuz dün aradı.", "necef ıpekci aboneliğini iptal etmek istiyor", "KURYE PAKETİ TESLİM ETTİ",
    "Fatura iade kargo adres süre.", "Sipariş destek şifre müşteri indirim", "Ali geldi   \u00a0!", "Ali geldi x",
    "Tamam, yazdı.\nSonra aradım", "Hayri Zeybek tekrar yazdı, kargo hâlâ çıkmamış.", "ok", "",
    "Kargo " + "a" * 60 + "dı.", "Kargo geldi" + " " * 50 + ".", "Ödeme bekliyor? Fatura yok.",
]


def test_a_text_no_clause_can_close_gives_no_clause_anywhere():
    from pipeline.data.pii.tr_later import clause_of_subject, may_close_a_clause

    seen = set()
    for text in _CLAUSE_TEXTS:
        low = text.translate(str.maketrans({"İ": "i", "I": "ı"})).lower()
        anywhere = any(clause_of_subject(t, k) is not None for t in (text, low) for k in range(len(t) + 1))
        seen.add((anywhere, may_close_a_clause(text)))
        assert may_close_a_clause(text) or not anywhere, text
    assert (True, True) in seen and (False, False) in seen


def test_turkish_subject_signals_find_nothing_where_no_clause_can_close():
    from pipeline.data.pii.text import TextContext
    from pipeline.data.pii.tr_later import may_close_a_clause
    from pipeline.data.pii.tr_listed_first import listed_first_name_pairs
    from pipeline.data.pii.tr_lower_subject import object_first_pairs, subject_pairs
    from pipeline.data.pii.tr_title_subject import title_subject_pairs

    signals = (subject_pairs, object_first_pairs, title_subject_pairs, listed_first_name_pairs)
    closed = "Berke Topuz dün aradı. emre kara bugün teslim etti. paketi necef ıpekci teslim almış."
    assert may_close_a_clause(closed) and all(s(TextContext(closed, "tr")) for s in signals)
    for text in ("Berke Topuz dün aradı ve", "emre kara bugün teslim, kargo", "paketi necef ıpekci teslim"):
        assert not may_close_a_clause(text)
        assert not any(s(TextContext(text, "tr")) for s in signals), text


def test_caps_sentences_are_the_matches_of_the_pattern_tried_everywhere():
    import re

    from pipeline.data.pii.tr_title_subject import _CAPS_SENTENCE, _caps_sentences

    everywhere = re.compile(r"(?:^|(?<=[.!?:;\n]))" + _CAPS_SENTENCE.pattern)
    for text in ("FAHRETİN KULE ABONELİĞİNİ İPTAL ETMEK İSTİYOR. Tamam: ALİ VELİ GELDİ!\nSONRA;  x",
                 "tamam. \tHAYRİ ZEYBEK YAZDI.. ÇOK", "", "A", ":.;!?\n", "abc DEF. GHI jkl: MNO"):
        spans = [m.span(1) for m in _caps_sentences(text)]
        assert spans == [m.span(1) for m in everywhere.finditer(text)], text


def test_marks_in_finds_every_mark():
    from pipeline.data.pii.tr_later import marks_in

    text = "a.b!c?d\ne:f;g.."
    assert sorted(marks_in(text, ".!?:;\n")) == [i for i, c in enumerate(text) if c in ".!?:;\n"]
    assert marks_in("", ".") == [] and marks_in("abc", ".!") == []


def test_special_mentions_from_the_detectors_words_equal_a_plain_find():
    from pipeline.data.pii.special import get_special_detector
    from pipeline.data.pii.text import TextContext
    from tests.data.test_pii_special import CASES

    det = get_special_detector()
    texts = [t for _, _, pos, neg in CASES for t in (pos, neg)]
    texts += ["CHP'liyim ve diyabetim var. " * 12, "İLAÇ kullanıyorum, DİYABET hastasıyım", "судим, срок отбывал"]
    assert any(det.find(t) for t in texts)
    for t in texts:
        assert det.find(t, TextContext(t, "tr").folded_words) == det.find(t), t


def test_the_step_counts_special_mentions_as_before_with_the_detectors_words():
    from pipeline.core.config import PiiConfig
    from pipeline.data.pii import PiiStep
    from pipeline.data.pii.special import get_special_detector

    text = "Müşteri diyabet hastası, insülin kullanıyor. Ahmet Yılmaz aradı."
    step = PiiStep(PiiConfig(special="report"), salt=b"x")
    step([{"id": "1", "messages": [{"role": "user", "content": text}]}])
    counters = step.stats.to_dict()["counters"]
    assert counters["special"] == dict(get_special_detector().count([text]))


def test_a_russian_text_without_a_persons_verb_holds_no_subject():
    from pipeline.data.pii.ru_subject import may_hold_subject, subject_names
    from pipeline.data.pii.text import TextContext

    with_subject = ["Ищук подтвердил адрес", "ГОР ИЩУК ЗВОНИЛ ВЧЕРА", "Итог: Койшыбай не против",
                    "вчера жупар ермек забрала заказ", "Вчера Шахноза Черный забрала посылку"]
    for text in with_subject:
        assert subject_names(text), text
        assert may_hold_subject(TextContext(text, "ru").words), text
    for text in ("Магазин отмена тариф подписка возврат статус.", "Ищук адрес заказ", "Итог: Койшыбай против"):
        assert not may_hold_subject(TextContext(text, "ru").words), text
        assert subject_names(text) == [], text


def test_an_english_text_without_a_calling_verb_holds_no_subject():
    from pipeline.data.pii.en_subject import _LEADS_HOLD_VERBS, may_hold_subject, subject_names
    from pipeline.data.pii.text import TextContext

    assert _LEADS_HOLD_VERBS  # else the test below is no test: may_hold_subject answers True throughout
    for text in ("Siddik called yesterday about the refund", "Then Aodhan Nizam wrote in again.",
                 "Kumawat e-mailed twice", "Yesterday Jane Doe phoned"):
        assert subject_names(text), text
        assert may_hold_subject(TextContext(text, "en")), text
    for text in ("Subscription invoice discount period.", "Siddik about the refund", "Jane Doe by the door"):
        assert not may_hold_subject(TextContext(text, "en")), text
        assert subject_names(text) == [], text


def test_signals_that_need_a_second_capital_find_nothing_without_one():
    from pipeline.data.pii.latin_names import LatinNameRecognizer
    from pipeline.data.pii.names import LATIN_TOKEN, tokens
    from pipeline.data.pii.text import TextContext
    from pipeline.data.pii.tr_signature import signature_names
    from pipeline.data.pii.tr_title_subject import caps_subject_pairs, title_subject_pairs
    from pipeline.data.pii.tr_titles import titled_names
    from pipeline.data.pii.tr_vocative import vocative_names

    rec = LatinNameRecognizer("tr")

    def found(text):
        ctx = TextContext(text, "tr")
        toks = tokens(ctx, LATIN_TOKEN, "latin_tokens")
        return (titled_names(text, toks, [], rec._no_name_word) + vocative_names(ctx, rec._no_name_word)
                + title_subject_pairs(ctx) + caps_subject_pairs(ctx) + signature_names(ctx, rec._no_name_word))

    shouted = ["Işık Hanım tekrar aradı.", "Tamam, Eflinaz!", "Hayri Zeybek tekrar yazdı.",
               "FAHRETİN KULE ABONELİĞİNİ İPTAL ETMEK İSTİYOR.", "Teşekkürler,\nSaygılarımla,\nAnar Baharlı"]
    assert all(found(t) for t in shouted)
    for text in shouted:
        low = text[0] + text[1:].lower()
        assert low[1:].islower() and found(low) == [], low


def test_the_russian_cue_end_pattern_matches_as_its_optional_prefix_form():
    import re

    from pipeline.data.pii.ru_names import _RU_CUE_END

    with_prefix = re.compile(_RU_CUE_END.pattern.replace(
        "звонил[аи]?|позвонил[аи]?|перезвонил[аи]?", "(?:по|пере)?звонил[аи]?").replace(
        "|просил[аи]?|попросил[аи]?", "|(?:по)?просил[аи]?"))
    assert with_prefix.pattern != _RU_CUE_END.pattern
    for text in ("мне перезвонила оксана", "позвонил петр и попросила маша", "незвонил петр", "просили, оля",
                 "пперезвонил юрий", "добрый день, ольга", "клиентка: анна", "звонила\u00a0ирина", "перезвонил 5"):
        assert [m.span() for m in with_prefix.finditer(text)] == [m.span() for m in _RU_CUE_END.finditer(text)], text
    assert _RU_CUE_END.search("мне перезвонила оксана").group() == "перезвонила "


def test_surname_shaped_lower_case_starts_are_the_surname_patterns_matches():
    from pipeline.data.pii import ru_names
    from pipeline.data.pii.text import TextContext

    texts = ["вчера оксана трофимова забрала", "петров-водкин иванов", "а иванов_ б иванова.", " иванов", "иванов",
             "заказ у сидоренко, и у петрова", "Иванов и иванов", "с кузнецовой ивановым", "грузинский дзе нет"]
    found = 0
    for text in texts:
        ctx = TextContext(text, "ru")
        plain = TextContext(text, "ru")
        want = set()
        for m in ru_names._RU_LOWER_SURNAME_AFTER.finditer(text):  # words_before(m.start() + 1, 1), as it was
            b = ru_names._RU_LOWER_BEFORE.search(text, max(0, m.start() + 1 - 40), m.start() + 1)
            if b is not None:
                want.add(b.start())
        got = set(ru_names._ru_lower_starts(ctx, False))
        first = {k for w in ru_names._RU_FIRST_LOWER.intersection(plain.words) for k in range(len(text))
                 if text.startswith(w, k)}
        assert got - first == want - first, text
        found += bool(want - first)
    assert found >= 2  # (the cases hold starts the first names do not give)
    assert ru_names._ru_lower_starts(TextContext("вчера оксана трофимова забрала", "ru"), False)


def test_a_text_in_an_english_and_a_russian_record_of_one_batch_keeps_its_russian_subject_pass():
    """The subject-pass skip is learnt per (text, language): scanned as English first ("no English subject"), the same
    text in a Russian record still gets the Russian subject pass (the name was left before 2026-12-06's fix)."""
    import copy

    from pipeline.core.config import PiiConfig
    from pipeline.data.pii import PiiStep

    text = "Итог: Кутерьянь не против обмена."
    english = {"id": "e", "messages": [
        {"role": "user", "content": "Please check my order status, it has been delayed for two weeks now and nobody "
                                    "answers."},
        {"role": "assistant", "content": text},
        {"role": "user", "content": "Thanks, I will wait for the update from your team then."}]}
    russian = {"id": "r", "messages": [
        {"role": "user", "content": text},
        {"role": "assistant", "content": "Спасибо, передам коллегам и перезвоню вам завтра утром."}]}
    step = PiiStep(PiiConfig(), salt=b"x")
    alone = step([copy.deepcopy(russian)])
    step.detector.clear_cache()
    both = step([copy.deepcopy(english), copy.deepcopy(russian)])
    assert "Кутерьянь" not in alone[0]["messages"][0]["content"]
    assert "Кутерьянь" not in both[1]["messages"][0]["content"]
