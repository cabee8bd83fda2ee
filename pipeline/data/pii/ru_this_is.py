"""Russian: a writer who introduces themself with "Это" ("Это Фуркат Бисен, пишу по поводу возврата", "Добрый
день, это Видади Белых.", "это мераби зуб, пишу ..."): one to three words after a sentence-initial "это" that end
the clause (a comma, a full stop, "!" or the line's end) are the writer's name.

"Это" opens many sentences ("Это Москва, а не Питер", "Это Яндекс Маркет, ...", "Это Новый год."), so the words
must look like a name: none a place or a firm or brand the dictionary knows (Geox, Orgn, Trad), a function word
or a gazetteer stop word, not a car ("Это Лада Веста") or one word that is a month as much as a name ("Это Август."),
and one of them a name by the dictionary, its ending or a Turkic ending, or a word the dictionary lacks. A town
is a surname after the first word where the writer's verb follows ("Это Мендигали Актау, пишу ..."). In lower case two words at least, one of them a name by the dictionary or its endings.
"""
from __future__ import annotations

import re
from functools import lru_cache

from pipeline.data.pii.ru_morph import analyzer, reading
from pipeline.data.pii.ru_names import RU_AMBIGUOUS, RU_MAKES, RU_STOP, ru_name_kind
from pipeline.data.pii.ru_turkic import turkic_name
from pipeline.data.pii.text import Hit

_CAP = r"[А-ЯЁ][а-яё]{1,}(?:-[А-ЯЁ][а-яё]+)?"
_LOW = r"[а-яё]{2,}"
_GREETING = r"(?:(?:[Зз]дравствуйте|[Дд]обрый (?:день|вечер)|[Дд]оброе утро|[Пп]ривет)[ \u00a0]*[,!.]?[ \u00a0]*)?"
_THIS_IS = re.compile(
    r"(?:^|(?<=[.!?\n]))[ \u00a0]*" + _GREETING + r"[Ээ]то[ \u00a0]+"
    rf"((?:{_CAP})(?:[ \u00a0]{_CAP}){{0,2}}|{_LOW}(?:[ \u00a0]{_LOW}){{1,2}})(?=[ \u00a0]*(?:[,.!\n]|$))", re.M)
_FUNCTION_POS = frozenset(("NPRO", "PREP", "CONJ", "PRCL", "INTJ", "ADVB", "PRED", "COMP", "NUMR", "VERB", "INFN"))


def this_is_names(text: str) -> list[Hit]:
    """PERSON spans of the name after a sentence-initial "Это"."""
    if "то " not in text:  # "Это ", "это ": most texts have neither
        return []
    out = []
    for m in _THIS_IS.finditer(text):
        words = m.group(1).split()
        lower = words[0].islower()
        if words[0].lower() in RU_MAKES or len(words) == 1 and words[0].lower().replace("ё", "е") in RU_AMBIGUOUS:
            continue  # "Это Лада Веста", "Это Август."
        writes = len(words) >= 2 and _WRITES.match(text, m.end(1)) is not None
        if all(_may_be_name_word(w, writes and k > 0) for k, w in enumerate(words)) \
                and any(_name_like(w, lower) for w in words):
            out.append(Hit(m.start(1), m.end(1), "PERSON", 0.7, "this_is"))
    return out


# the writer's own verb after the name: "Это X Y, пишу по поводу возврата"
_WRITES = re.compile(r"[ \u00a0]*,[ \u00a0]*(?:пишу|звоню|обращаюсь|беспокою)(?![а-яё])", re.IGNORECASE)


@lru_cache(maxsize=16384)
def _may_be_name_word(word: str, place_too: bool = False) -> bool:
    """`place_too`: a town may be the word (a surname after the first name of one who writes: "Это Мендигали
    Актау, пишу ...")."""
    low = word.lower()
    if low in RU_STOP:
        return False
    parses = analyzer().parse(low)
    top = parses[0]
    if top.is_known and top.tag.POS in _FUNCTION_POS and not any("Name" in p.tag or "Surn" in p.tag for p in parses):
        return False
    grams = {"Orgn", "Trad"} if place_too else {"Geox", "Orgn", "Trad"}
    return not any(p.is_known and grams & p.tag.grammemes for p in parses)


@lru_cache(maxsize=16384)
def _name_like(word: str, lower: bool) -> bool:
    if ru_name_kind(word) or turkic_name(word):
        return True
    return not lower and not reading(word).known
