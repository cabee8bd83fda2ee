"""Russian: the one capitalized word a greeting or thanks addresses ("Спасибо, Данис!", "Добрый день, Снежа.",
"Великий, добрый вечер!"; a reply too: "Хорошо, Серей, передам коллегам.") is the person's name, also where pymorphy3 knows the word as something else: "Данис",
"Снежа", "Рус" and "Великий" read as ordinary words, and the recognizers take an unknown word only there.

The word stands alone between the greeting's comma and the end of the clause (! . ? , or the line's end), or
opens the sentence before ", добрый день". Not a pronoun, preposition, conjunction, particle, interjection or
adverb, pronoun-like or neuter adjective ("Спасибо, Всем!", "Спасибо, Большое!"), a word with no nominative
singular reading ("Здравствуйте, Коллеги!"), a place the dictionary
knows ("Привет, Москва!") or a stop word of the gazetteer ("Добрый день, Клиент.").
"""
from __future__ import annotations

import re
from functools import lru_cache

from pipeline.data.pii.name_context import sentence_initial
from pipeline.data.pii.ru_morph import analyzer, reading
from pipeline.data.pii.ru_names import RU_STOP
from pipeline.data.pii.text import Hit, holds_any

_GREETING = (r"(?:[Зз]дравствуй(?:те)?|[Пп]ривет(?:ствую)?|[Дд]обр(?:ый (?:день|вечер)|ое утро|ого (?:дня|времени суток))"
             r"|[Сс]пасибо(?: большое)?|[Бб]лагодарю|[Дд]о свидания|[Хх]орошего (?:дня|вечера)"
             # a reply that addresses the customer: "Хорошо, Серей, передам коллегам."
             r"|[Хх]орошо|[Пп]онял[аи]?|[Оо]тлично|[Дд]оговорились)")
_AFTER_GREETING = re.compile(_GREETING + r"[ \u00a0]*,[ \u00a0]*([А-ЯЁ][а-яё]{2,})(?=[ \u00a0]*(?:[!.?,\n]|$))")
_BEFORE_GREETING = re.compile(r"([А-ЯЁ][а-яё]{2,}),[ \u00a0]*" + _GREETING + r"(?![а-яё])")
# a greeting's letters: most texts lack them (substring tests: a regex of them tests every Cyrillic letter)
_QUICK = ("дравств", "ривет", "обр", "пасибо", "лагодар", "свидан", "орош", "онял", "тлично", "оговорил")
_NAME_GRAMS = frozenset(("Name", "Surn", "Patr"))
_NOT_A_NAME_POS = frozenset(("NPRO", "PREP", "CONJ", "PRCL", "INTJ", "ADVB", "PRED", "COMP"))


def greeted_names(text: str) -> list[Hit]:
    """PERSON spans of the one word a greeting or thanks addresses."""
    if not holds_any(text, _QUICK):
        return []
    out = []
    for m in _AFTER_GREETING.finditer(text):
        if _may_be_greeted(m.group(1)):
            out.append(Hit(m.start(1), m.end(1), "PERSON", 0.7, "greeted"))
    for m in _BEFORE_GREETING.finditer(text):
        if sentence_initial(text, m.start(1)) and _may_be_greeted(m.group(1)):
            out.append(Hit(m.start(1), m.end(1), "PERSON", 0.7, "greeted"))
    return out


@lru_cache(maxsize=16384)
def _may_be_greeted(word: str) -> bool:
    low = word.lower()
    if low in RU_STOP:
        return False
    r = reading(word)
    if r.known and r.place > 0.0 and r.name == 0.0:
        return False
    parses = analyzer().parse(low)
    top = parses[0]
    if not top.is_known or any(_NAME_GRAMS & p.tag.grammemes for p in parses):
        return True
    if top.tag.POS in _NOT_A_NAME_POS or "Apro" in top.tag or top.tag.POS == "ADJF" and top.tag.gender == "neut":
        return False  # "Всем", "Большое"
    # one addressed is named in the nominative singular: "Коллеги" is a plural (or a genitive)
    return any("nomn" in p.tag and "sing" in p.tag for p in parses if p.is_known)
