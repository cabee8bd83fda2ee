"""Russian full names in the order of forms and lists (ФИО: surname, first name, patronymic), where a recognizer
took the surname and the patronymic but not the first name between them ("ФИО: ШАТРОВ ЛЕЧИ ТАЛАНТБЕКОВИЧ",
"КЛИЕНТ: БЕЙСЕМБАЙ КАМЧАТ ФРАНЦЕВНА": "лечи" reads as a verb, "камчат" as a word, "зада" as a noun).

A patronymic is a person's name in its form alone (-ович, -евна, -ична, -кызы...), and only the first name stands
between it and the surname: one word of the same casing, glued to both spans by one space, joins them unless
the dictionary reads it as a function word ("ИВАНОВ ИЛИ ПЕТРОВИЧ").
"""
from __future__ import annotations

import re

from pipeline.data.pii.ru_morph import analyzer
from pipeline.data.pii.text import Hit

_PATRONYMIC = re.compile(r"(?:ович|евич|ьич|ич|ыч|овна|евна|ична|инична|кызы|оглы|улы|уулу)$", re.IGNORECASE)
_GAP = re.compile(r"[ \u00a0]([А-ЯЁ][а-яё]+|[А-ЯЁ]{2,})[ \u00a0]")
_FUNCTION_POS = frozenset(("NPRO", "PREP", "CONJ", "PRCL", "INTJ", "PRED", "COMP", "NUMR"))


def join_first_names(text: str, hits: list[Hit]) -> list[Hit]:
    """`hits` (sorted, non-overlapping) with two PERSON spans that a single word parts, the second ending in a
    patronymic, merged over that word."""
    out: list[Hit] = []
    for h in hits:
        prev = out[-1] if out else None
        if prev is not None and prev.entity == h.entity == "PERSON" and _first_name_between(text, prev, h):
            out[-1] = prev._replace(end=h.end)
            continue
        out.append(h)
    return out


def _first_name_between(text: str, a: Hit, b: Hit) -> bool:
    gap = text[a.end:b.start]
    m = _GAP.fullmatch(gap)
    if m is None:
        return False
    last = text[b.start:b.end].split()[-1]
    word = m.group(1)
    if _PATRONYMIC.search(last) is None or word.isupper() != last.isupper():
        return False
    top = analyzer().parse(word.lower())[0]
    return not (top.is_known and top.tag.POS in _FUNCTION_POS)
