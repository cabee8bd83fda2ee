"""Russian: one or two capitalized words that open a sentence and are the subject of a person's verb are a name
("Ищук подтвердил адрес", "Слюсарь подтвердил", "ГОР ИЩУК ЗВОНИЛ ВЧЕРА", "Итог: Койшыбай согласился").

The verb says a person acts: its lemma is one of calling, writing, asking, confirming, complaining, taking
(pymorphy3 reads it in any tense, gender and casing). A word before it is the person's name when pymorphy3's
dictionary does not know it as a common noun, adjective or place in the nominative singular ("Клиент
подтвердил", "Курьер звонил", "Дежурный ответил", "Москва ответила" stay), nor as a verb, adverb or pronoun
("Вчера звонил", "Он просил"), nor as a common word in another case ("Клиенту звонил": its lemma is common in
wordfreq's list, name_signals.common_words); a word the dictionary lacks ("Слюсарь", "Касымбек") is taken. The
verb is singular: "Клиенту звонили" has no subject there.
"""
from __future__ import annotations

import re
from functools import lru_cache

from pipeline.data.pii.name_context import sentence_initial
from pipeline.data.pii.name_signals import common_words
from pipeline.data.pii.ru_morph import analyzer
from pipeline.data.pii.text import Hit

_WORD = r"[А-ЯЁ](?:[а-яё]{2,}|[А-ЯЁ]{2,})"
# one or two capitalized words, then a lower-case or capitalized verb
SUBJECT = re.compile(rf"({_WORD}(?:[ \u00a0]{_WORD})?)[ \u00a0]+([А-ЯЁа-яё]+)(?![\w-])")  # capital first: fast
_PERSON_VERBS = frozenset((
    "подтвердить", "звонить", "позвонить", "перезвонить", "написать", "писать", "просить", "попросить",
    "жаловаться", "пожаловаться", "сообщить", "спросить", "ответить", "оставить", "забрать", "согласиться",
    "хотеть", "уточнить", "обещать", "пообещать", "заказать", "оплатить", "отказаться", "получить", "обратиться",
    "связаться", "требовать", "потребовать", "заявить", "сказать", "рассказать", "приехать", "прийти", "зайти"))
_NAME_TAGS = frozenset(("Name", "Surn", "Patr"))


def subject_names(text: str) -> list[Hit]:
    out = []
    for m in SUBJECT.finditer(text):
        words = m.group(1).split()
        if m.start() > 0 and (text[m.start() - 1].isalnum() or text[m.start() - 1] in "'’-"):
            continue
        if not sentence_initial(text, m.start(1)) or not _person_verb(m.group(2)):
            continue
        if all(_may_be_subject_name(w) for w in words) and len({w.isupper() for w in words}) == 1:
            out.append(Hit(m.start(1), m.end(1), "PERSON", 0.7, "subject"))
    return out


@lru_cache(maxsize=16384)
def _person_verb(word: str) -> bool:
    p = analyzer().parse(word.lower())[0]
    return p.is_known and p.tag.POS == "VERB" and "indc" in p.tag and "sing" in p.tag \
        and p.normal_form in _PERSON_VERBS


@lru_cache(maxsize=65536)
def _may_be_subject_name(word: str) -> bool:
    parses = analyzer().parse(word.lower())
    top = parses[0]
    if top.is_known and top.tag.POS not in ("NOUN", "ADJF") and not _NAME_TAGS & top.tag.grammemes:
        return False  # a verb, adverb, pronoun, preposition...
    for p in parses:
        tag = p.tag
        if p.is_known and "nomn" in tag and "sing" in tag and not (_NAME_TAGS | {"Abbr"}) & tag.grammemes \
                and tag.POS in ("NOUN", "ADJF"):
            return False  # "Клиент", "Дежурный", "Москва": the word can be the subject as what it is
    if top.is_known and not _NAME_TAGS & top.tag.grammemes and top.normal_form in common_words("ru"):
        return False  # "Клиенту звонил": a common word in another case, the sentence's object
    return True
