"""Names no list holds, by orthography and by the record (issue 29): a capitalized word with an apostrophe and a
case suffix that is rare as a word is a proper noun (tr_suffix.py); a name found once in a record is found in
every casing there, a lower-case find included, and a rare first word of a sentence stays a name word (later.py).

The names are invented, in no name list, and in half 0 of the names-dataset split (never the evaluation's half,
checked below)."""
import re

import pytest
from pii_names import half, step  # noqa: F401 (step: a fixture)

from pipeline.data.pii.later import capitalized_forms, inflected_common, lower_case_name_words, sentence_start_name_word
from pipeline.data.pii.names import LATIN_FIRST, LATIN_LAST, LISTED_EXT
from pipeline.data.pii.text import fold
from pipeline.data.pii.tr_suffix import CASE_SUFFIXES

pytestmark = pytest.mark.timeout(300)

INVENTED = ("Eflinaz", "Kayratbek", "Batuğhan", "Nurelif", "Quillbury", "Evander", "Pendrick", "Fennick",
            "Cordelio")


def test_invented_names_are_listed_nowhere_and_not_in_the_evaluation_half():
    for w in INVENTED:
        assert fold(w) not in LATIN_FIRST | LATIN_LAST | LISTED_EXT, w
        assert half(w) == 0, w


def clean(step, *texts: str) -> list[str]:
    msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": c} for i, c in enumerate(texts)]
    rec = {"id": "x", "kind": "chat", "messages": msgs, "text": None, "source": {"file": "f", "line": 1},
           "meta": "{}"}
    return [m["content"] for m in step([rec])[0]["messages"]]


def left(words, out: str) -> list[str]:
    return [w for w in words if re.search(rf"(?<!\w){re.escape(w)}", out, re.I)]


# ---------------------------------------------------------------------------------------------- suffix
@pytest.mark.parametrize("text, name", [
    ("Paketi Kayratbek'e teslim ettik, imza alındı.", "Kayratbek"),
    ("Nurelif'in hattı dün kapandı.", "Nurelif"),
    ("Evrakları Batuğhan'dan aldım.", "Batuğhan"),
    ("Faturayı Eflinaz'a ilettim.", "Eflinaz"),
])
def test_a_rare_word_with_an_apostrophe_case_suffix_is_a_name(step, text, name):
    out = clean(step, text)[0]
    assert left([name], out) == [], out
    assert "<PERSON>'" in out  # the suffix stays, the name goes


@pytest.mark.parametrize("text", [
    "Paket Ankara'dan çıktı, İstanbul'a gidiyor.",
    "Siparişi Trendyol'dan verdim, Getir'den değil.",
    "Netflix'in fiyatı arttı, Migros'tan aldım.",
    "Bugün Yeni Kaledonya'ya uçuyoruz.",  # the end of a run of capitalized words: the run is decided as a whole
    "Costco's prices went up.",  # English "'s" is no signal: firms take it as often as persons
])
def test_common_places_firms_and_longer_proper_nouns_with_a_suffix_stay(step, text):
    assert clean(step, text)[0] == text


def test_the_suffix_set_holds_the_case_forms():
    assert {"ın", "nin", "ya", "tan", "nden", "yla", "lar"} <= CASE_SUFFIXES
    assert "dı" not in CASE_SUFFIXES  # a verb ending is no case suffix


# ---------------------------------------------------------------------------------------------- later mentions
def test_a_rare_first_word_of_a_sentence_is_looked_for_alone(step):
    out = clean(step, "Eflinaz Pendrick dün aradı, faturayı sordu.", "Eflinaz tekrar yazdı, bekliyor.")
    assert left(["Eflinaz", "Pendrick"], " ".join(out)) == [], out


def test_an_inflected_word_that_starts_a_sentence_is_no_name_word(step):
    out = clean(step, "Dosyayı Kayratbek adına açtım.", "Dosyayı kapattım, bilgi verildi.")
    assert out[1] == "Dosyayı kapattım, bilgi verildi.", out
    assert left(["Kayratbek"], out[0]) == [], out


def test_a_name_found_in_lower_case_is_found_capitalized_later(step):
    out = clean(step, "account holder: evander quillbury", "Told Evander the parcel is on its way.")
    assert left(["Evander", "Quillbury"], " ".join(out)) == [], out
    assert out[1].endswith("the parcel is on its way.")


def test_a_rare_name_found_capitalized_is_found_in_lower_case_later(step):
    out = clean(step, "Customer: Cordelio Fennick", "ok, fennick will call back tomorrow.")
    assert left(["Cordelio", "Fennick"], " ".join(out)) == [], out


def test_an_everyday_word_of_a_name_stays_in_lower_case(step):
    # "Yıldız" is the name here; "yıldız" in lower case is the word (star)
    out = clean(step, "Müşteri adı: Eflinaz Yıldız", "Ürün beş yıldız aldı.")
    assert out[1] == "Ürün beş yıldız aldı.", out


def test_later_helpers():
    assert sentence_start_name_word("eflinaz") and not sentence_start_name_word(fold("dosyayı"))  # folded keys
    assert inflected_common("siparişinizi") and not inflected_common("kayratbek")
    assert inflected_common(fold("kopyasını")) and not inflected_common(fold("karagöz"))  # a compound: no suffix
    assert lower_case_name_words("ilkay pendrick") == ("Ilkay", "İlkay", "Pendrick")


# ---------------------------------------------------------------------------------------------- capitals
@pytest.mark.parametrize("text, kept", [
    ("DENİZ ÇELİK DÜN ARADI.", "DÜN ARADI."),  # both words are everyday words: the verb makes them a name
    ("SİPARİŞ DENİZ ÇELİK ADINA OLUŞTURULMUŞ.", "ADINA OLUŞTURULMUŞ."),  # the cue word stays
    ("AZ ÖNCE EFLİNAZ KAYRATBEK İLE KONUŞTUM.", "İLE KONUŞTUM."),
    ("HAT SAHİBİ: MEHMET ÇELİK OLARAK KAYITLI.", "OLARAK KAYITLI."),  # everyday words do not join the name
])
def test_a_cue_makes_a_name_of_words_in_capitals(step, text, kept):
    out = clean(step, text)[0]
    assert left(["Deniz", "Çelik", "Eflinaz", "Kayratbek", "Mehmet"], out) == [], out
    assert out.endswith(kept), out


@pytest.mark.parametrize("text", ["SİPARİŞ DURUMU HAKKINDA BİLGİ İSTEDİ.", "KARGO FİRMASI ADRESİ BULAMADI DEDİ."])
def test_everyday_words_in_capitals_before_a_verb_stay(step, text):
    assert clean(step, text)[0] == text


def test_a_name_found_in_capitals_is_found_capitalized_later(step):
    # "EFLİNAZ": str.lower would give "efli̇naz" (i and a combining dot), a form no text holds
    out = clean(step, "BU HATTI EFLİNAZ KAYRATBEK KULLANIYOR.", "Eflinaz az önce tekrar yazdı.")
    assert left(["Eflinaz", "Kayratbek", "EFLİNAZ"], " ".join(out)) == [], out


def test_capitalized_forms():
    assert capitalized_forms("EFLİNAZ") == ("Eflinaz",)
    assert capitalized_forms("IŞIK") == ("Işik", "Işık")
    assert capitalized_forms("Evander") == ("Evander",)


# ---------------------------------------------------------------------------------------------- lone names
@pytest.mark.parametrize("text, name", [
    ("Tamam Eflinaz, bakıyorum.", "Eflinaz"),
    ("Thanks Evander!", "Evander"),
    ("Evet Kayratbek, hemen bakıyorum.", "Kayratbek"),
])
def test_a_rare_word_addressed_after_the_first_word_is_a_name(step, text, name):
    out = clean(step, text)[0]
    assert left([name], out) == [] and "<PERSON>" in out, out


def test_a_rare_first_word_before_a_lower_case_word_is_a_name_in_turkish(step):
    out = clean(step, "Kargo yolda. Kayratbek faturanın kopyasını istedi.")[0]
    assert out == "Kargo yolda. <PERSON> faturanın kopyasını istedi.", out


@pytest.mark.parametrize("text", [
    "Summarize the following text in two sentences.",  # English: a rare first word is often an imperative
    "Preheat the oven to 180 degrees.",
    "In Corinth, the temple was rebuilt.",  # a place after a preposition, not a person addressed
    "Dosyayı kapattım, bilgi verildi.",  # an inflected Turkish word starts the sentence
    "Kargoyu teslim ettik.",
])
def test_rare_words_that_are_no_lone_names_stay(step, text):
    assert clean(step, text)[0] == text


# ---------------------------------------------------------------------------------------------- sentence openers
@pytest.mark.parametrize("text, kept", [
    ("Dosyayı Kayratbek adına güncelledim.", "Dosyayı "),  # an inflected noun starts the sentence
    ("Belgeleri Kayratbek Bey'den aldım.", "Belgeleri "),
    ("Günaydın Eflinaz Hanım!", "Günaydın "),  # a greeting (also a Faker first name)
])
def test_the_first_word_of_a_sentence_that_is_a_word_is_not_replaced(step, text, kept):
    out = clean(step, text)[0]
    assert out.startswith(kept + "<PERSON>"), out


def test_a_label_and_a_name_keep_the_name_whole(step):
    out = clean(step, "Müşteri adı: Deniz Kayratbek")[0]
    assert out == "Müşteri adı: <PERSON>", out


# ---------------------------------------------------------------------------------------------- lower case
def test_a_labelled_lower_case_name_keeps_a_second_word_that_is_a_rarer_common_word(step):
    out = clean(step, "customer name: evander lantern\nok, thanks")[0]
    assert out == "customer name: <PERSON>\nok, thanks", out


def test_two_lower_case_words_before_a_calling_verb(step):
    assert clean(step, "faith adkins asked for a refund.")[0] == "<PERSON> asked for a refund."


@pytest.mark.parametrize("text", ["faturanın kopyasını istedi.", "the customer asked for a refund.",
                                  "sipariş durumu hakkında bilgi istedi."])
def test_ordinary_lower_case_words_before_a_calling_verb_stay(step, text):
    assert clean(step, text)[0] == text


def test_pair_before_verb():
    from pipeline.data.pii.latin_names import _listed_name
    from pipeline.data.pii.lower_cue import ends_value, pair_before_verb
    from pipeline.data.pii.name_signals import Rarity
    from pipeline.data.pii.names import STOP

    rarity = Rarity("tr")
    assert pair_before_verb("eflinaz", "kayratbek", rarity, STOP, _listed_name, frozenset())
    assert not pair_before_verb(fold("faturanın"), fold("kopyasını"), rarity, STOP, _listed_name, frozenset())
    assert ends_value("ad: x y", 7) and ends_value("ad: x y, z", 7) and not ends_value("ad: x y z", 7)


def test_a_signature_under_a_closing_formula_keeps_its_first_word(step):
    # "Bahar" is also a word (spring); under "Saygılarımla," the line is a name, not a sentence
    out = clean(step, "Saygılarımla,\nBahar Kayratbek")[0]
    assert out == "Saygılarımla,\n<PERSON>", out
