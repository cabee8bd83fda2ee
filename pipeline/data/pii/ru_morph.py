"""Russian morphology for the name recognizers: pymorphy3's OpenCorpora dictionary (pymorphy3-dicts-ru, shipped
in its wheel; nothing is downloaded) tags first names (Name), surnames (Surn) and patronymics (Patr) in every
case form and in any casing, and places (Geox). It answers what the Faker-built lists cannot: a name the lists
lack ("Трофимовой", "Алёна"), a name typed in lower case ("меня зовут оксана трофимова"), and a capitalized word
that is a verb or adverb, not a name ("Передайте Трофимовой").

Every answer is cached per word: a chat's vocabulary repeats, and a parse costs ~50-100 us where a cached answer
costs well under one.
"""
from __future__ import annotations

import os
import re
import threading
from functools import lru_cache
from typing import NamedTuple

_LOCK = threading.Lock()
_ANALYZER = None


def _morph():
    global _ANALYZER
    if _ANALYZER is None:
        with _LOCK:
            if _ANALYZER is None:
                import pymorphy3  # ~0.1 s and ~15 MB: loaded on the first Cyrillic word, not at import

                _ANALYZER = pymorphy3.MorphAnalyzer(lang="ru")
    return _ANALYZER


def analyzer():
    """pymorphy3's MorphAnalyzer for Russian, one per process, loaded on first use."""
    return _morph()


class Reading(NamedTuple):
    """What the dictionary says a word is, as shares of its parses' scores (they sum to 1)."""

    kind: str | None  # "first", "middle", "last" where that reading is the word's likeliest, else None
    name: float       # share of the parses that are a person's name of any kind
    place: float      # share that are a place (Geox): "Владимире", "Королёве", "Пушкине"
    other: bool       # the likeliest parse is a word no name is: a verb, adverb, pronoun, preposition...
    known: bool       # the dictionary holds the word (not guessed from its ending)
    nominative: str | None = None  # the dictionary form of its likeliest singular name parse in another case


_KIND = (("Name", "first"), ("Patr", "middle"), ("Surn", "last"))
_NAME_GRAMS = frozenset(("Name", "Surn", "Patr"))
# parts of speech no person's name takes (surnames decline as nouns or adjectives: "Толстой", "Белый")
_NOT_A_NAME_POS = frozenset(("VERB", "INFN", "PRTF", "PRTS", "GRND", "ADVB", "NPRO", "PREP", "CONJ", "PRCL", "INTJ",
                             "PRED", "COMP", "NUMR", "ADJS"))
_CYR_WORD = re.compile(r"[а-яё]+(?:-[а-яё]+)?")
_NONE = Reading(None, 0.0, 0.0, False, False)


@lru_cache(maxsize=131072)
def reading(word: str) -> Reading:
    """The dictionary's reading of one Cyrillic word, in any casing."""
    w = word.lower()
    if len(w) < 2 or _CYR_WORD.fullmatch(w) is None:
        return _NONE
    parses = _morph().parse(w)
    if not parses:
        return _NONE
    shares = {"first": 0.0, "middle": 0.0, "last": 0.0}
    place = 0.0
    nominative = None
    for p in parses:
        tag = p.tag
        if nominative is None and "sing" in tag and _NAME_GRAMS & tag.grammemes:
            nominative = "" if "nomn" in tag else p.normal_form
        if "plur" in tag and "Surn" not in tag:
            continue  # "Маркет" read as the genitive plural of "Марка": no one is named in the plural
        for gram, kind in _KIND:
            if gram in tag:
                shares[kind] += p.score
                break
        else:
            if "Geox" in tag:
                place += p.score
    name = sum(shares.values())
    best = max(shares, key=shares.get)
    top = parses[0]
    known = bool(top.is_known)
    kind = best if known and name >= 0.5 else None
    other = known and name == 0.0 and top.tag.POS in _NOT_A_NAME_POS
    return Reading(kind, round(name, 3), round(place, 3), other, known, nominative or None)


def name_kind(word: str) -> str | None:
    """'first', 'middle' or 'last' where the dictionary reads the word as that kind of name more often than as
    anything else ("Оксана", "трофимовой", "Петровичу"); None for words that are more often common nouns
    ("Вера", "Август", "Лес") or unknown to the dictionary."""
    return reading(word).kind


def ordinary_word(word: str) -> bool:
    """The dictionary knows the word, and never as a name or place ("Клиенту", "Канат"): a capitalized word
    outside the lists that is not such a word may be a name the dictionary lacks ("Кенжекул", "Тиана",
    "ТАЛАС" before a surname)."""
    r = reading(word)
    return r.known and r.name == 0.0 and r.place == 0.0


def guessed_name(word: str) -> bool:
    """The dictionary lacks the word, and its guess from the ending is a name ("скиба", "салтанат"): weak
    (brands get such guesses too: "Леруа", "Мазда"), so it counts only beside a surname or a name."""
    r = reading(word)
    return not r.known and r.name >= 0.5


def not_a_name(word: str) -> bool:
    """A capitalized word the dictionary knows only as a verb, adverb, pronoun, interjection...: it starts a
    sentence ("Передайте", "Спасибо", "Сегодня") and is no first name the lists lack."""
    return reading(word).other


@lru_cache(maxsize=8192)
def oblique_name(word: str) -> bool:
    """The dictionary reads the word as a person's name, never in the nominative ("Марии", "Ивану"): a person
    the sentence gives or owns something ("купила крем Марии"), not an indeclinable brand ("Крем Ив Роше")."""
    w = word.lower()
    if _CYR_WORD.fullmatch(w) is None:
        return False
    names = [p.tag for p in _morph().parse(w) if p.is_known and {"Name", "Surn", "Patr"} & p.tag.grammemes]
    return bool(names) and not any("nomn" in tag and "plur" not in tag for tag in names)  # "Марии": Марий's too


def place_after_preposition(word: str) -> bool:
    """The word reads as a place ("во Владимире", "в Королёве", "из Пушкина"): after a place preposition it is
    the city, not the person."""
    return reading(word).place > 0.0


@lru_cache(maxsize=8192)
def case_forms(word: str) -> tuple[str, ...]:
    """The singular case forms of a name word, as written (capitalized, or in capitals): "Павел" -> Павла,
    Павлу, Павлом, Павле; "Трофимова" -> Трофимовой, Трофимову. A later mention may take any of them; a stem and
    an ending would miss the fleeting vowel (Павел/Павла, Лев/Льва) and ё/е (Пётр/Петра)."""
    r = reading(word)
    if r.kind is None:
        return ()
    want = {"first": "Name", "middle": "Patr", "last": "Surn"}[r.kind]
    forms: set[str] = set()
    # the likeliest parse of that kind only: "Лев" is also a case form of "Лёва", another name
    p = next(p for p in _morph().parse(word.lower()) if want in p.tag)
    gender = p.tag.gender
    for f in p.lexeme:
        if "sing" in f.tag and (f.tag.gender == gender or f.tag.gender is None):
            forms.add(f.word)
    upper = word.isupper()
    out = (f.upper() if upper else f[:1].upper() + f[1:] for f in forms)
    return tuple(sorted(out, key=len, reverse=True))


_STEM_END = "аяйьы"  # not о or е: "Шелудько", "Прядко" do not decline, and no case ending is "о"
# adjective-shaped surnames and feminine oblique forms: the stem is two letters shorter ("Черный" -> "Черн": Черного,
# Черная; "Чертовой" -> "Чертов": Чертова)
_TWO_LETTER_ENDS = ("ый", "ий", "ой", "ая", "яя", "ою", "ей")


@lru_cache(maxsize=8192)
def mention_forms(word: str) -> tuple[str, ...]:
    """The written forms a later mention of a Cyrillic name word is searched for, each followed by an optional
    case ending: its stem as written and in capitals, and where the dictionary's case forms of a first name
    start otherwise (a fleeting vowel, ё written е: "Павел" -> "Павл", "Пётр" -> "Петр"), their stem too. A name
    found in another case is searched from its nominative: "Уваровой" -> "Уваров", so that a later "Уварова" is
    found; "Калиеву" -> "Калиев"."""
    word = _nominative(word) or word
    if len(word) > 5 and word.lower().endswith(_TWO_LETTER_ENDS) and reading(word).kind != "first":
        stem = word[:-2]  # not a first name: "Сергей", "Андрей" decline from "Серге", "Андре"
    else:
        stem = word[:-1] if word[-1].lower() in _STEM_END and len(word) > 3 else word
    forms = [stem, stem.upper()]
    if reading(word).kind == "first":  # surnames and patronymics decline regularly from their stem
        other = [f for f in case_forms(word) if not f.startswith(stem) and not f.startswith(stem.upper())]
        if other:
            alt = os.path.commonprefix([f.lower() for f in other])
            if len(alt) >= 2:
                alt = word[:1] + alt[1:] if not word.isupper() else alt.upper()
                forms += [f for f in (alt, alt.upper()) if f not in forms]
    elif word[-1].lower() in "уюе" and len(word) >= 4 and reading(word).name == 0.0 and _nominative(word) is None:
        # a name found in an oblique case that the dictionary reads as no name ("Саву": the river Сава's
        # accusative): its stem too, so that "Саве" and "Сава" are found
        forms += [f for f in (word[:-1], word[:-1].upper()) if f not in forms]
    # the word itself last: its stem with an ending the search lacks ("Толстой" = "Толст" + "ой" is there; a rarer
    # ending is not) still finds the word as written
    forms += [f for f in (word, word.upper()) if f not in forms]
    return tuple(forms)



def _nominative(word: str) -> str | None:
    """The dictionary form of the likeliest singular name parse of the word (known or guessed; a surname's is the
    masculine: "Уваровой" -> "Уваров", whose stem the feminine forms share), written as the word is (capitalized
    or in capitals); None where that parse is the nominative already or there is none."""
    nom = reading(word).nominative
    if nom is None or len(nom) < 3:
        return None
    return nom.upper() if word.isupper() else word[:1] + nom[1:]


@lru_cache(maxsize=64)
def form_prefixes(lemmas: frozenset, n: int = 3) -> frozenset:
    """The first `n` letters of every form of the verbs `lemmas` ("пиш" of "писать", "заш" of "зайти"): a word
    that starts otherwise is none of their forms, and is not parsed (~0.1-1 ms for a word new to the cache)."""
    out = set()
    for lemma in lemmas:
        for p in _morph().parse(lemma):
            if p.normal_form == lemma:
                out.update(f.word[:n] for f in p.lexeme)
    return frozenset(out)
