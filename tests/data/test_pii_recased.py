"""pii/recased.py: names in text written in capitals, found by the lower-case rules on a lower-cased copy. The
names are invented or common ones checked to lie outside the evaluation half of bench/pii/realnames."""
from __future__ import annotations

import pytest

from pipeline.data.pii.engine import get_detector, resolve
from pipeline.data.pii.recased import caps_stretches, lower_one_for_one, lowered_copy


def test_stretches_are_two_words_in_capitals_on_one_line():
    text = "Ok. ORHAN ÇİÇEK DÜN ARADI\nUSE HTML or ASCII"
    assert [text[s:e] for s, e in caps_stretches(text)] == ["ORHAN ÇİÇEK DÜN ARADI", "USE HTML"]


def test_lower_case_keeps_every_offset():
    assert lower_one_for_one("İSMİ IŞIK", "tr") == "ismi ışık"
    assert len(lower_one_for_one("İSMİ IŞIK", "en")) == len("İSMİ IŞIK")
    text = "Not: ORHAN ÇİÇEK aradı"
    assert lowered_copy(text, caps_stretches(text), "tr") == "Not: orhan çiçek aradı"


def _persons(text: str, lang: str) -> list[str]:
    kept, _ = resolve(get_detector(("tr", "ru", "en")).detect([(text, lang)])[0], 0.5)
    return [text[h.start:h.end] for h in kept if h.entity == "PERSON"]


@pytest.mark.parametrize("text, lang, name", [
    ("Modem yanıp sönüyor. ORHAN ÇİÇEK DÜN ARADI, FATURAYI SORDU.", "tr", "ORHAN ÇİÇEK"),
    ("Заказ висит. КОБА ТРОФИМОВА ЖАЛУЕТСЯ НА ЗАДЕРЖКУ ДОСТАВКИ.", "ru", "КОБА ТРОФИМОВА"),
    ("Thanks. NAME ON THE ORDER: MELINDA WREXFORD\nIt never came.", "en", "MELINDA WREXFORD"),
])
def test_a_name_in_capitals_is_found_whole(text, lang, name):
    assert name in _persons(text, lang)


@pytest.mark.parametrize("text, lang", [
    ("PLEASE CALL ME BACK TOMORROW MORNING", "en"),
    ("USE THE ASCII HTML EXPORT", "en"),
    ("SİPARİŞİM ÜÇ GÜNDÜR AYNI DEPODA BEKLİYOR", "tr"),
])
def test_shouted_words_stay(text, lang):
    assert _persons(text, lang) == []
