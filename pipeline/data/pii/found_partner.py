"""English and Russian: the other word of a name the record holds, beside a word of it typed in lower case or in
capitals ("darshan <san> dropped by", "ship to: myles <findlay>", "алик <астана> оставил отзыв", "ЭТО <НУРГАЗЫ>
ТАСБОЛАТ, ПИШУ", "ZULFIQAR <FLEET> CALLED").

neighbours.py (tr_partner) grows a one-word span in lower case or capitals by a word that is rare or listed: a
lone span says nothing of the word beside it. Here the word is a name of a person the record names elsewhere
(mentions.NameBook), and the pair stands where a name does: the clause ends after it or a verb follows (a
person's deed), and a word before it opens its clause or follows a cue ("this is", "это"). Then the other word is
the name's even when it is a place ("dhaka", "астана") or an everyday word before a person's verb ("fleet called"):
people are named after towns and things. Never a function word, pronoun, time or calendar word, title, or a
word the Russian dictionary reads as a verb, adverb or pronoun ("дамир неважно звонил" keeps "неважно": the
surname that is an adverb stays, a cost of the rule's precision).

A capitalized word before or after a found name, the pair opening its clause, joins it only before a verb ("Sam
<Morales> dropped by the store": "Sam" is an everyday word the sentence start says nothing of; "Yesterday <Lewis>
Hall emailed"), never a role word ("Customer <Morales> called"). The words found join the record's book, so that their later mentions are found too.

A Russian name of the record typed in lower case ("Позвоните Дамиру" ... "дамир звонил") is that person too where
the dictionary gives it no ordinary reading: mentions.py looks for Cyrillic names as written and in capitals only.
"""
from __future__ import annotations

import re
from functools import lru_cache

from pipeline.data.pii.en_words import ADDRESS_TERMS, CALENDAR, EVERYDAY_ZIPF, FIRST_NAMES, NOT_NAME, en_zipf
from pipeline.data.pii.name_context import ROLES, TITLES, TITLES_AFTER, VERBS_AFTER, sentence_initial
from pipeline.data.pii.name_signals import common_words
from pipeline.data.pii.names import LATIN_LAST, NEVER, OFFICES
from pipeline.data.pii.ru_morph import analyzer, mention_forms, ordinary_word, place_after_preposition, reading
from pipeline.data.pii.ru_names import RU_AMBIGUOUS
from pipeline.data.pii.ru_subject import ROLES as RU_ROLES
from pipeline.data.pii.text import Hit, fold, word_shape

_TOKEN = re.compile(r"[^\W\d_]+")
_CLAUSE_END = frozenset(",.;:!?|)\n—–")
_CLAUSE_START = frozenset(".;:!?|(\n—–,")
# English words that are never the other word of a name: articles, pronouns, auxiliaries, prepositions, time
# and reply words
_EN_FUNCTION = frozenset((
    "the a an and or but nor so to of in on at for with from by about into over after before via per than as if "
    "is was are were be been being has have had will would can could should may might must shall do does did not "
    "no yes this that these those it he she they we you i me him her them us my his its our their your mine "
    "here there now then today tonight tomorrow yesterday morning evening again also too just still already soon "
    "please thanks thank ok okay hi hello hey dear sorry who what when where why how which all any some each "
    "every one two three very really only even back up down out off said says").split())
# what may open the clause before a name in lower case or capitals (folded)
_EN_OPENERS = frozenset(("is", "to", "with", "from", "by", "yesterday", "today",
                         "morning", "evening", "hi", "hello", "hey", "dear", "thanks", "name"))
_RU_OPENERS = frozenset(("это", "зовут", "утром", "вечером", "днем", "днём", "вчера", "сегодня", "клиент",
                         "клиентка", "фио", "имя"))
_TIME_AFTER = frozenset(("just", "yesterday", "today", "earlier", "twice", "вчера", "сегодня", "утром", "снова",
                         "опять", "дважды"))
_EN_VERB_WORDS = frozenset(("will", "wants", "says", "said", "needs", "is", "was", "has", "had"))
_RU_NOT_PARTNER_POS = frozenset(("VERB", "INFN", "PRTF", "PRTS", "GRND", "ADVB", "PRED", "NPRO", "PREP", "CONJ",
                                 "PRCL", "INTJ", "COMP", "NUMR"))


def found_partners(text: str, lang: str, book, kept: list[Hit]) -> list[Hit]:
    """PERSON spans over the record's names in lower case or capitals in `text` and the word beside each that
    completes the name (see the module's doc), outside the `kept` spans but for one-word PERSON ones."""
    if lang not in ("en", "ru") or not book:
        return []
    keys = _book_keys(book, lang)
    if not keys:
        return []
    mine = {(h.start, h.end) for h in kept if h.entity == "PERSON"}
    # the book test once per distinct word, before the per-token tests (all pure, so the order is free): most
    # messages hold no book word and no found name, and are done here
    forms = _book_forms(keys, lang)
    book_words = {w for w in set(_TOKEN.findall(text)) if len(w) >= 3 and _book_key(w, lang) in forms}
    if not book_words and not mine:
        return []
    toks = [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(text)]
    taken = [(h.start, h.end) for h in kept if not (h.entity == "PERSON" and " " not in text[h.start:h.end])]
    out: list[Hit] = []
    for i, (s, e, word) in enumerate(toks):
        found = (s, e) in mine
        if not found and word not in book_words:
            continue
        if len(word) < 3 or word_shape(word) is None or _inside(s, e, taken):
            continue
        span = _with_partner(text, toks, i, lang, taken)
        if span is None and not found and lang == "ru" and word.islower() and _lone_lower_ru(word):
            span = (s, e)
        if span is not None and span != (s, e) or (span is not None and not found):
            out.append(Hit(span[0], span[1], "PERSON", 0.75, "record"))
            taken.append(span)
    return out


def _inside(s: int, e: int, spans: list) -> bool:
    return any(a < e and s < b for a, b in spans)


def _book_keys(book, lang: str) -> frozenset:
    """The book's words of three letters or more: Latin ones folded; Cyrillic ones as the lower-case stems
    mentions.py searches them by (each followed by a case ending)."""
    out = set()
    for key in book.surfaces:
        if len(key) < 3:
            continue
        if lang == "ru" and ("а" <= key[0] <= "я" or key[0] == "ё"):
            out.update(f.lower() for f in mention_forms(key[:1].upper() + key[1:]))
        elif lang == "en" and key.isascii():
            out.add(key)
    return frozenset(out)


_RU_ENDINGS = frozenset("ь а я у ю ом ем ым им ой ей е ы и ого его ому ему ую юю ою ею ов ев ых их ыми ими ам ям ах ях "
                        "ый ий ая яя".split()) | {""}


@lru_cache(maxsize=64)
def _book_forms(keys: frozenset, lang: str) -> frozenset:
    """The words that are book words: the keys (Latin, folded), or each book stem followed by a case ending
    (Cyrillic; made once per book, where splitting every word of every message before each ending's length and
    looking the stem up cost more)."""
    if lang == "en":
        return keys
    return frozenset(stem + ending for stem in keys if stem for ending in _RU_ENDINGS)


def _book_key(word: str, lang: str) -> str:
    """The word as _book_forms holds it: lower case; Latin folded (an ASCII word in lower case is folded)."""
    low = word.lower()
    return fold(low) if lang == "en" and not low.isascii() else low


def _lone_lower_ru(word: str) -> bool:
    """A Russian name of the record typed in lower case alone: no ordinary word, no word of another part of
    speech, not one of the names that are also words ("вера", "роза")."""
    key = word.lower()
    r = reading(key)
    return key not in RU_AMBIGUOUS and key not in common_words("ru") and not r.other and not ordinary_word(key) \
        and r.place == 0.0


def _with_partner(text: str, toks: list, i: int, lang: str, taken: list) -> tuple[int, int] | None:
    """The span of toks[i] and its other word, after it or else before it, or None."""
    s, e, word = toks[i]
    shape = word_shape(word)
    if i + 1 < len(toks):
        s2, e2, w2 = toks[i + 1]
        if text[e:s2] == " " and word_shape(w2) == shape and not _inside(s2, e2, taken):
            verb = _verb_after(text, e2, lang)
            if verb == "time" and not _opens(text, s, toks, i, lang):
                verb = False
            if shape != "title":
                if (verb or _clause_end_after(text, e2)) and _partner(w2, lang, verb):
                    return s, e2
            elif _fills_line(text, s, e2) and _partner(w2, lang, verb):
                return s, e2
            elif lang == "en" and VERBS_AFTER.match(fold(text[e2:e2 + 40])) is not None \
                    and _opens(text, s, toks, i, lang) and _en_surname(w2):
                return s, e2  # "Yesterday <Lewis> Hall emailed": the pair is the subject of a calling verb
            elif lang == "ru" and not sentence_initial(text, s) and _same_case(word, w2) and _partner(w2, lang, True) \
                    and not place_after_preposition(w2):
                return s, e2  # capitalized mid-sentence, in the name's case: a surname, an ordinary word too
    if i > 0:
        s0, e0, w0 = toks[i - 1]
        if text[e0:s] == " " and word_shape(w0) == shape and not _inside(s0, e0, taken):
            verb = _verb_after(text, e, lang)  # "time": the word before opens its clause, tested below
            # capitalized, only before a verb: "Sam <Morales> dropped by", not "Thanks, Sam <Morales>."
            if (verb or (shape != "title" and _clause_end_after(text, e))) and _opens(text, s0, toks, i - 1, lang) \
                    and _partner(w0, lang, verb):
                return s0, e
    return None


def _en_surname(word: str) -> bool:
    """A capitalized English word after a found first name that may be its surname: a listed one ("Hall"), or no
    stop, place, thing or everyday word ("Max Pro", "Lewis Street" stay)."""
    key = fold(word)
    return key in LATIN_LAST or (key not in NOT_NAME and key not in _EN_FUNCTION and en_zipf(key) < EVERYDAY_ZIPF)


def _fills_line(text: str, s: int, e: int) -> bool:
    """The words s..e are all of their line: a signature ("--\nКос Квитко\nотдел продаж")."""
    before = text.rfind("\n", 0, s)
    after = text.find("\n", e)
    return not text[before + 1:s].strip() and not text[e:len(text) if after < 0 else after].strip()


def _same_case(first: str, second: str) -> bool:
    """Two Russian words the dictionary can read in one case ("Исмата Актива", both genitive): a name and its
    surname agree; a name before a capitalized word of another case is a name before another noun phrase."""
    cases = {p.tag.case for p in analyzer().parse(first.lower()) if p.tag.case}
    other = {p.tag.case for p in analyzer().parse(second.lower()) if p.tag.case}
    return not other or bool(cases & other)  # no case to the dictionary: "Кривоноса" read as a short adjective


def _clause_end_after(text: str, e: int) -> bool:
    k = e
    while k < len(text) and text[k] in " \t\u00a0":
        k += 1
    return k >= len(text) or text[k] in _CLAUSE_END


def _verb_after(text: str, e: int, lang: str) -> bool | str:
    """A verb follows the pair: a verb of calling, writing or asking, or any verb in the past or present; or a time
    adverb that ends what one did with the person ("spoke to kate hall just now", "SPOKE TO X Y YESTERDAY"): "time",
    strong only where the pair opens its clause or follows a cue ("to", "with"), not in "emailed x invoice today"."""
    m = re.match(r"[ \u00a0]+([^\W\d_]+)", text[e:e + 40])
    if m is None:
        return False
    w = m.group(1).lower()
    if w in _TIME_AFTER:
        return "time"
    if lang == "en":
        return VERBS_AFTER.match(fold(text[e:e + 40])) is not None or w in _EN_VERB_WORDS \
            or (w.endswith("ed") and len(w) >= 5 and en_zipf(w) >= 2.5)
    p = analyzer().parse(w)[0]
    return p.is_known and p.tag.POS == "VERB"


def _opens(text: str, s: int, toks: list, j: int, lang: str) -> bool:
    """The word at `s` opens its clause: the text or a clause starts there, or a cue or time word is before it."""
    k = s - 1
    while k >= 0 and text[k] in " \t\u00a0":
        k -= 1
    if k < 0 or text[k] in _CLAUSE_START:
        return True
    prev = fold(toks[j - 1][2]) if j > 0 else ""
    return prev in (_EN_OPENERS if lang == "en" else _RU_OPENERS)


def _partner(word: str, lang: str, verb: bool) -> bool:
    key = fold(word)
    if len(key) < 3 or key in TITLES or key in TITLES_AFTER or key in NEVER or key in OFFICES or key in ROLES:
        return False
    if lang == "en":
        if key in _EN_FUNCTION or key in CALENDAR or key in ADDRESS_TERMS:
            return False
        if key in FIRST_NAMES or key in LATIN_LAST:
            return True
        if key.endswith(("ed", "ing")) or VERBS_AFTER.match(" " + key) is not None:
            return False  # "darshan called.", "kate confirmed"
        return verb or en_zipf(key) < EVERYDAY_ZIPF  # an everyday word only before a person's deed
    low = word.lower()
    if low in RU_ROLES:
        return False
    p = analyzer().parse(low)[0]
    if p.is_known and p.tag.POS in _RU_NOT_PARTNER_POS and not {"Name", "Surn", "Patr"} & p.tag.grammemes:
        return False
    return verb or not ordinary_word(low)
