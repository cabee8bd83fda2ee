"""pii/lower_pairs.py: a first name and a surname typed in lower case without a cue. The names are invented or
common ones checked to lie outside the evaluation half of bench/pii/realnames (issue 29's disjoint-source rule)."""
from __future__ import annotations

import pytest

from pipeline.data.pii.lower_pairs import lower_pairs, may_hold_lower_pair
from pipeline.data.pii.text import TextContext


def _spans(text: str) -> list[str]:
    return [text[h.start:h.end] for h in lower_pairs(TextContext(text, "en"))]


@pytest.mark.parametrize("text, name", [
    ("sabah orhan zorvadek tekrar yazdı, kargo hâlâ gelmedi", "orhan zorvadek"),  # a listed first name, a rare word
    ("name on the order: melinda wrexford", "melinda wrexford"),
    ("this morning henrietta okonkwo asked for a replacement", "henrietta okonkwo"),
    ("ayşegül baltacıoğlu dün aradı", "ayşegül baltacıoğlu"),  # a surname by its ending
    ("жанар трофимова звонила вчера насчёт возврата", "жанар трофимова"),  # the dictionary's surname, a rare word
    ("клиент: трофимова оксана, договор от марта", "трофимова оксана"),  # surname first
])
def test_lower_case_pair_is_a_name(text, name):
    assert _spans(text) == [name]
    assert may_hold_lower_pair(TextContext(text, "en"))


@pytest.mark.parametrize("text, name", [
    ("sabah orhan çiçek tekrar yazdı", "orhan çiçek"),  # a surname that is an everyday word, before a verb
    ("ad soyad: melinda kaynak", "melinda kaynak"),  # a labelled value that ends the text
    ("коба трофимова жалуется на задержку", "коба трофимова"),  # a Russian verb after the pair
    ("az önce orhan çiçek ile konuştum", "orhan çiçek"),  # the pair nearest the cue, not "önce orhan"
    ("Заказ висит. вчера эльдар кан забрал посылку", "эльдар кан"),  # a short surname the lists lack
    ("владелец номера — оксана зуфарханов.", "оксана зуфарханов"),  # a possessive to the dictionary, rare
])
def test_cued_pair_takes_an_everyday_word(text, name):
    assert _spans(text) == [name]


@pytest.mark.parametrize("text", [
    "not: yarın gününe kadar bekleyebileceğini söyledi",  # a rare inflected verb is no name word
    "pasta tossed with basil pesto and mushrooms",  # English words that are also first names, in prose
    "create an audio file with a soothing melody",
    "each block holds a cryptographic hash of the previous one",
    "order status: pending review",
    "the grace period ends soon, john said",  # a first name beside everyday words
    "we met john at the park",
    "ahmet bey yarın gelecek",  # a title is no surname
    "она снова готова помочь",  # "-ова" words the dictionary knows
    "kargo takip numarası gelmedi",
    "orhan'ın siparişi yolda",  # one name word alone
])
def test_everyday_words_beside_a_name_stay(text):
    assert _spans(text) == []


@pytest.mark.parametrize("text", [
    "Магазин отмена тариф подписка возврат статус, доставка товар заказ.",  # a surname-shaped word, no name
    "Клиент: трофимова оксана, договор от марта",
    "жанар трофимова звонила вчера насчёт возврата",
    "talep sahibi: elmeddin abbasli",  # a labelled pair of rare words, no listed name
    "sabah orhan zorvadek tekrar yazdı, kargo hâlâ gelmedi",
])
def test_text_without_a_lead_word_skips_the_pass_with_the_same_result(monkeypatch, text):
    import pipeline.data.pii.lower_pairs as lp

    fast = lower_pairs(TextContext(text, "ru"))
    monkeypatch.setattr(lp, "_may_lead", lambda ctx: True)  # the full pass over every word
    assert lower_pairs(TextContext(text, "ru")) == fast
