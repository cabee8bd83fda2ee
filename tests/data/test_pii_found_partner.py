"""Names in English and Russian text that the record already holds, or that a slot says are names: the other word
beside a found name in lower case, capitals or title case (found_partner), a full name's everyday word alone in a
person's slot (en_found_again), a town as a subject's surname (en_subject), a town or an owner beside a named
person (en_beside_a_name), a greeted word of middle frequency (en_addressed), the value of a label that says a
name follows (en_labels), a writer's name after "this is" in lower case (en_this_is). Issue 29.

The name words are invented, or everyday words, places and names in half 0 of the names-dataset split (checked:
none in the evaluation's half); the sentences are written for these tests."""

import pytest
from pii_names import clean_text, half, step  # noqa: F401 (step: a fixture)

from pipeline.data.pii.en_labels import label_names
from pipeline.data.pii.en_this_is import this_is_names

pytestmark = pytest.mark.timeout(300)

NAME_WORDS = ("Quessany", "Zorvakil", "Quillbury", "Dhaka", "Fleet", "King", "Max", "Here", "Harbor", "Copper",
              "Sam", "Salem", "Kalem", "Boston", "Hyde", "Monroe", "London", "Tulsa", "Carla", "Line", "Рус", "Зорбекович", "Charlie", "Lewis", "Legend", "Barber", "Кызбурат", "Гурванец", "Ремонта", "Смелый", "Сава", "Жарбек", "Астана", "Неважно")


def test_the_name_words_are_not_in_the_evaluation_half():
    assert [w for w in NAME_WORDS if half(w) != 0] == []


@pytest.mark.parametrize("text, gone, kept", [
    # lower case: the found first name and a place after it, before a verb or the clause's end
    ("Sure thing Quessany, one moment. quessany dhaka dropped by the store to pick up the order.",
     ["quessany", "dhaka"], ["dropped by the store"]),
    ("Told Quessany the parcel is on its way.\nship to: quessany dhaka\nThe app keeps emptying my cart.",
     ["quessany", "dhaka"], ["The app"]),
    # capitals: an everyday word before a verb of calling
    ("Hey Zorvakil, quick question. ZORVAKIL FLEET CALLED YESTERDAY ABOUT THE REFUND.",
     ["ZORVAKIL", "FLEET"], ["CALLED YESTERDAY"]),
    # Russian, lower case: the found name in another case and a city beside it, before the verb
    ("Позвоните Кызбурату после шести. сегодня утром кызбурат астана оставил отзыв на сайте.",
     ["Кызбурат", "кызбурат", "астана"], ["оставил отзыв"]),
    # Russian, capitals: the word before a found name after "это"
    ("Напомните Кызбурату про документы. ЭТО ГУРВАНЕЦ КЫЗБУРАТ, ПИШУ ПО ПОВОДУ ВОЗВРАТА.",
     ["ГУРВАНЕЦ", "КЫЗБУРАТ"], ["ПИШУ ПО ПОВОДУ"]),
    # capitalized: the word before a found surname opening the clause, before a verb ("Sam" is an everyday word)
    ("Mr. Copper agreed to the exchange. Sam Copper dropped by the store.", ["Sam", "Copper"], ["dropped by"]),
    # the pair joins the record's names: the everyday word alone in the possessive later
    ("ZORVAKIL FLEET CALLED YESTERDAY ABOUT THE REFUND.\nHey Zorvakil, quick question. Fleet's order is on hold.",
     ["FLEET", "Fleet"], ["order is on hold"]),
    # Russian, capitalized mid-sentence: the word after a found name in its case, an ordinary word too
    ("Позвоните Кызбурату. Курьер не застал Кызбурата Ремонта дома.", ["Кызбурат", "Ремонта"], ["дома"]),
    # a signature line: the found name and the word beside it fill the line
    ("Роутер мигает красным.\n--\nКызбурат Смелый\nотдел продаж\nПривет, Кызбурат, всё получилось?",
     ["Кызбурат", "Смелый"], ["отдел продаж"]),
    # a time adverb ends the pair after a cue; the surname found alone then joins the book with the pair
    ("SPOKE TO CARLA HALL JUST NOW, ALL SORTED. Ms. Hall asked for a copy. Hall confirmed the new address.",
     ["CARLA", "HALL", "Hall"], ["JUST NOW"]),
    ("spoke to quessany line just now, all sorted.\nThanks Quessany! Line's order is on hold.", ["line", "Line"],
     ["just now"]),
    # a lower-case mention before the words that found the name: a second pass
    ("рус гурванец звонил вчера насчёт возврата. Рус Зорбекович просил перезвонить.", ["рус", "гурванец", "Рус"],
     ["звонил вчера"]),
])
def test_the_other_word_of_a_found_name(step, text, gone, kept):
    out = clean_text(step, text)
    assert all(w not in out for w in gone) and all(w in out for w in kept), out


@pytest.mark.parametrize("text, kept", [
    ("Sure thing Quessany. told quessany thanks.", ["thanks"]),  # a reply word
    ("Sure thing Quessany. quessany confirmed.", ["confirmed"]),  # a verb, not a surname
    ("Sure thing Quessany. quessany called yesterday about the bill.", ["called yesterday"]),
    ("Позвоните Кызбурату. кызбурат неважно себя чувствует.", ["неважно"]),  # an adverb
    ("Позвоните Кызбурату. потом кызбурат звонил снова.", ["потом", "звонил"]),
    # capitalized mid-sentence, in another case or a place: another noun phrase
    ("Позвоните Кызбурату. Передал Кызбурату Москву в подарок.", ["Москву"]),
    # capitalized, only before a verb, never a role or time word
    ("Mr. Quillbury agreed. Customer Quillbury called. Yesterday Quillbury called.", ["Customer", "Yesterday"]),
])
def test_no_function_word_or_verb_is_a_found_names_other_word(step, text, kept):
    out = clean_text(step, text)
    assert all(w in out for w in kept), out


def test_a_russian_found_name_typed_in_lower_case(step):
    out = clean_text(step, "Позвоните Кызбурату после шести. Вчера звонил кызбурат, просил перезвонить.")
    assert "ызбурат" not in out, out


@pytest.mark.parametrize("text, gone, kept", [
    ("Spoke to Zorvakil King just now. King confirmed the new address. Told King the parcel is on its way. "
     "King's order is on hold.", ["King"], []),
    ("Spoke to Max Quillbury. Told Max the parcel is on its way.", ["Max"], []),
    # a word of a full name as what it is: after a determiner, before another capitalized word
    ("Spoke to Zorvakil King. The King Street office is shut. I told the King's guard.",
     ["Zorvakil"], ["King Street", "the King's guard"]),
    ("Spoke to Max Quillbury. Our Max plan is cheaper. Max Pro is sold out.", ["Quillbury"], ["Max plan", "Max Pro"]),
])
def test_a_full_names_everyday_word_alone_in_a_persons_slot(step, text, gone, kept):
    out = clean_text(step, text)
    assert all(w not in out for w in gone) and all(w in out for w in kept), out


@pytest.mark.parametrize("text, names", [
    # words of middle frequency (Zipf 4.15, 4.27), neither rare nor listed
    ("Name on the order: Harbor Copper\nThe router light keeps blinking red.", ["Harbor Copper"]),
    ("customer name: harbor copper\nIt went to the wrong depot.", ["harbor copper"]),
    ("It looks like I was charged twice. Full name: Quessany Here", ["Quessany Here"]),
    ("Name on the card: Visa Gold", []),  # everyday words, no anchor
    ("Customer name: Acme Corporation", []),  # a firm
    ("Full name: see attached", []),
])
def test_the_value_of_a_label_that_says_a_name_follows(text, names):
    assert [text[h.start:h.end] for h in label_names(text)] == names


@pytest.mark.parametrize("text, gone, kept", [
    # en_subject: a rare word, then a town as its surname, before a calling verb
    ("CASE NOTE: YESTERDAY TULSA QUESSANY EMAILED TWICE.", ["TULSA", "QUESSANY"], ["YESTERDAY", "EMAILED"]),
    # "Kalem": a Turkish word (pen), rare in English
    ("Kalem Boston wants the delivery moved to Saturday.", ["Kalem", "Boston"], ["Saturday"]),
    ("The office in Salem wants the form.", [], ["Salem"]),  # no rare word
])
def test_a_town_as_the_surname_of_a_subject(step, text, gone, kept):
    out = clean_text(step, text)
    assert all(w not in out for w in gone) and all(w in out for w in kept), out


def test_a_russian_name_found_in_an_oblique_case_the_dictionary_reads_as_a_place(step):
    # "Саву": the river Сава's accusative to the dictionary; its other case forms are the person's too
    out = clean_text(step, "Курьер не застал Саву Гурванца дома. Отправил чек Саве на почту.")
    assert "Сав" not in out, out


@pytest.mark.parametrize("text, gone, kept", [
    # en_beside_a_name: in a record that names a person, a town before a calling verb, and the owner of an order
    ("Hi Quessany, item sent for repair. Hyde confirmed the new address.", ["Quessany", "Hyde"], ["new address"]),
    ("Got it Quessany. Monroe's order is on hold until Monday.", ["Monroe"], ["order is on hold"]),
    ("Got it Quessany. Tulsa's order is on hold until Monday.", ["Tulsa"], []),
    # a big city, a shop of middle frequency in English, no person in the record
    ("Got it Quessany. London's account is open. Boston confirmed the order.", ["Quessany"], ["London", "Boston"]),
    ("Monroe's order is on hold.", [], ["Monroe"]),
])
def test_a_town_or_an_owner_beside_a_named_person(step, text, gone, kept):
    out = clean_text(step, text)
    assert all(w not in out for w in gone) and all(w in out for w in kept), out


@pytest.mark.parametrize("text, gone, kept", [
    # greeted alone, a word of middle frequency (Zipf 4.4-4.5) is a name; thanked brands and address terms stay
    ("Case note: Good morning Charlie! The parcel is late.", ["Charlie"], ["The parcel"]),
    ("Thanks Amazon! Good morning Team! Cheers Legend! Welcome Home!", [], ["Amazon", "Team", "Legend", "Home"]),
    # the found first name and the capitalized word after it, the pair the subject of a person's verb
    ("Yesterday Lewis Hall emailed twice about the invoice.\nThanks Lewis! Hall's order is on hold.",
     ["Lewis", "Hall"], ["emailed twice"]),
    ("Thanks Lewis! Yesterday Lewis Street closed.", ["Lewis!"], ["Lewis Street"]),
])
def test_a_greeted_name_and_its_surname(step, text, gone, kept):
    out = clean_text(step, text)
    assert all(w not in out for w in gone) and all(w in out for w in kept), out


@pytest.mark.parametrize("text, names", [
    # en_this_is: "kalem" is a Turkish word, rare in English
    ("hi, this is kalem zorvakil, i ordered a kettle last week.", ["kalem zorvakil"]),
    ("this is quessany barber.", ["quessany barber"]),
    ("this is very good, thanks. this is my order. this is bad news, sorry. this is kalem here.", []),
])
def test_a_writer_who_says_this_is_in_lower_case(text, names):
    assert [text[h.start:h.end] for h in this_is_names(text)] == names


def test_this_is_in_lower_case_through_the_step(step):
    out = clean_text(step, "hi, this is kalem zorvakil, i ordered a kettle last week.")
    assert "kalem" not in out and "zorvakil" not in out and "kettle" in out, out
