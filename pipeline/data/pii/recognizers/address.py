"""Street addresses in Turkish, Russian and English."""
from __future__ import annotations

import re

from pipeline.data.pii.recognizers.base import CYRILLIC, PiiRecognizer
from pipeline.data.pii.text import NON_WORD, load_data

_ADDR = load_data("address.json")


def _alt(words):
    return "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))


class AddressRecognizer(PiiRecognizer):
    """Street addresses, best effort: a street word (Mah., Cad., Sok., ул., пер., Street, Ave ...) with
    the name before or after it and the house number, flat and city that follow."""

    ENTITY = "ADDRESS"
    # a word of a street's name: capitalized letters (with ' or - inside) or a short number ("19 Mayıs");
    # not a code mixing both ("Pasaport No: Z61451471 Umut Apartmanı" names a building after a passport).
    # A numbered street ("1234. Sokak", "1203/5 Sk.") is its number right before the street word.
    _W = r"(?:[A-ZÇĞİÖŞÜ][^\W\d_]*(?:['’-][^\W\d_]+)*|\d{1,4})"
    _NUMBERED = r"\d{1,5}(?:/\d{1,3})?\.? "
    _TR = re.compile(
        r"(?<![\w.])(?:(?:" + _W + r" ){1,3}|" + _NUMBERED + r")(?:" + _alt(w for w in _ADDR["tr_street_words"])
        + r")\b\.?"
        r"(?:[ ,]+(?:(?:" + _W + r" ){0,3}|" + _NUMBERED + r")(?:" + _alt(_ADDR["tr_street_words"]) + r")\b\.?)*"
        r"(?:[ ,]*(?:No|Numara|Kapı\s*No)\s*[:.]?\s*\d+[A-Za-z]?(?:\s*/\s*\d+)?)?"
        r"(?:[ ,]*(?:Daire|D|Kat|K|İç\s*Kapı)\s*[:.]?\s*\d+)*"
        r"(?:[ ,]+\d{5})?"
        r"(?:[ ,]+[A-ZÇĞİÖŞÜ][\wçğıöşü]+\s*/\s*[A-ZÇĞİÖŞÜ][\wçğıöşü]+)?")
    _RU = re.compile(
        r"(?:(?<![\w])(?:" + _alt(_ADDR["ru_settlement_words"]) + r")\.?\s*[А-ЯЁ][\w-]+(?:\s[А-ЯЁ][\w-]+)?"
        r"(?:\s\([\w.]+\))?,\s*)?"
        r"(?<![\w])(?:" + _alt(_ADDR["ru_street_words"]) + r")\.?\s+[А-ЯЁ0-9][\w.-]*(?:\s+[А-ЯЁа-яё0-9][\w.-]*){0,3}?"
        r",?\s*(?:д\.|дом)\s*\d+[а-яА-Я]?(?:/\d+)?"
        r"(?:,?\s*(?:к\.|корп\.|корпус|стр\.|строение)\s*\d+[а-яА-Я]?(?:/\d+)?)*"
        r"(?:,?\s*(?:кв\.|квартира|оф\.|офис)\s*\d+)?"
        r"(?:,\s*\d{6})?")
    # not after "the" ("in the 1860 Cooper Union speech": a year); the suffix a whole word ("Land-Grant")
    _EN = re.compile(
        r"(?<![\w])(?<!the )(?<!The )\d{1,6}\s+(?:[A-Z][\w'.-]*\s+){1,3}(?:" + _alt(_ADDR["en_street_suffixes"])
        + r")\b(?![-'’]\w)\.?"
        r"(?:,?\s+(?:Apt\.?|Apartment|Suite|Ste\.?|Unit|#)\s*\w+)?"
        r"(?:,?\s*\n?\s*(?:[A-Z][a-z]+\s){0,2}[A-Z][a-z]+,\s*[A-Z]{2}\s+\d{5}(?:-\d{4})?)?")
    _TR_WORD = re.compile(r"(?<![\w])(?:" + _alt(_ADDR["tr_street_words"]) + r")\b")

    @staticmethod
    def _first_parts(words) -> frozenset:
        """The street words split as the regexes' word boundaries split text ("Apartmanı'nın", "б-р", "küme
        evler"): the first part of one must be a word of the text for a regex to match."""
        return frozenset(NON_WORD.split(w.lower().rstrip("."))[0] for w in words)

    _TR_TRIGGER = _first_parts(_ADDR["tr_street_words"])
    _RU_TRIGGER = _first_parts(_ADDR["ru_street_words"])
    _EN_TRIGGER = _first_parts(_ADDR["en_street_suffixes"])  # common words ("Court", "Field"): needs a digit too
    _TRIGGER_WORDS = _TR_TRIGGER | _RU_TRIGGER | _EN_TRIGGER

    def triggered(self, ctx):
        return not ctx.words.isdisjoint(self._TRIGGER_WORDS)

    def find(self, ctx):
        out = []
        text = ctx.text
        words = ctx.words
        regexes = []
        if ctx.lang != "ru":
            if not words.isdisjoint(self._TR_TRIGGER):
                regexes.append(self._TR)
            if not words.isdisjoint(self._EN_TRIGGER) and ctx.has_digit:  # a house number leads
                regexes.append(self._EN)
        if (ctx.lang == "ru" or CYRILLIC.search(text)) and not words.isdisjoint(self._RU_TRIGGER):
            regexes.append(self._RU)
        for rx in regexes:
            for m in rx.finditer(text):
                s, e = m.span()
                span = text[s:e]
                has_number = any(ch.isdigit() for ch in span)
                # without a house number a Turkish address needs two street words (Mah. + Sok.)
                if not has_number and (rx is not self._TR or len(self._TR_WORD.findall(span)) < 2):
                    continue
                out.append(self.hit(s, e, 0.7 if has_number else 0.55))
        return out
