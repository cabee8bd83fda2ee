"""Russian ALL CAPS: the rest of a name a recognizer took in part ("КЛИЕНТ: ЖАНАХМЕТ СКРИПНИК" with the first
name only), read by pymorphy3 on the lower-cased word.

A word in capitals right before or after a PERSON span in capitals joins it when the dictionary reads it as a
name in part (a Name, Surn or Patr parse), or does not know it and guesses no verb, adverb or pronoun from its
ending; never a word it knows as something else ("ПРОСИТ", "СЕРЫЙ", "КЛИЕНТ") or a place. Before a surname that
is surely one (an ending such as -ов, -енко), a word of three letters joins it unless a function word or verb:
short first names are also short words ("РУС УТЕПОВ": "рус" is "русый"'s short form).
"""
from __future__ import annotations

import re

from pipeline.data.pii.ru_morph import analyzer, reading
from pipeline.data.pii.ru_subject import sure_surname
from pipeline.data.pii.text import Hit

_BEFORE = re.compile(r"(?<![\w'’.@/-])([А-ЯЁ]{3,})[ \u00a0]$")
_AFTER = re.compile(r"[ \u00a0]([А-ЯЁ]{3,})(?![\w'’@/-])")
MAX_WORDS = 3


def grow_caps(text: str, hits: list[Hit]) -> list[Hit]:
    """`hits` (sorted, non-overlapping) with each Cyrillic PERSON span in capitals of one or two words grown by
    one name word on each side, never into another span."""
    out = list(hits)
    for i, h in enumerate(out):
        span = text[h.start:h.end]
        if h.entity != "PERSON" or not span.isupper() or not re.search("[А-ЯЁ]", span) \
                or span.count(" ") + 1 >= MAX_WORDS:
            continue
        floor = out[i - 1].end if i else 0
        limit = out[i + 1].start if i + 1 < len(out) else len(text)
        s, e = h.start, h.end
        m = _BEFORE.search(text, max(floor, s - 40), s)
        if m is not None and (_name_word(m.group(1)) or _short_first_name(m.group(1), span)):
            s = m.start(1)
        m = _AFTER.match(text, e, limit)
        if m is not None and text[s:e].count(" ") + 1 < MAX_WORDS and _name_word(m.group(1)):
            e = m.end(1)
        if (s, e) != (h.start, h.end):
            out[i] = h._replace(start=s, end=e)
    return out


def _name_word(word: str) -> bool:
    r = reading(word)
    if r.other or r.place > 0.0:
        return False
    return r.name > 0.0 or not r.known


_NOT_FIRST_NAME_POS = frozenset(
    ("NPRO", "PREP", "CONJ", "PRCL", "INTJ", "ADVB", "PRED", "COMP", "NUMR", "VERB", "INFN"))


def _short_first_name(word: str, span: str) -> bool:
    if len(word) != 3 or " " in span or not sure_surname(span.lower()):
        return False
    return analyzer().parse(word.lower())[0].tag.POS not in _NOT_FIRST_NAME_POS and reading(word).place == 0.0
