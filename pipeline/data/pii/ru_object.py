"""Russian: the person a verb of telling, sending or calling is addressed to, or whom one agreed or checked with
("Напомните Касеновой про документы", "Отправил чек Учкуну на почту", "Уточнил у Адилета, оплата прошла",
"Договорились с Перецем на пятницу").

A capitalized word in the middle of a sentence is a proper noun; right after such a verb (perhaps past one
object word and a preposition: у, с, о, к, от, для) the proper noun is the person, in the dative, genitive or
instrumental. It is taken when pymorphy3 reads it as a name (known or guessed from its ending), a surname by
its ending or a Turkic name (ru_turkic), or does not know it and it ends in a case ending. A word the dictionary
knows as an ordinary word ("Шину", "Родиной", "Подольского") is taken only straight after the verb or its
preposition and before punctuation or a preposition ("Напомните Шину про документы"): a firm the dictionary
does not tag as one ("Напомните Сбербанку про платёж") is taken there too. Never a place ("Позвоните в Москву",
"Москве"), a firm or brand it tags ("Яндексу") or a word in capitals.
"""
from __future__ import annotations

import re
from functools import lru_cache

from pipeline.data.pii.name_context import sentence_initial
from pipeline.data.pii.ru_morph import analyzer, form_prefixes, reading
from pipeline.data.pii.ru_names import RU_STOP, ru_name_kind
from pipeline.data.pii.ru_subject import ROLES
from pipeline.data.pii.ru_turkic import turkic_name
from pipeline.data.pii.text import Hit

# (class first, the look-behind after it: the engine skips to capitals; the same matches as "(?<!...)[А-ЯЁ]")
_CAPITALIZED = re.compile(r"[А-ЯЁ](?<![\w'’.@/-].)[а-яё]{2,}(?:-[А-ЯЁ][а-яё]{2,})?(?![\w'’@-])")
_NEXT_CAPITALIZED = re.compile(r"[ \u00a0]([А-ЯЁ][а-яё]{2,})(?![\w'’@-])")
_PREPOSITIONS = frozenset("у с со о об обо к ко от для".split())
_VERBS = frozenset((
    "напомнить", "напоминать", "передать", "передавать", "отправить", "отправлять", "выслать", "прислать",
    "сообщить", "сообщать", "позвонить", "перезвонить", "звонить", "написать", "писать", "ответить", "объяснить",
    "помочь", "уточнить", "уточнять", "спросить", "договориться", "связаться", "поговорить", "созвониться",
    "вернуть", "выдать", "доставить", "продать", "переслать", "напомнить"))
_CASE_ENDING = re.compile(r"(?:у|ю|а|я|е|и|ой|ей|ом|ем|ым|им|ого|ому)$")
_AFTER_ORDINARY = re.compile(r"[ \u00a0]*(?:[,.;:!?)\n]|$)|[ \u00a0]+(?:про|на|после|в|до|о|об|по|за)[ \u00a0]")


def addressed_names(text: str) -> list[Hit]:
    """PERSON spans (one or two capitalized words) addressed by a verb of telling, sending or calling."""
    out = []
    for m in _CAPITALIZED.finditer(text):
        s, e = m.span()
        if sentence_initial(text, s) or m.group().lower() in RU_STOP:
            continue
        how = _addressed(text, s)
        if how is None or not _person_word(m.group(), how == "direct" and _AFTER_ORDINARY.match(text, e)):
            continue
        nxt = _NEXT_CAPITALIZED.match(text, e)
        if nxt is not None and _person_word(nxt.group(1), False):
            e = nxt.end(1)  # "Напомните Ермеку Касеновой"
        out.append(Hit(s, e, "PERSON", 0.7, "addressed"))
    return out


def _addressed(text: str, start: int) -> str | None:
    """"direct" where a person's verb (or it and a preposition) stands right before `start`, "object" where one
    lower-case word stands between ("Отправил чек Учкуну"), else None."""
    before = text[max(0, start - 60):start]
    if not before.endswith((" ", "\u00a0")):
        return None
    words = before.split()[-3:]
    k = len(words)
    while k > 0 and words[k - 1].isalpha():
        k -= 1  # the run of words right before `start`: punctuation ends it
    words = words[k:]
    if not words:
        return None
    if words[-1].lower() in _PREPOSITIONS:
        words.pop()
        if words and _verb(words[-1]):
            return "direct"
    elif _verb(words[-1]):
        return "direct"
    if len(words) >= 2 and words[-1].islower() and _verb(words[-2]):
        return "object"
    return None


@lru_cache(maxsize=16384)
def _verb(word: str) -> bool:
    if word[:3].lower() not in form_prefixes(_VERBS):
        return False
    p = analyzer().parse(word.lower())[0]
    return p.is_known and p.tag.POS in ("VERB", "INFN", "GRND") and p.normal_form in _VERBS


@lru_cache(maxsize=32768)
def _word_kind(word: str) -> str:
    """"name" (read as a name, a surname by its ending, Turkic), "unknown" (not in the dictionary, in a case
    form), "ordinary" (a word the dictionary knows, no place), or "" (a place, or nothing a person is)."""
    r = reading(word)
    if r.known and r.place > 0.0:
        return ""
    if r.name >= 0.5 or turkic_name(word) or ru_name_kind(word) in ("first", "middle", "last"):
        return "name"
    if not r.known:
        return "name" if ru_name_kind(word) else "unknown" if _CASE_ENDING.search(word.lower()) else ""
    if r.other or any({"Orgn", "Trad"} & p.tag.grammemes for p in analyzer().parse(word.lower())):
        return ""  # a verb or adverb; a firm or brand the dictionary tags ("Яндексу", "Билайну")
    return "ordinary"  # "Подольским заводом": a surname's ending, an adjective's use


def _person_word(word: str, ordinary_ok) -> bool:
    kind = _word_kind(word)
    return kind in ("name", "unknown") or kind == "ordinary" and bool(ordinary_ok)


# "поговорили с лирой щеголевой": a verb of _VERBS, "с", two lower-case words
_LOWER_WITH = re.compile(
    r"(?<![а-яё])([а-яёА-ЯЁ]+)[ \u00a0]+со?[ \u00a0]+([а-яё]{2,})[ \u00a0]+([а-яё]{2,})(?![\w'’@-])")
_FUNCTION_POS = frozenset(("NPRO", "PREP", "CONJ", "PRCL", "INTJ", "ADVB", "PRED", "COMP", "NUMR"))
# a surname's instrumental: "-овым", "-иной", "-ским"; a first name's is read by the dictionary
_SURNAME_ABLT = re.compile(r"(?:ов|ев|ёв|ин|ын)(?:ым|ой)$|(?:ск|цк)(?:им|ой)$")
_ABLT_ENDING = re.compile(r"(?:ом|ем|ём|ой|ей|ым|им|ою|ею)$")


def lower_addressed_names(text: str) -> list[Hit]:
    """Typed in lower case, the person one spoke or agreed with ("поговорили с лирой щеголевой, вопрос закрыт",
    "созвонился с манасом усмановым"): two words in the instrumental after a verb of _VERBS and "с", the first a
    first name by the dictionary or the second a surname by the dictionary or its instrumental ending; neither a
    function word nor a role ("поговорили с мужем клиента", "связались с новым курьером" stay)."""
    if " с " not in text and " со " not in text and "\u00a0" not in text:
        return []  # what "[ \u00a0]со?[ \u00a0]" needs (a substring test; the regex tests every position)
    out = []
    for m in _LOWER_WITH.finditer(text):
        if _verb(m.group(1)) and _lower_pair(m.group(2), m.group(3)):
            out.append(Hit(m.start(2), m.end(3), "PERSON", 0.7, "addressed"))
    return out


@lru_cache(maxsize=16384)
def _lower_pair(first: str, second: str) -> bool:
    parses = [analyzer().parse(w) for w in (first, second)]
    for word, ps in zip((first, second), parses):
        if not (any("ablt" in p.tag for p in ps) or _ABLT_ENDING.search(word)):
            return False
        if any(p.is_known and (p.tag.POS in _FUNCTION_POS or p.normal_form in ROLES) for p in ps[:1]):
            return False
    first_name = any(p.is_known and "Name" in p.tag and "ablt" in p.tag for p in parses[0])
    top = parses[1][0]
    surname = any(p.is_known and "Surn" in p.tag and "ablt" in p.tag for p in parses[1]) \
        or _SURNAME_ABLT.search(second) is not None and ru_name_kind(second) is not None \
        and not (top.is_known and top.tag.POS == "ADJF")  # "с магазином новым": an adjective the dictionary knows
    return first_name or surname
