"""Names typed in lower case without a cue: two adjacent lower-case words that are a first name and a surname
("orhan demirel tekrar yazdı", "elizabeth williams", "жулдыз сыздыкова звонила").

A single lower-case word says nothing (most first names are words somewhere), but a pair whose one word is a
first name the lists or the dictionary hold and whose other word is no ordinary word is a person far more often
than not. One of the pair must be:

* a first name: in the Latin lists (Faker's or the names-dataset extension's first names) and no word of the
  ambiguous lists, or, in Cyrillic, a first name in pymorphy3's dictionary (its Name tag holds in lower case);
* or a surname by its ending (-ov/-ova, -oğlu, -zade; -ов/-ова/-ин/-ский, -ович/-овна), the dictionary not
  knowing it as another word ("готова", "снова" are words);

and the other a name word too, or rare as a word (wordfreq: common in none of Turkish, English, Russian), and
neither a stop word nor an everyday word ("mehmet bey", "anna said", "ahmet yarın" stay words). A Russian
patronymic or a second surname-shaped word after the pair joins it ("бондарев ильназ фаргатович").
"""
from __future__ import annotations

import re

from pipeline.data.pii import ru_morph
from pipeline.data.pii.later import inflected_common
from pipeline.data.pii.name_signals import EVERYDAY_ZIPF, common_words
from pipeline.data.pii.names import (
    LATIN_AMBIGUOUS,
    LATIN_FIRST,
    LATIN_LAST,
    LATIN_LOWER,
    STOP,
    SURNAME_ENDINGS,
    TURKISH_WORDS,
    PersonRecognizer,
)
from pipeline.data.pii.ru_names import RU_AMBIGUOUS, RU_FIRST, RU_STOP
from pipeline.data.pii.text import Hit, TextContext, fold, load_data

PAIR_SCORE = 0.6  # above the default threshold: a pair of this shape is a name far more often than not

_EXT = load_data("names_ext.json")
_AMBIGUOUS = LATIN_AMBIGUOUS | TURKISH_WORDS
LATIN_FIRST_ANY = (LATIN_FIRST | frozenset(_EXT["latin_first"])) - _AMBIGUOUS - STOP
LATIN_NAME_ANY = LATIN_FIRST_ANY | LATIN_LAST | frozenset(_EXT["latin_last"])
_RU_FIRST = frozenset(n.replace("ё", "е") for n in RU_FIRST) - RU_AMBIGUOUS
# the words a lower-case pair may start with: what TextContext.words must hold for the pass to run
_FIRST_WORDS = frozenset(w for n in LATIN_FIRST_ANY | _RU_FIRST for w in (n, n.replace("i", "ı")) if len(w) >= 3)
_LATIN_SURNAME_END = tuple(e for e in SURNAME_ENDINGS if len(e) >= 2)
_RU_SURNAME_END = re.compile(r"(?:[оеё]в|[иы]н)(?:а|у|ым|ой|е)?$|(?:ск|цк)(?:ий|ая|ого|ой|ому|ую|им)$"
                             r"|(?:ович|евич|овна|евна|ична|инична)(?:а|у|ем|е|ой|ы)?$|енко$")
_WORD = re.compile(rf"(?<![\w'’@./\\-])(?:[{LATIN_LOWER}]{{3,}}|[а-яё]{{3,}})(?![\w@/\\-])")
_CYR = re.compile("[а-яё]")
_NOT_NAME = frozenset("the and bir ile için gibi ben sen biz siz это как что".split())


def _common(key: str) -> bool:
    return any(key in common_words(lang) for lang in ("tr", "en", "ru"))


def _everyday(key: str) -> bool:
    return any(key in common_words(lang, EVERYDAY_ZIPF) for lang in ("tr", "en", "ru"))


def _first_name(key: str) -> bool:
    if _CYR.search(key):
        return key.replace("ё", "е") in _RU_FIRST or (ru_morph.reading(key).kind == "first"
                                                     and key.replace("ё", "е") not in RU_AMBIGUOUS)
    # Faker's lists are curated (a first name that is also a word is in the ambiguous lists); the extension's
    # are not: its words count only when no everyday word (wordfreq counts a popular name as everyday too)
    return key in LATIN_FIRST_ANY and (key in LATIN_FIRST or not _everyday(key))


def _surname_shaped(key: str) -> bool:
    if len(key) < 5:
        return False
    if _CYR.search(key):
        return _RU_SURNAME_END.search(key) is not None and not ru_morph.ordinary_word(key) \
            and not ru_morph.not_a_name(key)
    return key.endswith(_LATIN_SURNAME_END) and not _common(key)


def _name_word(key: str) -> bool:
    """A listed or dictionary name, or a word rare in all three languages (no stop or everyday word)."""
    if key in STOP or key in _NOT_NAME or key in RU_STOP:
        return False
    if _CYR.search(key):
        r = ru_morph.reading(key)
        if r.kind is not None:
            return key.replace("ё", "е") not in RU_AMBIGUOUS
        return not r.other and not (r.known and r.name == 0.0) and not _common(key)
    if key in LATIN_NAME_ANY and key not in _AMBIGUOUS:
        return key in LATIN_FIRST or key in LATIN_LAST or not _everyday(key)
    return not _common(key) and not inflected_common(key) and key not in _AMBIGUOUS


def _anchor(key: str) -> bool:
    return _first_name(key) or _surname_shaped(key)


def lower_pairs(text: str) -> list[Hit]:
    """PERSON hits for pairs (and a third word) of adjacent lower-case name words (see the module doc)."""
    words = [(m.start(), m.end(), fold(m.group())) for m in _WORD.finditer(text)]
    out: list[Hit] = []
    i = 0
    while i + 1 < len(words):
        s1, e1, k1 = words[i]
        s2, e2, k2 = words[i + 1]
        if s2 != e1 + 1 or text[e1] != " " or bool(_CYR.search(k1)) != bool(_CYR.search(k2)):
            i += 1
            continue
        if not ((_anchor(k1) and _name_word(k2)) or (_anchor(k2) and _name_word(k1))):
            i += 1
            continue
        end = e2
        j = i + 2
        if j < len(words) and words[j][0] == e2 + 1 and text[e2] == " " and _third_word(words[j][2]):
            end = words[j][1]
            j += 1
        out.append(Hit(s1, end, "PERSON", PAIR_SCORE, "lower_pair"))
        i = j
    return out


def _third_word(key: str) -> bool:
    """A patronymic or surname after a Russian pair ("ильназ фаргатович", "мариям жангировна")."""
    return bool(_CYR.search(key)) and (ru_morph.reading(key).kind in ("middle", "last") or _surname_shaped(key))


def may_hold_lower_pair(words: frozenset) -> bool:
    """A cheap test on TextContext.words: a first name or a surname-shaped word among them."""
    return not words.isdisjoint(_FIRST_WORDS) or any(len(w) >= 5 and (w.endswith(_LATIN_SURNAME_END)
                                                                       or _RU_SURNAME_END.search(w)) for w in words)


class LowerPairRecognizer(PersonRecognizer):
    """PERSON from lower-case pairs of name words (lower_pairs)."""

    def triggered(self, ctx: TextContext) -> bool:
        return may_hold_lower_pair(ctx.words)

    def find(self, ctx: TextContext) -> list[Hit]:
        return lower_pairs(ctx.text)
