"""The English subject of a calling verb (en_subject): one or two words opening a clause before "called",
"emailed", "says" ... are a name when one is a listed first name or rare in English. Issue 29.

The name words are invented or in half 0 of the names-dataset split (never the evaluation's half, checked
below); the sentences are written for these tests."""

import pytest
from pii_names import clean_text, half, step  # noqa: F401 (step: a fixture)

from pipeline.data.pii.en_subject import subject_names

pytestmark = pytest.mark.timeout(300)

NAME_WORDS = ("Quessany", "Zorvakil", "Tavrenko", "Quillbury", "Max", "Jane", "Walter", "Hall", "Church", "Sen", "Dev",
              "Boston", "Park")


def test_the_name_words_are_not_in_the_evaluation_half():
    assert [w for w in NAME_WORDS if half(w) != 0] == []


@pytest.mark.parametrize("text, names", [
    ("Quessany Sen called yesterday about the refund.", ["Quessany Sen"]),  # "Sen" is a Turkish word only
    ("Yesterday Dev Zorvakil emailed twice.", ["Dev Zorvakil"]),  # after a time word
    ("Tavrenko Below dropped by the store.", ["Tavrenko Below"]),  # an everyday word beside a rare one
    ("Walter Church says the parcel never came.", ["Walter Church"]),  # a listed first name, a surname that is a word
    ("this morning jane hall asked for a replacement.", ["jane hall"]),  # lower case
    ("THIS MORNING QUESSANY ZORVAKIL ASKED FOR A REFUND.", ["QUESSANY ZORVAKIL"]),  # capitals
    ("Order 12 arrived late, Max will call back after lunch.", ["Max"]),  # after a comma, a person's verb
    ("Quillbury confirmed the new address.", ["Quillbury"]),  # one rare word
    ("jane boston dropped by the store.", ["jane boston"]),  # a listed first name, then any word: its surname
])
def test_subjects_that_are_names(text, names):
    assert [text[h.start:h.end] for h in subject_names(text)] == names


@pytest.mark.parametrize("text", [
    "The customer called yesterday.",  # a function word before a role word
    "Support Team says the outage is over.",  # everyday words, no listed first name
    "My wife called twice.",
    "The new bill says 40 dollars.",  # no clause start before "new bill"
    "Server says the disk is full.",  # an everyday word that is a listed first name, before no person's verb
    "Then Amazon confirmed the refund.",  # common in English
    "max will call back",  # one word in lower case says nothing
    "The Walter Church report says nothing.",  # after an article: no clause start
    "Then Boston called it off.",  # a place alone
    "jane then called.",  # a function word after a first name
])
def test_subjects_that_are_no_names(text):
    assert subject_names(text) == []


@pytest.mark.parametrize("text, gone, kept", [
    ("Quessany Sen called yesterday about the refund. Sen will call back.", ["Quessany", "Sen"], ["refund"]),
    ("yesterday jane hall emailed twice. Hall's order is on hold.", ["jane", "hall", "Hall"], ["order"]),
    ("The customer called yesterday. Support Team says hi.", [], ["customer", "Support", "Team"]),
])
def test_through_the_step(step, text, gone, kept):
    out = clean_text(step, text)
    assert all(w not in out for w in gone) and all(w in out for w in kept), out


def test_a_surname_that_is_a_stop_word_is_found_again_only_where_a_name_stands(step):
    # mentions.NameBook: "Park" of a name found whole, alone with a suffix or mid-sentence; after an article or at
    # a sentence start before no verb it is the word
    out = clean_text(step, "Walter Park called. Park's invoice is paid. I told Park. Park your car at the Park gate.")
    assert out.count("Park") == 2 and "Walter" not in out and "invoice" in out, out
    assert out.endswith("Park your car at the Park gate."), out
