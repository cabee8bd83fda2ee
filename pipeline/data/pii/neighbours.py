"""The rest of a name that a recognizer took in part: a rare capitalized word right beside a PERSON span.

A recognizer often takes the word of a name it is sure of and stops at the other one: "Nasir Ahmad called"
where only "Ahmad" is listed and before the verb, "Жалил Чайка звонил" where natasha takes the surname. A
capitalized word glued to the span by one space belongs to the name when it cannot be much else: no ordinary
word (rare in Turkish and English, wordfreq; for Cyrillic unknown to pymorphy3's dictionary or read there as a
name), no stop, title or cue word, no place, car or firm word (not_person.py), and, before a span at a sentence
start, no inflected common word ("Dosyayı Kayratbek adına").
"""
from __future__ import annotations

import re

from pipeline.data.pii.later import inflected_common, rare_word
from pipeline.data.pii.name_context import TITLES, TITLES_AFTER, sentence_initial
from pipeline.data.pii.names import (
    LATIN_AMBIGUOUS,
    LATIN_LOWER,
    LATIN_UPPER,
    NEVER,
    OFFICES,
    PLACE_BEFORE,
    STOP,
    TURKISH_WORDS,
)
from pipeline.data.pii.not_person import PLACES, THING_NOUNS, VEHICLES
from pipeline.data.pii.ru_morph import not_a_name, ordinary_word, place_after_preposition
from pipeline.data.pii.text import fold
from pipeline.data.pii.tr_partner import first_name_before, grow_by_partner

_UP = LATIN_UPPER + "А-ЯЁ"
_LO = LATIN_LOWER + "а-яё"
# one capitalized word, one space, then the span; the word starts at a word boundary
_BEFORE = re.compile(rf"(?<![\w'’.-])([{_UP}][{_LO}]{{2,}})[ \u00a0]$")
# the span, one space, one capitalized word with no apostrophe suffix ("Kadıköy'de" is a place)
_AFTER = re.compile(rf"[ \u00a0]([{_UP}][{_LO}]{{2,}})(?![\w'’-])")
_NOT_NAME = STOP | NEVER | TITLES | TITLES_AFTER | OFFICES | PLACE_BEFORE | LATIN_AMBIGUOUS | TURKISH_WORDS \
    | THING_NOUNS | PLACES | frozenset(VEHICLES)
MAX_WORDS = 3  # a span of this many words is a whole name already


def grow_by_neighbours(text: str, s: int, e: int, floor: int, limit: int) -> tuple[int, int]:
    """s..e (a PERSON span written with capitals) grown by one name word before and one after, never past
    floor..limit."""
    if text[s:e].count(" ") + 1 >= MAX_WORDS:
        return s, e
    if not text[s:s + 1].isupper() or (e - s > 1 and text[s:e].isupper()):
        return grow_by_partner(text, s, e, floor, limit)  # in lower case or in capitals
    m = _BEFORE.search(text, max(floor, s - 40), s)
    if m is not None and _name_word(m.group(1)) \
            and not (sentence_initial(text, m.start(1)) and inflected_common(fold(m.group(1)))):
        s = m.start(1)
    elif m is not None and " " not in text[s:e]:
        s = first_name_before(text, s, floor)  # a Turkish first name frequent in the corpus: "Serhat <Kara>"
    m = _AFTER.match(text, e, limit)
    if m is not None and text[s:e].count(" ") + 1 < MAX_WORDS and _name_word(m.group(1)):
        e = m.end(1)
    return s, e


def _name_word(word: str) -> bool:
    key = fold(word)
    if key in _NOT_NAME or not word[1:].islower():
        return False
    if "а" <= key[0] <= "я" or key[0] == "ё":
        return not ordinary_word(word) and not not_a_name(word) and not place_after_preposition(word)
    return rare_word(key)


def mid_frequency_name_word(key: str, everyday) -> bool:
    """A folded Latin word that is common as a word but no everyday one (`everyday(key)`: wordfreq Zipf >= 4.3)
    and no place, car, firm, stop or title word, nor an inflected common Turkish word: many Turkish first names
    and surnames are that frequent in the corpus ("Serhat" 4.1, "Ayaz" 3.7, "Gökmen" 3.5). Such a word is a
    name's only where something else says so: a title after it, a rarer name word beside it."""
    return len(key) >= 3 and key not in _NOT_NAME and not everyday(key) and not inflected_common(key)
