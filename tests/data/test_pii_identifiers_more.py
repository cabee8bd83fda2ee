"""Identifiers in the shapes issue 29 found missed: phones in other national shapes (dotted US, German mobiles
with their trunk 0, Indian numbers), Russian plates, Russian internal passports without a context word; and
the numbers that must stay (order numbers, dates, amounts, part numbers in mixed scripts)."""
import pytest

from pipeline.data.pii.engine import get_detector, resolve

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def detector():
    return get_detector(("tr", "ru", "en"))


def kept(detector, text: str, lang: str) -> list[tuple[str, str]]:
    hits = detector.detect([(text, lang)])[0]
    spans, _ = resolve(hits, 0.5)
    return [(text[h.start:h.end], h.entity) for h in spans]


@pytest.mark.parametrize("lang, text, value, entity", [
    # phones
    ("ru", "Номер жены 8 (985) 527-38-23, звоните вечером", "8 (985) 527-38-23", "PHONE"),
    ("en", "Best number: 305-880-5327", "305-880-5327", "PHONE"),
    ("en", "Best number: 305.880.5327", "305.880.5327", "PHONE"),
    ("en", "My UK mobile is 07911 123456", "07911 123456", "PHONE"),
    ("en", "German mobile 0151 23456789", "0151 23456789", "PHONE"),
    ("en", "Reach me in Berlin: 0151 2345 6789", "0151 2345 6789", "PHONE"),
    ("en", "India office: 098765 43210", "098765 43210", "PHONE"),
    ("en", "Indian mobile 98765 43210", "98765 43210", "PHONE"),
    # Russian plates, Cyrillic letters (alone) or Latin look-alikes and lower case (with a plate word)
    ("ru", "Машина К334НТ 177 стояла у подъезда", "К334НТ 177", "LICENSE_PLATE"),
    ("ru", "Видел машину А123ВС77 у дома", "А123ВС77", "LICENSE_PLATE"),
    ("ru", "Госномер: Е 005 КХ 750 RUS", "Е 005 КХ 750 RUS", "LICENSE_PLATE"),
    ("ru", "номер машины а123вс 77", "а123вс 77", "LICENSE_PLATE"),
    ("en", "the car plate is A123BC 777", "A123BC 777", "LICENSE_PLATE"),
    # Turkish plates stay found
    ("tr", "Araç 34 ABC 123 plakalı", "34 ABC 123", "LICENSE_PLATE"),
    # Russian internal passports: with or without the word
    ("ru", "паспорт 45 10 123456", "45 10 123456", "PASSPORT"),
    ("ru", "Паспорт: 4510 123456", "4510 123456", "PASSPORT"),
    ("ru", "Данные: 45 10 123456, прописка московская", "45 10 123456", "PASSPORT"),
    ("ru", "Прислал 4510 123456, проверьте", "4510 123456", "PASSPORT"),
    ("ru", "45 10 123456 выдан ОВД района Хамовники", "45 10 123456", "PASSPORT"),
])
def test_identifier_shapes_are_found(detector, lang, text, value, entity):
    got = kept(detector, text, lang)
    assert any(v == value and e == entity for v, e in got), got


@pytest.mark.parametrize("lang, text", [
    ("en", "Order 305-880-5327 shipped yesterday"),
    ("en", "Invoice 2024-03-05 total 1 250 000 USD"),
    ("en", "Released 12.03.2024, build 2.10.1"),
    ("ru", "Заказ 45 10 123456 отправлен"),
    ("ru", "Заказ №1234567890 от 12.03.2024 на сумму 15 000 руб."),
    ("en", "Part A123BC77 is out of stock"),
    ("ru", "Деталь А123BC77 нет на складе"),  # Cyrillic А, Latin BC: no plate is typed in two scripts
    ("en", "Serial 0151 23456789 on the order form"),
])
def test_numbers_that_are_not_identifiers_stay(detector, lang, text):
    assert kept(detector, text, lang) == []


def test_german_area_code_slash_is_a_phone_not_a_fraction(detector):
    assert kept(detector, "Handy: 0151/57390093, ab 18 Uhr", "en") == [("0151/57390093", "PHONE")]
    assert kept(detector, "ratio 3/4 and 12/2024", "en") == []


@pytest.mark.parametrize("lang, text, value, entity", [
    # the negative word sits inside a line of its own, code or a URL, above the identifier
    ("tr", "Takip linki: https://kargo.example.com.tr/takip?no=TRK48213\n39653227984 numaralı TC ile kayıt var mı?",
     "39653227984", "TCKN"),
    ("tr", "```sql\nSELECT Name FROM world ORDER BY Name;\n```\nBana (0531) 021 7500 numarasından ulaşın.",
     "(0531) 021 7500", "PHONE"),
])
def test_a_negative_word_on_a_line_above_does_not_lower_an_identifier(detector, lang, text, value, entity):
    assert (value, entity) in kept(detector, text, lang)


def test_a_negative_label_that_ends_the_line_above_still_lowers(detector):
    """"Sipariş no:" alone on its line labels the number under it: an order number, not a phone."""
    assert kept(detector, "Sipariş no:\n0531 021 7500", "tr") == []
