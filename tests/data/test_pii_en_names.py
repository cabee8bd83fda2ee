"""The English name signals (en_*.py): names greeted, told, in the possessive, grown by English neighbours, and
everyday first names at a sentence start left as words; and the record's later mentions of a first name of middle
frequency (later.sentence_start_name_word). Issue 29.

The name words are invented or in half 0 of the names-dataset split (never the evaluation's half, checked
below); the sentences are written for these tests."""

import pytest
from pii_names import clean_text, half, step  # noqa: F401 (step: a fixture)

from pipeline.data.pii.en_addressed import addressed_names
from pipeline.data.pii.en_first_and_surname import first_and_surnames
from pipeline.data.pii.en_labels import label_names
from pipeline.data.pii.en_neighbours import grow_english
from pipeline.data.pii.en_possessive import possessive_names
from pipeline.data.pii.en_sentence_start import drop_word_openers
from pipeline.data.pii.later import sentence_start_name_word
from pipeline.data.pii.text import Hit, fold

pytestmark = pytest.mark.timeout(300)

NAME_WORDS = ("Quessany", "Zorvakil", "Quillbury", "Tavrenko", "Kate", "Imran", "Salman", "Katja", "Engel", "Nasir",
              "Bill", "Clare", "Jane", "Max", "Heart", "Murray", "Hall", "Church", "Lang",
              "Charlie", "North", "Tommy", "Hilfiger")


def test_the_name_words_are_not_in_the_evaluation_half():
    assert [w for w in NAME_WORDS if half(w) != 0] == []


def _words(text: str, hits: list[Hit]) -> list[str]:
    return [text[h.start:h.end] for h in hits]


@pytest.mark.parametrize("text, gone, kept", [
    # a listed first name and an everyday word after it, mid-sentence: the whole name
    ("My order is stuck. Spoke to Max Hall about the refund. Return started.", ["Max", "Hall"], []),
    ("The parcel went to Jane Church. The Galaxy S23 case doesn't fit.", ["Jane", "Church"], ["Galaxy"]),
    ("Sent the renewal offer. Ship to: Bill North\nBill will call back after lunch.", ["Bill", "North"], []),
])
def test_a_first_name_and_the_word_after_it_mid_sentence(step, text, gone, kept):
    out = clean_text(step, text)
    assert all(w not in out for w in gone) and all(w in out for w in kept), out


@pytest.mark.parametrize("text, gone, kept", [
    # "Hall" is a stop word as a team or building word, and a listed surname: after a title or an introduction
    # it ends the name as "Park" and "Church" do (names.STOP_SURNAMES once held only the words before "Hall")
    ("Dear Jane Hall, your order shipped.", ["Jane", "Hall"], []),
    ("my name is jane hall and the parcel is late", ["jane", "hall"], []),
    ("The meeting is in the city hall tomorrow.", [], ["city hall"]),
])
def test_a_surname_that_is_a_stop_word_after_a_cue(step, text, gone, kept):
    out = clean_text(step, text)
    assert all(w not in out for w in gone) and all(w in out for w in kept), out


@pytest.mark.parametrize("text, names", [
    ("Spoke to Max Hall about it, then Bill North.", ["Max Hall", "Bill North"]),
    ("The office on Jane Street is shut.", []),  # a street
    ("We met at Jane Park and moved to Bill North Dakota.", []),  # a park; a capital after the pair
    ("Join the Pro Max Hall today.", []),  # no lower-case word before the first name
    ("A shirt from Tommy Hilfiger arrived.", []),  # a brand
    ("Open max.com or see Max Hall.pdf now.", []),
])
def test_first_and_surnames(text, names):
    assert _words(text, first_and_surnames(text)) == names


@pytest.mark.parametrize("text, names", [
    ("Anything else? Good morning Quessany!", ["Quessany"]),
    ("Sure thing Clare, one moment.", ["Clare"]),
    ("Case note: Thanks, Tavrenko.", ["Tavrenko"]),
    ("Told Zorvakil the parcel is on its way.", ["Zorvakil"]),
    ("Please let Quessany know.", ["Quessany"]),
    ("Good morning Team! Thanks Again. Sure thing Monday, fine.", []),  # address terms, calendar words
    ("Good morning everyone, the update is out.", []),
    ("We told Customers the news.", []),  # an everyday word
])
def test_greeted_and_told_words(text, names):
    assert _words(text, addressed_names(text)) == names


@pytest.mark.parametrize("text, names", [
    ("Quillbury's order is on hold until Monday.", ["Quillbury"]),
    ("I checked Tavrenko's account.", ["Tavrenko"]),
    ("I shop at Sainsbury's every week.", []),  # a brand: written in the possessive as often as without it
    ("The Kohl's sale starts today, and Wendy's burgers are cold.", []),
    ("Trader Joe's milk is gone.", []),  # after another capitalized word
    ("Walmart's prices went up, Tesco's too.", []),  # shops: common in English at large
    ("Hall's order is late.", []),  # an everyday word
])
def test_rare_words_in_the_possessive(text, names):
    assert _words(text, possessive_names(text)) == names


@pytest.mark.parametrize("text, names", [
    ("Ship to: Quessany Zorvakil\nThe box is damaged.", ["Quessany Zorvakil"]),
    ("Order 12. ship to: tavrenko quillbury", ["tavrenko quillbury"]),
    ("Bill to: Katja Tavrenko, paid by card.", ["Katja Tavrenko"]),
    ("Can you ship to: Florence, Alabama?", []),  # a place
    ("Bill to: Accounts Payable", []),  # everyday words
    ("Can you deliver to Zorvakil today?", []),  # no label: no colon
    ("Priority: high. Ship to: Pop Quillbury", ["Pop Quillbury"]),  # an everyday word beside a rare one
    ("Case note: Caller: Bir Tavrenko, wants a callback.", ["Bir Tavrenko"]),  # a label that names a person
    ("Call log: name on the order: jane register", ["jane register"]),  # a listed first name, an everyday word
    ("Account holder: Zorvakil", ["Zorvakil"]),
    ("Caller: unknown number, no message. Customer: premium tier.", []),  # no anchor
    ("Product name: Rose Gold", []),  # no label of a person
    ("Name on the order: Zorvex Corporation", []),  # a firm
])
def test_values_of_shipping_labels(text, names):
    assert _words(text, label_names(text)) == names


@pytest.mark.parametrize("text, span, grown", [
    ("Call log: Kate Quillbury says hi.", "Quillbury", "Kate Quillbury"),  # a first name of middle frequency
    ("Nasir Zorvakil called.", "Zorvakil", "Nasir Zorvakil"),  # a Turkish word, no English one
    ("KATJA ENGEL DROPPED BY", "KATJA", "KATJA ENGEL"),  # capitals: the neighbour read in lower case
    ("KATJA ENGEL EMAILED TWICE", "KATJA ENGEL", "KATJA ENGEL"),  # not the verb
    ("Yesterday Zorvakil called.", "Zorvakil", "Zorvakil"),  # an everyday word
    ("Dear KATJA ENGEL", "KATJA ENGEL", "KATJA ENGEL"),
    ("Kind regards,\nMax Quillbury\nAccounts", "Quillbury", "Max Quillbury"),  # a listed first name, a word too
    ("THE LINE IS REGISTERED TO QUESSANY HEART.", "QUESSANY", "QUESSANY HEART"),  # the word that ends the clause
    ("This is Quessany Heart, from the shop.", "Quessany", "Quessany Heart"),
    ("Please call QUESSANY BACK.", "QUESSANY", "QUESSANY"),  # a function word
    ("I will see Quessany Tomorrow.", "Quessany", "Quessany"),  # a time word
    ("Quessany Zorvakil Heart.", "Quessany Zorvakil", "Quessany Zorvakil"),  # two words: a name already
    ("See you Monday Quillbury", "Quillbury", "Quillbury"),  # a calendar word before it
])
def test_english_neighbours_join_the_span(text, span, grown):
    s = text.index(span)
    out = grow_english(text, [Hit(s, s + len(span), "PERSON", 0.9, "t")])
    assert _words(text, out) == [grown]


@pytest.mark.parametrize("text, kept", [
    ("Bill me at the end of the month.", False),
    ("Bill called yesterday.", True),
    ("Bill will call back.", True),
    ("Bill says hello.", True),
    ("Thanks. Bill me later.", False),
    ("I asked Bill me.", True),  # not at a sentence start
    ("Quessany period ends.", True),  # no everyday word
])
def test_everyday_first_names_opening_a_sentence(text, kept):
    s = text.index("Bill") if "Bill" in text else 0
    e = text.index(" ", s)
    out = drop_word_openers(text, [Hit(s, e, "PERSON", 0.9, "gazetteer")])
    assert bool(out) is kept


def test_a_first_name_of_middle_frequency_is_looked_for_again():
    assert sentence_start_name_word(fold("Imran")) and sentence_start_name_word(fold("Clare"))
    assert not sentence_start_name_word(fold("Yesterday")) and not sentence_start_name_word(fold("Dosyayı"))


@pytest.mark.parametrize("text, gone, kept", [
    ("Customer name: Imran Quillbury\nFollow-up on Thursday. Imran will call back after lunch.", ["Imran"], []),
    ("Salman Zorvakil called yesterday. Told Salman the parcel is on its way.", ["Salman"], []),
    ("Call log: Kate Quillbury says the parcel never came.", ["Kate", "Quillbury"], []),
    ("Sure thing Quessany, one moment. Quillbury's refund is on hold.", ["Quessany", "Quillbury"], []),
    ("Quessany will call back after lunch.", ["Quessany"], []),
    ("Case note: Caller: Tavrenko Quillbury, wants a callback.", ["Tavrenko", "Quillbury"], []),
    ("name on the order: katja quillbury", ["katja", "quillbury"], []),
    ("the line is registered to zorvakil tavrenko.", ["zorvakil", "tavrenko"], []),
    ("Can you deliver to Florence, Alabama?", [], ["Florence"]),
    ("THIS MORNING KATJA ENGEL ASKED FOR A REPLACEMENT.", ["KATJA", "ENGEL"], ["ASKED"]),
    ("Bill me at the end of the month. I shop at Sainsbury's.", [], ["Bill", "Sainsbury"]),
])
def test_through_the_step(step, text, gone, kept):
    out = clean_text(step, text)
    assert all(w not in out for w in gone) and all(w in out for w in kept), out


@pytest.mark.parametrize("text, gone, kept", [
    # a surname of middle frequency in the possessive, where the record names a person by a first name alone
    ("Return started. Quessany will call back after lunch. Engel's order is on hold.", ["Quessany", "Engel"], []),
    ("Got it Quessany / Lang's order is on hold until Monday.", ["Quessany", "Lang"], []),
    ("Lang's order is on hold until Monday.", [], ["Lang"]),  # no person named alone in the record
    ("Thanks Quessany! Hall's order is late.", ["Quessany"], ["Hall"]),  # an everyday word
    ("Thanks Quessany! Sainsbury's prices went up.", ["Quessany"], ["Sainsbury"]),  # a shop's possessive
    ("Thanks Quessany! Trader Joe's milk is gone.", ["Quessany"], ["Trader", "Joe"]),
])
def test_a_possessive_beside_a_first_name_alone(step, text, gone, kept):
    out = clean_text(step, text)
    assert all(w not in out for w in gone) and all(w in out for w in kept), out


@pytest.mark.parametrize("text, gone, kept", [
    # a word of middle frequency where only a person stands, in a record that names a person
    ("Got it Quessany\nCharlie will call back after lunch.", ["Quessany", "Charlie"], []),
    ("Hi Quessany, Told Kate the parcel is on its way.", ["Quessany", "Kate"], []),
    ("Charlie will call back after lunch.", [], ["Charlie"]),  # no person named in the record
    ("Thanks Quessany! Amazon confirmed the order. Support called me.", ["Quessany"], ["Amazon", "Support"]),
])
def test_a_word_where_a_person_stands_beside_a_name(step, text, gone, kept):
    out = clean_text(step, text)
    assert all(w not in out for w in gone) and all(w in out for w in kept), out


@pytest.mark.parametrize("text, names", [
    ("I've created a new shipment. Mr. Heart asked for a copy.", ["Heart"]),  # an everyday word
    ("Ms. Hall's order is on hold. Dr. Church said hi.", ["Hall", "Church"]),
    ("MR. QUILLBURY CALLED", ["QUILLBURY"]),
    ("Mr. And Mrs. Quillbury arrived.", ["Quillbury"]),  # a function word after the title
    ("Mrmbl Heart", []),
])
def test_words_after_a_title(text, names):
    from pipeline.data.pii.en_titled import titled_names

    assert _words(text, titled_names(text)) == names


@pytest.mark.parametrize("text, names", [
    ("Sure thing Murray, one moment.", ["Murray"]),  # a listed surname that is also a place
    ("Good morning Friday!", []),
])
def test_greeted_listed_names(text, names):
    assert _words(text, addressed_names(text)) == names
