"""Russian: a found first name's surname that is also a word ("Получатель — Юра Неважно.", "Даниал Добрый,").

Mid-sentence, a capitalized word right after a one-word PERSON span in title case that ends the clause (a stop,
comma or line end after it) is the name's other word, even where the dictionary reads it as an adverb or
adjective: Russian capitalizes no such word there. Never a place ("Анна Москва" is no name) or a word in capitals.
"""
from __future__ import annotations

import re

from pipeline.data.pii.ru_morph import reading
from pipeline.data.pii.text import Hit

_AFTER = re.compile(r"[ \u00a0]([А-ЯЁ][а-яё]{2,})(?=[ \t]*(?:[.!?,;\n]|$))")


def grow_by_last_word(text: str, hits: list[Hit]) -> list[Hit]:
    """`hits` (sorted, non-overlapping) with each one-word Cyrillic PERSON span in title case grown by the
    title-case word after it that ends the clause, never into another span."""
    out = list(hits)
    for i, h in enumerate(out):
        span = text[h.start:h.end]
        if h.entity != "PERSON" or " " in span or not span.istitle() or not re.match("[А-ЯЁ]", span):
            continue
        limit = out[i + 1].start if i + 1 < len(out) else len(text)
        m = _AFTER.match(text, h.end, limit)
        if m is not None and reading(m.group(1)).place == 0.0:
            out[i] = h._replace(end=m.end(1))
    return out
