"""Name words that name a place, a car or a brand (issue 29's hard negatives, not_person.py): "stuck in <city>",
"<city>, <state>", a car make and its model, a brand after a product or firm noun stay; the same words as a
person's name, with a cue or a calling verb, still go.

Every name word here is in half 0 of the names-dataset split (never the evaluation's half, checked below); the
sentences are written for these tests."""

import pytest
from pii_names import clean_text, half, step  # noqa: F401 (step: a fixture)

from pipeline.data.pii.not_person import PLACES, VEHICLES, place_or_thing
from pipeline.data.pii.text import Hit

pytestmark = pytest.mark.timeout(300)

NAME_WORDS = ("Douglas", "Franklin", "Clayton", "Logan", "Skoda", "Fabia", "Sandero", "Ив", "Роше", "Коко",
              "Шанель", "Eflinaz", "Quillbury", "Марии", "Мария")


def test_the_name_words_are_not_in_the_evaluation_half():
    assert [w for w in NAME_WORDS if half(w) != 0] == []




@pytest.mark.parametrize("text", [
    "The van broke down near Douglas.",
    "Our courier has been stuck in Franklin since Monday.",
    "Please ship the spare part to Clayton, Georgia.",
    "Skoda Fabia için silecek istiyorum.",       # a make and its model at a sentence start
    "Dacia Sandero için lastik lazım.",
    "Шампунь Ив Роше закончился.",              # a brand after a product noun
    "Мне подарили духи Коко Шанель.",
])
def test_a_place_car_or_brand_stays(step, text):
    assert clean_text(step, text) == text


@pytest.mark.parametrize("text, gone", [
    ("Douglas Quillbury called yesterday about the refund.", ("Douglas", "Quillbury")),
    ("My name is Franklin Eflinaz, I live in Franklin.", ("Franklin", "Eflinaz")),  # the record knows the person
    ("Spoke to Logan Quillbury just now.", ("Logan", "Quillbury")),
    ("The parcel for Clayton Quillbury is stuck in Douglas.", ("Clayton", "Quillbury")),
    ("Купила крем Марии на день рождения.", ("Марии",)),  # a name declined after a product noun: a person
])
def test_the_same_words_as_a_persons_name_still_go(step, text, gone):
    out = clean_text(step, text)
    assert [w for w in gone if w in out] == [], out


def test_place_or_thing_reads_the_context():
    text = "Waiting in Douglas, sent to Douglas's office, a Skoda Fabia."
    douglas, possessive = text.index("Douglas"), text.index("Douglas's")
    assert place_or_thing(text, Hit(douglas, douglas + 7, "PERSON", 0.6, "gazetteer"))
    assert not place_or_thing(text, Hit(possessive, possessive + 7, "PERSON", 0.6, "gazetteer"))
    # a cue made it a name: no list of places overrides that
    assert not place_or_thing(text, Hit(douglas, douglas + 7, "PERSON", 0.9, "gazetteer"))
    fabia = text.index("Fabia")
    assert place_or_thing(text, Hit(fabia, fabia + 5, "PERSON", 0.9, "gazetteer"))  # after its make


def test_the_lists_hold_what_the_rules_read():
    assert {"douglas", "franklin", "clayton"} <= PLACES
    assert "fabia" in VEHICLES["skoda"]


def test_oblique_name_tells_a_declined_name_from_an_indeclinable_brand():
    from pipeline.data.pii.ru_morph import oblique_name

    assert oblique_name("Марии") and not oblique_name("Мария")
    assert not oblique_name("Ив") and not oblique_name("Шанель")
