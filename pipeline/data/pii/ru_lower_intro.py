"""Russian names typed in lower case after an introduction ("меня зовут икрам шин, заказ не пришёл", "фио: деля
проскурякова", "клиент: кайзер узбек владимирович"), where the lower-case pass (ru_names) wants name readings the
dictionary does not give: it reads "икрам", "шин" and "снежа" as ordinary words or verbs.

After "зовут" or "фио": the words up to the clause's end (one to three, spaces between), the first any word
but a function word (a pronoun, preposition, conjunction, particle, adverb), the others no function word or verb
unless a name reading says otherwise ("меня зовут оля хочу вернуть" keeps "хочу"). After a role label with a colon
("клиент:", "получатель:"): two or three such words, one of them a name by the dictionary or its endings ("клиент:
доволен" stays).
"""
from __future__ import annotations

import re
from functools import lru_cache

from pipeline.data.pii.ru_morph import analyzer
from pipeline.data.pii.ru_names import RU_STOP, ru_name_kind
from pipeline.data.pii.ru_turkic import turkic_name
from pipeline.data.pii.text import Hit

_INTRO = re.compile(r"(?<![а-яё])(?:(зовут|фио|ф\.и\.о\.)(?![а-яё])|(клиент(?:ка)?|получатель|отправитель|заказчик)"
                    r"[ \u00a0]*:)[ \u00a0]*[:—–-]?[ \u00a0]*(?=[а-яё])")
_WORD = re.compile(r"[а-яё]{2,}(?:-[а-яё]{2,})?(?![\w'’@-])")
_FUNCTION_POS = frozenset(("NPRO", "PREP", "CONJ", "PRCL", "INTJ", "ADVB", "PRED", "COMP", "NUMR"))
_VERB_POS = frozenset(("VERB", "INFN", "GRND", "PRTS", "PRTF"))


def lower_intro_names(text: str) -> list[Hit]:
    """PERSON spans of the lower-case words after an introduction."""
    if "зовут" not in text and "фио" not in text and ":" not in text:
        return []
    out = []
    for m in _INTRO.finditer(text):
        words = _name_run(text, m.end())
        if m.group(2) is not None and (len(words) < 2 or not any(_name_word(w.group()) for w in words)):
            continue
        if words:
            out.append(Hit(words[0].start(), words[-1].end(), "PERSON", 0.75, "lower_intro"))
    return out


def _name_run(text: str, pos: int) -> list[re.Match]:
    words: list[re.Match] = []
    while len(words) < 3:
        w = _WORD.match(text, pos)
        if w is None or not _may_continue(w.group(), first=not words):
            break
        words.append(w)
        pos = w.end() + 1
        if text[w.end():pos] != " ":
            break
    return words


@lru_cache(maxsize=16384)
def _may_continue(word: str, first: bool) -> bool:
    if word in RU_STOP:
        return False
    if _name_word(word):
        return True
    top = analyzer().parse(word)[0]
    if not top.is_known:
        return True
    return top.tag.POS not in _FUNCTION_POS and (first or top.tag.POS not in _VERB_POS)


@lru_cache(maxsize=16384)
def _name_word(word: str) -> bool:
    return ru_name_kind(word) in ("first", "middle", "last", "surname_like") or turkic_name(word)
