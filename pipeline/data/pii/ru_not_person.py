"""Russian PERSON spans that are partly or wholly something else, whichever recognizer made them (natasha tags
"Лада Веста" and "У Алиевой" when a name stands nearby):

* a car make and its model ("Лада Веста", "Лада Калина"): the make before a word the gazetteer reads as a first
  name is a car; before a surname it is a person ("Лада Иванова");
* a preposition of one letter that opens the sentence ("У Алиевой не проходит оплата"): the name starts after it.
  Initials are written with a full stop ("У. Алиева") and stay.
"""
from __future__ import annotations

import re

from pipeline.data.pii.ru_names import RU_MAKES, ru_name_kind
from pipeline.data.pii.text import Hit

_PREPOSITION = re.compile(r"[УСВКО][ \u00a0]+(?=[А-ЯЁ])")


def drop_russian_things(text: str, hits: list[Hit]) -> list[Hit]:
    out = []
    for h in hits:
        if h.entity == "PERSON":
            words = text[h.start:h.end].split()
            if len(words) == 2 and words[0].lower() in RU_MAKES and ru_name_kind(words[1]) == "first":
                continue
            m = _PREPOSITION.match(text, h.start, h.end)
            if m is not None:
                h = h._replace(start=m.end())
        out.append(h)
    return out
