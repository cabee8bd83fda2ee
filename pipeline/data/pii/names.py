"""The person-name recognizers' shared vocabulary: the name lists (Faker's, pipeline/resources/pii/names.json,
and the names-dataset extension names_ext.json) with the stop, place, office and surname-ending words of
context.json, the tokens of capitalized Latin and Cyrillic words, and the base class of the recognizers.

The recognizers: latin_names.py (Turkish and English), ru_names.py (the Russian gazetteer), ner_person.py
(natasha's NER for Russian).
"""
from __future__ import annotations

import re

from presidio_analyzer import LocalRecognizer

from pipeline.data.pii.name_context import CONTEXT_WORDS, TITLES_AFTER, Token
from pipeline.data.pii.text import Hit, TextContext, fold, load_data, to_results

NAMES = load_data("names.json")
# names-dataset first names and surnames (the allowed half, bench/pii/build_name_extension.py), folded: a name
# word only beside another name-like word, never alone
_NAMES_EXT = load_data("names_ext.json")

LATIN_FIRST = frozenset(fold(n) for n in NAMES["latin_first"])
LATIN_LAST = frozenset(fold(n) for n in NAMES["latin_last"])
LATIN_AMBIGUOUS = frozenset(fold(n) for n in NAMES["latin_ambiguous"])
TURKISH_WORDS = frozenset(fold(n) for n in NAMES["latin_ambiguous_tr"])  # ambiguous in Turkish text only
LISTED_EXT = frozenset(_NAMES_EXT["latin_first"] + _NAMES_EXT["latin_last"]) - LATIN_FIRST - LATIN_LAST \
    - LATIN_AMBIGUOUS - TURKISH_WORDS
PLACE_BEFORE = frozenset(fold(w) for w in CONTEXT_WORDS["name_place_before"])
NEVER = frozenset(fold(w) for w in CONTEXT_WORDS["name_never"])  # never in a name, but may follow one
# a place word that is also a surname ("West") is no stop word: "Steve West" is a name, "West Virginia" a place
STOP = frozenset(fold(w) for w in CONTEXT_WORDS["name_stop"] + CONTEXT_WORDS["name_titles_before"] + CONTEXT_WORDS["name_titles_after"]) \
    | (PLACE_BEFORE - LATIN_LAST - LATIN_FIRST) | NEVER
OFFICES = frozenset(fold(w) for w in CONTEXT_WORDS["name_offices"])
OFFICE_NOT_NAME = OFFICES - LATIN_FIRST - LATIN_LAST  # "President", not "Pope" or "King" (surnames too)

# a trophy, institution or team named after a person or place: the words before it are no person
PROPER_NOUN_AFTER = frozenset(fold(w) for w in CONTEXT_WORDS["name_proper_noun_after"])
STOP = STOP | PROPER_NOUN_AFTER
# listed surnames that are stop words (Park, Day, Church, Hall): end a name unless context says
STOP_SURNAMES = (STOP - NEVER - TITLES_AFTER) & LATIN_LAST
SURNAME_ENDINGS = tuple(fold(w) for w in CONTEXT_WORDS["name_surname_endings"])

LATIN_UPPER = "A-ZÇĞİÖŞÜÂÊÎÔÛÉÈÁÍÓÚÑƏÄËÏÀÌÒÙÃÕÅØÆŒ"
LATIN_LOWER = "a-zçğıöşüâêîôûéèáíóúñäëəïàìòùãõåøæœß"
# A capitalized word not inside another word ("McDonald" is one token, "aBc" none) and its apostrophe
# suffix ("Ahmet'in", "O'Brien'in"). The pattern starts with a plain character class so that the regex
# engine skips to capitals; the word-start look-behind runs after that first character, only there.
LATIN_TOKEN = re.compile(
    rf"([{LATIN_UPPER}](?<![\w'’].)(?:(?<=O)['’][{LATIN_UPPER}][{LATIN_LOWER}]+(?:[{LATIN_UPPER}][{LATIN_LOWER}]+)?"
    rf"(?:-[{LATIN_UPPER}][{LATIN_LOWER}]+)?|[{LATIN_LOWER}]+(?:[{LATIN_UPPER}][{LATIN_LOWER}]+)?(?:-[{LATIN_UPPER}][{LATIN_LOWER}]+)?"
    rf"|[{LATIN_UPPER}]+))(?!\w)((?:['’][{LATIN_LOWER}]+)?)")
# an apostrophe inside: Ukrainian names in Russian text ("Демʼянюк", "Мар'яна"; U+02BC is a word character)
CYR_TOKEN = re.compile(r"([А-ЯЁ](?<![\w'’].)(?:[а-яё]+(?:[ʼ'’][а-яё]+)?(?:-[А-ЯЁ][а-яё]+)?|[А-ЯЁ]+))(?!\w)()")


_new_tok = tuple.__new__  # a Token without NamedTuple's Python-level __new__ (tens of thousands per batch)


def tokens(ctx: TextContext, regex, cache_key: str) -> list[Token]:
    """The tokens of `regex` in the text, computed once per text. A token's key is its slice of the folded
    text: fold keeps the length and maps each letter on its own, so the slice is fold(word)."""
    try:
        return ctx.extra[cache_key]
    except KeyError:
        pass
    text, norm = ctx.text, ctx.norm
    toks = ctx.extra[cache_key] = []
    for m in regex.finditer(text):
        s, e = m.span(1)
        toks.append(_new_tok(Token, (s, e, m.end(), text[s:e], norm[s:e])))
    return toks


class PersonRecognizer(LocalRecognizer):
    """Base of the PERSON recognizers: subclasses implement find(ctx) -> list[Hit] (the fast path calls it
    with a shared TextContext); Presidio's analyze builds a context of its own."""

    ENTITY = "PERSON"
    DEFAULT_LANGUAGE = "en"

    def __init__(self, language: str | None = None):
        super().__init__(supported_entities=["PERSON"], name=type(self).__name__,
                         supported_language=language or self.DEFAULT_LANGUAGE)

    def load(self):
        pass  # the gazetteers are module data; natasha's model loads on first use (ner.entity_spans)

    def find(self, ctx: TextContext) -> list[Hit]:
        raise NotImplementedError

    def analyze(self, text, entities, nlp_artifacts=None):
        if not text.strip():
            return []
        return to_results(self, self.find(TextContext(text, self.supported_language)))
