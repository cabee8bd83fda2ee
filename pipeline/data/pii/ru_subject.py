"""Russian: one or two capitalized words that open a sentence and are the subject of a person's verb are a name
("Ищук подтвердил адрес", "Слюсарь подтвердил", "ГОР ИЩУК ЗВОНИЛ ВЧЕРА", "Итог: Койшыбай согласился").

The verb says a person acts: its lemma is one of calling, writing, asking, confirming, complaining, taking
(pymorphy3 reads it in any tense, gender and casing). A word before it is the person's name when pymorphy3's
dictionary does not know it as a common noun, adjective or place in the nominative singular ("Клиент
подтвердил", "Курьер звонил", "Дежурный ответил", "Москва ответила" stay), nor as a verb, adverb or pronoun
("Вчера звонил", "Он просил"), nor as a common word in another case ("Клиенту звонил": its lemma is common in
wordfreq's list, name_signals.common_words); a word the dictionary lacks ("Слюсарь", "Касымбек") is taken. The
verb is singular: "Клиенту звонили" has no subject there.

The subject need not open the sentence: adverbs of time may come first ("Вчера Шахноза Черный забрала",
"Сегодня утром Асулан Адилет оставил"), and one adverb between it and the verb ("Кыргыз Свет снова написал").
Of two words the first may read as a verb or short adjective when the second is a surname ("Жалил Колодяжная",
"Седа Казакова"): a verb does not stand before its own subject's surname. A word that is also a name ("Амантай",
"Роза") is that name before a person's verb.

Typed in lower case ("вчера жупар ермек забрала", "рус абдурахманов снова написал"), a subject is taken only as
two words at the sentence's start or after its adverbs of time, one of them a name by the dictionary, its ending
or a Turkic ending (or both unknown to the dictionary), neither a pronoun, adverb, preposition, conjunction,
particle or role word ("мой муж звонил", "наш курьер иванов" stay).
"""
from __future__ import annotations

import re
from functools import lru_cache

from pipeline.data.pii.name_context import sentence_initial
from pipeline.data.pii.name_signals import common_words
from pipeline.data.pii.ru_morph import analyzer, form_prefixes
from pipeline.data.pii.ru_names import RU_STOP, ru_name_kind
from pipeline.data.pii.ru_turkic import turkic_name
from pipeline.data.pii.text import Hit, WordTest

_WORD = r"[А-ЯЁ](?:[а-яё]{2,}|[А-ЯЁ]{2,})"
# one or two capitalized words, then a lower-case or capitalized verb, maybe after one adverb
SUBJECT = re.compile(rf"({_WORD}(?:[ \u00a0]{_WORD})?)[ \u00a0]+(?:([а-яё]+|[А-ЯЁ]+)[ \u00a0]+)?([А-ЯЁа-яё]+)(?![\w-])")
# where a subject may start: every capitalized word (they overlap); the class first, its look-behind after it (the
# engine skips to capitals), the same matches as "(?<![\w'’-])[А-ЯЁ]"
_CAPITAL = re.compile(r"[А-ЯЁ](?<![\w'’-].)")
# what may open the sentence before the subject: adverbs of time ("Вчера", "Сегодня утром"), read by pymorphy3
_OPENER = re.compile(r"([А-ЯЁ][а-яё]+|[А-ЯЁ]+)(?:[ \u00a0]+([а-яё]+|[А-ЯЁ]+))?[ \u00a0]+$")
_PERSON_VERBS = frozenset((
    "подтвердить", "звонить", "позвонить", "перезвонить", "написать", "писать", "просить", "попросить",
    "жаловаться", "пожаловаться", "сообщить", "спросить", "ответить", "оставить", "забрать", "согласиться",
    "хотеть", "уточнить", "обещать", "пообещать", "заказать", "оплатить", "отказаться", "получить", "обратиться",
    "связаться", "требовать", "потребовать", "заявить", "сказать", "рассказать", "приехать", "прийти", "зайти"))
_NAME_TAGS = frozenset(("Name", "Surn", "Patr"))


def subject_names(text: str) -> list[Hit]:
    return lower_subject_names(text) + _capitalized_subjects(text, _subject)


def subjects_beside_a_name(text: str) -> list[Hit]:
    """In a record that already names a person: one capitalized word that opens a sentence before a person's
    verb is a name even where the dictionary reads it as a noun, adjective or participle ("Лиана перезвонит",
    "Полевая подтвердила", "Астана подтвердил": a first name or surname that is also a word), unless it is a
    common Russian word (wordfreq: "Банк подтвердил", "Магазин ответил", "Курьер звонил") or a role word."""
    return _capitalized_subjects(text, _subject_beside_a_name)


def _capitalized_subjects(text: str, subject) -> list[Hit]:
    out = []
    pos = 0
    for at, start, words, verb in _subject_candidates(text):
        if at < pos:
            continue
        if not subject(words, verb):
            if len(words) < 2 or not subject(words[:1], words[1]):  # "АМАНТАЙ ЗАБРАЛ": both words in capitals
                continue
            words = words[:1]
        end = start + len(" ".join(words))
        out.append(Hit(start, end, "PERSON", 0.7, "subject"))
        pos = end
    return out


@lru_cache(maxsize=4)
def _subject_candidates(text: str) -> tuple:
    """(match start, subject start, subject words, verb) of each capitalized word that opens a sentence before
    a verb: the same for subject_names and subjects_beside_a_name, which a text of a record with a name is
    asked both (the last few texts kept; all of it is pure)."""
    out = []
    for c in _CAPITAL.finditer(text):
        m = SUBJECT.match(text, c.start())
        if m is None or not (sentence_initial(text, m.start(1)) or _after_opener(text, m.start(1))):
            continue
        if _NOT_AGAINST.fullmatch(f"{m.group(2)} {m.group(3)}"):
            verb = "согласился"  # "Итог: X не против": a person's consent
        else:  # "X снова написал": an adverb between; "X написал отзыв": the word after the verb is no verb
            verb = m.group(3) if m.group(2) is None or _adverb(m.group(2)) else m.group(2)
        out.append((m.start(), m.start(1), tuple(m.group(1).split()), verb))
    return tuple(out)


_NOT_AGAINST = re.compile(r"не против", re.IGNORECASE)


def _subject(words: list[str], verb: str) -> bool:
    if not _person_verb(verb) or len({w.isupper() for w in words}) != 1:
        return False
    return all(_may_be_subject_name(w) for w in words) or len(words) == 2 and _pair_with_surname(*words)


def _subject_beside_a_name(words: list[str], verb: str) -> bool:
    if len(words) != 1 or words[0].isupper() or not _person_verb(verb):
        return False
    low = words[0].lower()
    if low in common_words("ru") or low in RU_STOP:
        return False
    top = analyzer().parse(low)[0]
    return not (top.is_known and (top.tag.POS in _FUNCTION_POS or top.tag.POS in ("VERB", "INFN")
                                  or top.normal_form in ROLES))


_LOWER_SUBJECT = re.compile(r"([а-яё]{2,})[ \u00a0]([а-яё]{2,})[ \u00a0]+(?:([а-яё]+)[ \u00a0]+)?([а-яё]+)(?![\w-])")
# a sentence that starts in lower case, with its first word and maybe a second
# (the text's start matched apart, a sentence mark consumed: "^" and a look-behind in an alternation made the engine
# try every position; _lower_sentence_starts gives the groups of "(?:^|(?<=[.!?\n])[ \u00a0]*)([а-яё]+)..." re.M)
_LOWER_TEXT_START = re.compile(r"([а-яё]+)(?:[ \u00a0]+([а-яё]+))?")
_LOWER_START = re.compile(r"[.!?\n][ \u00a0]*([а-яё]+)(?:[ \u00a0]+([а-яё]+))?")
_FUNCTION_POS = frozenset(("NPRO", "PREP", "CONJ", "PRCL", "INTJ", "ADVB", "PRED", "COMP", "NUMR"))
ROLES = frozenset((
    "клиент", "клиентка", "курьер", "менеджер", "оператор", "сотрудник", "сотрудница", "специалист", "директор",
    "врач", "водитель", "мастер", "получатель", "отправитель", "заказчик", "покупатель", "продавец", "юрист",
    "администратор", "агент", "пользователь", "абонент", "муж", "жена", "сын", "дочь", "мама", "папа", "брат",
    "сестра", "коллега", "сосед", "соседка", "дежурный", "дежурная", "начальник", "руководитель", "кассир"))


def lower_subject_names(text: str) -> list[Hit]:
    """Two lower-case name words that open a sentence (or follow its adverbs of time) before a person's verb."""
    out = []
    for m in _lower_sentence_starts(text):
        for k in _lower_starts(text, m):
            s = _LOWER_SUBJECT.match(text, k)
            if s is None:
                continue
            verb = s.group(4) if s.group(3) is None or _adverb(s.group(3)) else s.group(3)
            if _person_verb(verb) and _lower_pair(s.group(1), s.group(2)):
                out.append(Hit(s.start(1), s.end(2), "PERSON", 0.7, "subject"))
                break
    return out


def _lower_sentence_starts(text: str):
    """The sentences that start in lower case, with their first word and maybe a second (groups 1 and 2)."""
    first = _LOWER_TEXT_START.match(text)
    if first is not None:
        yield first
    yield from _LOWER_START.finditer(text, first.end() if first is not None else 0)


def _lower_starts(text: str, m: re.Match) -> list[int]:
    """Where a lower-case subject may start in a sentence that starts at m: its first word, and after one or
    two adverbs of time ("вчера ", "сегодня утром ")."""
    starts = [m.start(1)]
    if m.group(2) is None or not _adverb(m.group(1)):
        return starts
    starts.append(m.start(2))
    if _adverb(m.group(2)):
        nxt = _NEXT_WORD.match(text, m.end(2))
        if nxt is not None:
            starts.append(nxt.start(1))
    return starts


_NEXT_WORD = re.compile(r"[ \u00a0]+([а-яё])")


@lru_cache(maxsize=16384)
def _lower_pair(first: str, second: str) -> bool:
    parses = [analyzer().parse(w)[0] for w in (first, second)]
    if any(p.is_known and (p.tag.POS in _FUNCTION_POS or "Apro" in p.tag or p.normal_form in ROLES)
           for p in parses):
        return False
    if not any(p.is_known for p in parses):
        return True  # "жупар ..." and a word the dictionary lacks: no ordinary phrase is two unknown words
    return any(_name_word(w) for w in (first, second))


def _name_word(word: str) -> bool:
    return bool(ru_name_kind(word)) or turkic_name(word)


def _after_opener(text: str, start: int) -> bool:
    """One or two adverbs open the sentence right before `start` ("Вчера ", "Сегодня утром ")."""
    m = _OPENER.search(text, max(0, start - 32), start)
    if m is None or not sentence_initial(text, m.start()):
        return False
    return all(_adverb(w) for w in m.groups() if w is not None)


@lru_cache(maxsize=4096)
def _adverb(word: str) -> bool:
    p = analyzer().parse(word.lower())[0]
    return p.is_known and (p.tag.POS == "ADVB" or p.normal_form in _TIME_NOUNS)


_TIME_NOUNS = frozenset(("утро", "вечер", "день", "ночь"))  # "утром", "вечером": read as nouns in the instrumental


@lru_cache(maxsize=16384)
def _pair_with_surname(first: str, second: str) -> bool:
    """Two words before a person's verb, the second a name or surname by the dictionary, its ending or a Turkic
    ending, also where it reads as an adjective too ("Черный", "Белых"); the first a possible subject name or a
    word the dictionary reads as a verb or short adjective ("Жалил", "Седа"): no verb or adjective comes before
    its subject's surname. Never a pronoun, preposition, adverb ("Вчера Иванов звонил") or role word."""
    low = second.lower()
    if _short_surname(first, low):
        return True
    if _oblique_only(low):  # "Роман Толстого пришёл": a genitive after a noun is its owner, not a subject's surname
        return False
    if not (_SURNAME_SHAPE.search(low) or turkic_name(low) or any(
            p.is_known and _NAME_TAGS & p.tag.grammemes for p in analyzer().parse(low))):
        return False
    top = analyzer().parse(first.lower())[0]
    if _may_be_subject_name(first) or top.tag.POS in ("VERB", "ADJS") and first.lower() not in common_words("ru"):
        return True
    # a first name that is also a noun before a surname that is surely one ("РИЗА АЛТЫНБЕК ЗВОНИЛА"); not a role
    # word, a place, a firm ("Дежурный Иванов", "Москва")
    return top.tag.POS == "NOUN" and top.normal_form not in ROLES and first.lower() not in RU_STOP \
        and not {"Geox", "Orgn", "Trad"} & top.tag.grammemes and sure_surname(low)


def _oblique_only(low: str) -> bool:
    """The dictionary knows the word and never in the nominative: it cannot be the subject or a part of it."""
    parses = [p for p in analyzer().parse(low) if p.is_known]
    return bool(parses) and not any("nomn" in p.tag for p in parses)


def _short_surname(first: str, low: str) -> bool:
    """A surname of three letters or fewer that is also a noun ("Пак", "Цой", "Ким") after a word the dictionary
    holds as a first name ("ЛЮБОВЬ ПАК ЗВОНИЛА"): such surnames have no ending to tell them, and a noun of three
    letters is rarely a subject's second word after a name."""
    if len(low) > 3 or not any(p.is_known and "Name" in p.tag for p in analyzer().parse(first.lower())):
        return False
    top = analyzer().parse(low)[0]
    return not top.is_known or top.tag.POS == "NOUN" and top.normal_form not in ROLES


def sure_surname(low: str) -> bool:
    return turkic_name(low) or _SURE_SURNAME.search(low) is not None or any(
        p.is_known and "Surn" in p.tag for p in analyzer().parse(low))


# "-щук" after a letter or more: "Ищук", "Полищук" (not "щук", the pike's plural)
_SURE_SURNAME = re.compile(r"(?:ов|ев|ёв|ин|ын)а?$|(?:енко|швили|дзе|ян|юк|чук)$|\wщук$")


_SURNAME_SHAPE = re.compile(
    r"(?:ов|ев|ёв|ин|ын|ск|цк)(?:а|ая|ий|ой)?$|(?:енко|юк|чук|ян|дзе|швили|ая|ий|ой|ый|ых|их)$|\wщук$")


@lru_cache(maxsize=16384)
def _person_verb(word: str) -> bool:
    if word[:3].lower() not in form_prefixes(_PERSON_VERBS):
        return False
    p = analyzer().parse(word.lower())[0]
    return p.is_known and p.tag.POS == "VERB" and "indc" in p.tag and "sing" in p.tag \
        and p.normal_form in _PERSON_VERBS


_PERSON_VERB_WORDS = WordTest(_person_verb)


def may_hold_subject(words: frozenset) -> bool:
    """False where subject_names finds nothing in a text whose lower-cased words are `words` (TextContext.words):
    every subject it takes stands before a person's verb, a whole word of the text (_person_verb reads it in
    lower case), or before "не против". Set operations on the words (each word's answer kept)."""
    return bool(_PERSON_VERB_WORDS.select(words)) or ("не" in words and "против" in words)


@lru_cache(maxsize=65536)
def _may_be_subject_name(word: str) -> bool:
    parses = analyzer().parse(word.lower())
    top = parses[0]
    if top.is_known and top.tag.POS not in ("NOUN", "ADJF") and not _NAME_TAGS & top.tag.grammemes:
        return False  # a verb, adverb, pronoun, preposition...
    # the dictionary holds some names twice, once untagged ("Амантай"): that parse is the name's
    names = {p.normal_form for p in parses if p.is_known and _NAME_TAGS & p.tag.grammemes}
    for p in parses:
        tag = p.tag
        if p.is_known and "nomn" in tag and "sing" in tag and not (_NAME_TAGS | {"Abbr"}) & tag.grammemes \
                and tag.POS in ("NOUN", "ADJF") and p.normal_form not in names:
            return False  # "Клиент", "Дежурный", "Москва": the word can be the subject as what it is
    if top.is_known and not _NAME_TAGS & top.tag.grammemes and top.normal_form in common_words("ru"):
        return False  # "Клиенту звонил": a common word in another case, the sentence's object
    return True
