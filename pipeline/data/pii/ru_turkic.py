"""Kazakh, Kyrgyz and Uzbek names written in Cyrillic that pymorphy3's dictionary lacks ("Кенжебай",
"Сайлаубека", "Торежану"): their word-building endings say name where no list does. A first name or surname
built with -бек, -бай, -жан, -хан, -гуль/-гул, -кул, -нур, -тай (and the patronymic words -улы, -кызы), in any
Russian case form, is a name when the dictionary does not know the word, or knows it only as a name: the
ordinary words with these endings ("баклажан", "узбек", "акула") and places ("Китай", "Алтай", "Дубай") it
knows, and they stay.
"""
from __future__ import annotations

import re
from functools import lru_cache

from pipeline.data.pii.ru_morph import reading

_TURKIC = re.compile(
    r"[а-яё]{2,}(?:(?:бек|жан|хан|гуль|гул|кул|нур)(?:а|я|у|ю|ом|ем|е|ой|ы|и)?|(?:ба|та)(?:й|я|ю|ем|е))"
    r"|[а-яё]{3,}(?:улы|кызы)")


@lru_cache(maxsize=32768)
def turkic_name(word: str) -> bool:
    """The word (any casing) ends as a Turkic name does and the dictionary knows it as nothing else."""
    w = word.lower()
    if _TURKIC.fullmatch(w) is None:
        return False
    r = reading(w)
    return not r.known or (r.name > 0.0 and r.place == 0.0)  # a guess of place from the ending means nothing
