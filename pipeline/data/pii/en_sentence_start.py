"""English: a first name that is an everyday word, alone at a sentence start and followed by a word that is no
verb, is the word: "Grace period ends Friday", "Rose gold is sold out", "Bill me at the end of the month".

The name lists take "Grace" anywhere; at a sentence start its capital says nothing, and what follows tells a
subject ("Grace called", "Grace will", "Grace says") from a noun phrase. Only a one-word span, only a listed
first name that is common as an English word (Zipf >= 4.0), only when the next word is lower case.
"""
from __future__ import annotations

import re

from pipeline.data.pii.en_words import FIRST_NAMES, en_zipf
from pipeline.data.pii.name_context import VERBS_AFTER, sentence_initial
from pipeline.data.pii.text import Hit, fold

_COMMON_FIRST_ZIPF = 4.0
_NEXT = re.compile(r"[ \t]+([a-z]+)(?![\w'’-])")
_AUXILIARIES = frozenset(
    "will would can could should shall may might must is was has had have does did do isn wasn won cannot "
    "and or who just also never always still then".split())


def drop_word_openers(text: str, hits: list[Hit]) -> list[Hit]:
    return [h for h in hits if not _word_opener(text, h)]


def _word_opener(text: str, h: Hit) -> bool:
    word = text[h.start:h.end]
    if h.entity != "PERSON" or " " in word or not word[1:].islower() or not sentence_initial(text, h.start):
        return False
    key = fold(word)
    if key not in FIRST_NAMES or en_zipf(key) < _COMMON_FIRST_ZIPF:
        return False
    m = _NEXT.match(text, h.end)
    return m is not None and not _verb_like(text, h.end, m.group(1))


def _verb_like(text: str, end: int, word: str) -> bool:
    """The lower-case word after the name reads as its verb: an auxiliary, a past or third-person form, or a
    calling verb of context.json."""
    return word in _AUXILIARIES or word.endswith("ed") or (word.endswith("s") and not word.endswith("ss")) \
        or VERBS_AFTER.match(text.lower(), end) is not None
