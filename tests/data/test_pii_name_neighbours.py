"""The rest of a name taken in part (neighbours.py) and a surname that is also a word at a sentence start
(later.surname_opens_sentence, mentions.NameBook): issue 29's partial names and later mentions.

The name words are invented or in half 0 of the names-dataset split (never the evaluation's half, checked
below); the sentences are written for these tests."""

import pytest
from pii_names import clean_text, half, step  # noqa: F401 (step: a fixture)

from pipeline.data.pii.later import surname_opens_sentence
from pipeline.data.pii.name_signals import Rarity
from pipeline.data.pii.names import LATIN_FIRST, LATIN_LAST, LISTED_EXT
from pipeline.data.pii.neighbours import grow_by_neighbours, mid_frequency_name_word
from pipeline.data.pii.text import fold

pytestmark = pytest.mark.timeout(300)

NAME_WORDS = ("Амирова", "Зарбека", "Zorvakil", "Eflinaz", "Quillbury", "Bulut", "Kara", "Harmankaya", "Ferit")


def test_the_name_words_are_not_in_the_evaluation_half():
    assert [w for w in NAME_WORDS if half(w) != 0] == []




def test_a_name_word_the_recognizer_left_beside_the_span_goes(step):
    out = clean_text(step, "Курьер не застал Амирова Зарбека дома.")
    assert "Амирова" not in out and "Зарбека" not in out, out


@pytest.mark.parametrize("text, span, grown", [
    ("Zorvakil Ahmad called.", "Ahmad", "Zorvakil Ahmad"),            # a rare word before
    ("Spoke to Ahmad Zorvakil today.", "Ahmad", "Ahmad Zorvakil"),    # and after
    ("Yesterday Ahmad called.", "Ahmad", "Ahmad"),                    # an everyday word is no name word
    ("Dosyayı Harmankaya adına açtım.", "Harmankaya", "Harmankaya"),  # an inflected word starts the sentence
    ("Stuck in Karachi Ahmad said.", "Ahmad", "Ahmad"),               # a place
    ("Ahmad Zorvakil'in talebi.", "Ahmad", "Ahmad"),                  # a suffixed word after: not this rule's
    ("Eflinaz Quillbury Zorvakil called.", "Eflinaz Quillbury Zorvakil", "Eflinaz Quillbury Zorvakil"),
])
def test_grow_by_neighbours(text, span, grown):
    s = text.index(span)
    a, b = grow_by_neighbours(text, s, s + len(span), 0, len(text))
    assert text[a:b] == grown


def test_a_surname_that_is_a_word_starts_a_sentence_as_the_persons(step):
    out = clean_text(step, "Müşteri adı: Eflinaz Bulut. Bulut faturanın kopyasını istedi.")
    assert "Bulut" not in out, out


def test_a_surname_word_of_no_person_of_the_record_stays(step):
    text = "Müşteri adı: Eflinaz Quillbury. Bulut hizmeti çalışmıyor."
    assert "Bulut hizmeti" in clean_text(step, text)


def test_surname_opens_sentence():
    assert surname_opens_sentence("Kara faturayı istedi.", 4, True)
    assert not surname_opens_sentence("Kara faturayı istedi.", 4, False)  # a first name: "Can you check"
    assert not surname_opens_sentence("Kara Kutu", 4, True)  # a capitalized word: another proper noun


# "Ferit": a Turkish first name in no list, as common in the corpus as many names are (Zipf 3.97)
def test_ferit_is_in_no_list_and_of_middle_frequency():
    everyday = Rarity("tr").everyday
    assert fold("Ferit") not in LATIN_FIRST | LATIN_LAST | LISTED_EXT
    assert mid_frequency_name_word("ferit", everyday) and not Rarity("tr").rare("ferit")
    assert not mid_frequency_name_word("dosya", everyday)        # an everyday word
    assert not mid_frequency_name_word("siparişinizi", everyday)  # an inflected one
    assert not mid_frequency_name_word("denizli", everyday)      # a place


@pytest.mark.parametrize("text, gone", [
    ("Ferit Bey tekrar aradı.", "Ferit"),                 # a title after it, at a sentence start too
    ("Eflinaz Ferit bugün mağazaya geldi.", "Ferit"),     # beside a rarer name word
])
def test_a_middle_frequency_name_word_goes_where_something_says_name(step, text, gone):
    assert gone not in clean_text(step, text)


# (an everyday word before Bey / Hanım is a surname: tr_titles.py, tests/data/test_pii_tr_signals.py)
@pytest.mark.parametrize("text", ["Ferit kalemi bugün geldi."])
def test_a_middle_frequency_word_alone_or_an_everyday_one_stays(step, text):
    assert clean_text(step, text) == text
