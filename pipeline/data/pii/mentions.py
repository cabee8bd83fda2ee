"""Whole names, and every mention of a detected name in its record.

The recognizers find a name where its words or its context say so; a record mentions the same person in
other places that say less: an initial or particle the run did not take ("John F. Miller", "Ludwig van
Beethoven", "Omar al-Bashir"), a later surname or first name alone ("Mr. Miller", "Dear John"), the name in
a tool call's arguments or in the tool definitions. Two invariants follow:

* a PERSON span covers the whole name: initials and lower-case particles join the words around them
  (`expand`);
* within one record every mention of a detected person is replaced, and the pseudonym operator gives all of
  them one token, that of the person's fullest name (`NameBook`).

A mention is one of the person's words written as a capitalized word (or in capitals), at a word start.
Words that are also everyday words (the gazetteers' ambiguous lists, stop words, titles) are not searched
alone: "Will", "Rose", "Kaya" as a word in the same record must stay.
"""
from __future__ import annotations

import re
from functools import lru_cache

from pipeline.data.pii.en_possessive import person_possessive
from pipeline.data.pii.en_words import EVERYDAY_ZIPF, NOT_NAME, en_zipf
from pipeline.data.pii.later import (
    capitalized_forms,
    lower_case_mention,
    lower_case_name_words,
    sentence_start_name_word,
    surname_opens_sentence,
)
from pipeline.data.pii.name_context import CONTEXT_WORDS, TITLES, TITLES_AFTER, VERBS_AFTER, sentence_initial
from pipeline.data.pii.name_signals import common_words
from pipeline.data.pii.names import (
    LATIN_AMBIGUOUS,
    LATIN_FIRST,
    LATIN_LAST,
    LATIN_LOWER,
    LATIN_UPPER,
    LISTED_EXT,
    NEVER,
    OFFICES,
    PLACE_BEFORE,
    STOP,
    STOP_SURNAMES,
    SURNAME_ENDINGS,
    TURKISH_WORDS,
)
from pipeline.data.pii.neighbours import grow_by_neighbours
from pipeline.data.pii.not_person import place_or_thing
from pipeline.data.pii.ru_morph import mention_forms as ru_mention_forms
from pipeline.data.pii.ru_names import RU_AMBIGUOUS, ru_name_kind
from pipeline.data.pii.text import Hit, fold
from pipeline.data.pii.tr_later import subject_of_clause

_UP = LATIN_UPPER + "А-ЯЁ"
_LO = LATIN_LOWER + "а-яёʼ"
_PARTICLES = tuple(p for p in CONTEXT_WORDS["name_particles"] if not p.endswith("-"))
_GLUED_PARTICLES = tuple(p[:-1] for p in CONTEXT_WORDS["name_particles"] if p.endswith("-"))
_SP = "[ \u00a0]"
# " F." / " J. R." / " И.П." right after a name
_INITIALS_AFTER = re.compile(rf"{_SP}+[{_UP}]\.(?:{_SP}?[{_UP}]\.)*")
# "F. " / "J. R. R. " / "И. П. " right before a name, not inside a word or an abbreviation of letters
_INITIALS_BEFORE = re.compile(rf"(?<![\w.])(?:[{_UP}]\.{_SP}?){{1,3}}$")
_CAP_WORD = re.compile(rf"{_SP}*([{_UP}][{_LO}]+(?:[-'’][{_UP}][{_LO}]+)?)(?![\w])")
_PARTICLE_AFTER = re.compile(
    rf"{_SP}+(?:(?:{'|'.join(map(re.escape, _PARTICLES))}){_SP}+){{1,2}}"
    rf"|{_SP}+(?:{'|'.join(map(re.escape, _GLUED_PARTICLES))})-")
# a capitalized word and a particle right before a name ("Məmməd oğlu " + "Əliyev"); "-" particles are glued
_PARTICLE_BEFORE = re.compile(
    rf"(?<![\w'’-])([{_UP}][{_LO}]+){_SP}+(?:(?:{'|'.join(map(re.escape, _PARTICLES))}){_SP}+){{1,2}}$")
_CAP_WORD_BEFORE = re.compile(rf"(?<![\w'’-])([{_UP}][{_LO}]+(?:-[{_UP}][{_LO}]+)?){_SP}$")
# words that start a sentence after a name and an initial ("I met John F. He said"), not a surname
_NOT_A_SURNAME = frozenset(fold(w) for w in (
    "he she it we they i you then but and so if when there here what who why how yes no o bu şu ve ama "
    "sonra он она оно они мы я вы ты но и а потом тогда").split())
_NOT_ALONE = STOP | NEVER | TITLES | TITLES_AFTER | OFFICES | PLACE_BEFORE | _NOT_A_SURNAME
# first names that are also words ("Rose", "Kaya", "Вера"): a mention only where a sentence does not start, since
# only a proper noun is capitalized there
_AMBIGUOUS = LATIN_AMBIGUOUS | TURKISH_WORDS | RU_AMBIGUOUS
_RUN_ON = re.compile(rf"[ \u00a0][{_LO}]")  # the span goes on into a sentence: a lower-case word after it
_NAME_WORD = re.compile(rf"[{_UP}][{_LO}]+(?:-[{_UP}][{_LO}]+)?|[{_UP}]{{2,}}")
_RU_CASE = "(?:ь|а|я|у|ю|ом|ем|ым|им|ой|ей|е|ы|и|ого|его|ому|ему|ую|юю|ою|ею|ов|ев|ой|ых|их|ым|ыми|ими|ам|ям|ах|ях|ый|ий|ая|яя)?"


_NAMED_AFTER_RU = frozenset(CONTEXT_WORDS["name_named_after_ru"])
# typographic quotes only: a name in straight quotes is as often a value in JSON, CSV or a log line
_OPEN_QUOTES = {"«": "»", "“": "”", "„": "“"}


def named_thing(text: str, h: Hit) -> bool:
    """The PERSON span is part of something named after a person: the whole quoted title of a work («Анна
    Каренина»), or a name in the genitive after a Russian institution word ("Музей Пушкина", "имени Белого")."""
    s, e = h.start, h.end
    if s > 0 and e < len(text) and _OPEN_QUOTES.get(text[s - 1]) == text[e]:
        return True
    if _in_quoted_title(text, s, e):
        return True
    first = text[s:e].split(" ", 1)[0].lower()
    if " " in text[s:e] and first in _NAMED_AFTER_RU:
        return True  # "Кубок Гагарина" taken as one span
    if s >= 3 and text[s - 1] == " " and text[s] in "АБВГДЕЁЖЗИЙКЛМНОПРСТУФХЦЧШЩЭЮЯ":
        j = s - 1
        while j > 0 and (text[j - 1].isalpha() or text[j - 1] == "."):
            j -= 1
        return text[j:s - 1].lower() in _NAMED_AFTER_RU
    return False


_TITLE_GLUE = frozenset("и и/или или of the and a an in on ve ile da de".split())


def _in_quoted_title(text: str, s: int, e: int) -> bool:
    """s..e lies inside a quoted stretch of at most six words, each capitalized or a joining word, without a
    sentence end: the title of a work («Мастер и Маргарита», “Pride and Prejudice”), not quoted speech."""
    lo = max(0, s - 48)
    k = max(text.rfind(q, lo, s) for q in _OPEN_QUOTES)
    if k < 0:
        return False
    close = _OPEN_QUOTES[text[k]]
    m = text.find(close, e, e + 48)
    if m < 0 or close in text[k + 1:s]:
        return False
    inner = text[k + 1:m]
    words = inner.split()
    if not 1 <= len(words) <= 6 or any(c in inner for c in ".!?\n"):
        return False
    return all(w[:1].isupper() or w.lower() in _TITLE_GLUE for w in words)


def drop_named_things(text: str, hits: list[Hit]) -> list[Hit]:
    if not any(h.entity == "PERSON" for h in hits):
        return hits
    return [h for h in hits if h.entity != "PERSON" or not (named_thing(text, h) or place_or_thing(text, h))]


def expand(text: str, hits: list[Hit]) -> list[Hit]:
    """`hits` (kept, non-overlapping, any order) with each PERSON span grown over the initials and particles
    around it, never into another span; PERSON spans that then touch or overlap are merged."""
    if not any(h.entity == "PERSON" for h in hits):
        return hits
    hits = sorted(hits, key=lambda h: h.start)
    out: list[Hit] = []
    for idx, h in enumerate(hits):
        if h.entity != "PERSON":
            out.append(h)
            continue
        # grow up to the next span of another type: over a PERSON span ("Christine de" + "Hassan"), merged below
        limit = next((x.start for x in hits[idx + 1:] if x.entity != "PERSON"), len(text))
        floor = out[-1].end if out else 0
        s, e = _grow(text, h.start, h.end, floor, limit)
        h = Hit(s, e, h.entity, h.score, h.method)
        if out and out[-1].entity == "PERSON" and h.end <= out[-1].end:
            continue  # taken in by the span before it
        if out and out[-1].entity == "PERSON" and (h.start <= out[-1].end
                                                   or text[out[-1].end:h.start] in (" ", "\u00a0")):
            prev = out.pop()
            h = Hit(prev.start, max(prev.end, h.end), "PERSON", max(prev.score, h.score), prev.method)
        out.append(h)
    return out


def _grow(text: str, s: int, e: int, floor: int, limit: int) -> tuple[int, int]:
    for _ in range(6):  # a name holds a few initials and particles at most
        m = _INITIALS_AFTER.match(text, e, limit)
        if m is not None:
            w = _CAP_WORD.match(text, m.end(), limit)
            if w is not None and m.end() < len(text) and text[m.end()] in " \u00a0" \
                    and fold(w.group(1)) not in _NOT_ALONE:
                e = w.end()  # "John F. Miller"
                continue
            e = m.end()  # "Сидоров И. П."
            break
        m = _PARTICLE_AFTER.match(text, e, limit)
        if m is not None:
            w = _CAP_WORD.match(text, m.end(), limit)
            if w is not None and w.start(1) == m.end() and fold(w.group(1)) not in STOP:
                e = w.end()  # "Ludwig van Beethoven", "Omar al-Bashir"
                continue
        break
    m = _PARTICLE_BEFORE.search(text, max(floor, s - 40), s)
    if m is not None and fold(m.group(1)) not in _NOT_ALONE:
        s = m.start(1)  # "Məmməd oğlu Əliyev", "Ludwig van" + "Beethoven"
        for _ in range(2):  # the first names before it, not a capitalized word that starts the sentence
            w = _CAP_WORD_BEFORE.search(text, max(floor, s - 30), s)
            if w is None or fold(w.group(1)) in _NOT_ALONE or (sentence_initial(text, w.start(1))
                                                                and not _listed(w.group(1), fold(w.group(1)))):
                break
            s = w.start(1)
    m = _INITIALS_BEFORE.search(text, max(floor, s - 12), s)
    if m is not None and (m.start() == 0 or not text[m.start() - 1].isalnum()):
        return m.start(), e  # "F. Scott Fitzgerald", "И. П. Сидоров"
    return grow_by_neighbours(text, s, e, floor, limit)  # "Nasir" + "Ahmad called"


def name_words(value: str) -> tuple[str, ...]:
    """The words of a name that identify it: capitalized words, no initials, particles or titles."""
    return tuple(w for w in _NAME_WORD.findall(value) if fold(w) not in TITLES and fold(w) not in TITLES_AFTER)


class NameBook:
    """The persons detected in one record and where each mention's pseudonym comes from."""

    __slots__ = ("persons", "surfaces", "order", "surnames", "titled", "_searchable")

    def __init__(self):
        self.persons: list[frozenset] = []  # per person, its words folded (ı/İ/I -> i, lower case)
        self.order: dict[frozenset, str] = {}  # the person's words in the order first written
        self.surfaces: dict[str, set] = {}  # a folded word -> the forms it was written in
        self.surnames: set[str] = set()  # folded last words of names of two words or more
        self.titled: set[str] = set()  # folded words written right before Bey/Hanım: a person's name for sure
        self._searchable: tuple[str, ...] | None = None  # searchable(), until the next add()

    def add(self, value: str, after: str = "", initial: bool = False) -> None:
        """`after`: the text right after the span, when it was found in a text; `initial`: the span starts a
        sentence there."""
        if any(c.isdigit() or c in "/@:;,!?()" for c in value):
            return  # a span merged with an address or an identifier: its words are no name to look for
        typed_lower = value.islower()
        written = name_words(value) or (lower_case_name_words(value) if typed_lower else ())
        if len(written) > 5:
            return
        if len(written) >= 3 and _RUN_ON.match(after) and not _listed(written[-1], fold(written[-1])) \
                and not fold(written[-1]).endswith(SURNAME_ENDINGS):
            # a run that went on into the next sentence ("Yetkili kişi: Sezer Ergün Türk Telekom faturası",
            # "Получатель: Едуард Титаренко Мой заказ"): an unlisted last word is not looked for alone
            written = written[:-1]
        if initial and not typed_lower and len(written) >= 2 and not _listed(written[0], fold(written[0])) \
                and not sentence_start_name_word(fold(written[0])):
            written = written[1:]  # "Dosyayı Baysal adına açtım": the sentence's first word is no name word
        words = frozenset(fold(w) for w in written)
        if not words:
            return
        if words not in self.persons:
            self.persons.append(words)
            self.order[words] = " ".join(dict.fromkeys(fold(w) for w in written))
        for w in written:
            self.surfaces.setdefault(fold(w), set()).update(capitalized_forms(w))
        if len(written) >= 2:
            self.surnames.add(fold(written[-1]))
        if _TITLE_AFTER.match(after):
            self.titled.update(words)
        self._searchable = None

    def __bool__(self) -> bool:
        return bool(self.persons)

    def stop_surname(self, key: str) -> bool:
        """The surname of a name found whole that is also a stop word ("Jane Hall", "Jules Church"): looked for
        alone too, where only a person's name stands (stop_surname_mention)."""
        return key in self.surnames and key in STOP_SURNAMES

    def searchable(self) -> tuple[str, ...]:
        """The written forms of the words worth finding alone in the rest of the record (asked once per unit of
        the record: computed once per book state)."""
        if self._searchable is None:
            out = set()
            for key, forms in self.surfaces.items():
                if len(key) >= 3 and (key not in _NOT_ALONE or self.stop_surname(key)):
                    out.update(forms)
            self._searchable = tuple(sorted(out))
        return self._searchable

    def canonical(self, value: str) -> str:
        """The value a mention is pseudonymized as: the fullest name of the one person whose words hold all of
        the mention's, else the mention itself ("Miller" beside "John Miller" and "Anna Miller")."""
        words = frozenset(k for k in (fold(w) for w in name_words(value)) if k in self.surfaces)
        if not words:
            return value
        cands = [p for p in self.persons if words <= p]
        if not cands:
            return value
        top = max(cands, key=len)
        if any(not p <= top for p in cands):
            return value
        return self.order[top]


_CYR = re.compile("[а-яёА-ЯЁ]")
_NOT_AFTER = frozenset("'’-.@/")  # with \w: what a mention may not follow
# a case ending (in capitals too: "ПЕТРОМ"), then what a mention may not precede
_RU_ENDING = re.compile(_RU_CASE + r"(?![\w@])", re.IGNORECASE)


@lru_cache(maxsize=4096)
def _mention_forms(words: tuple[str, ...]) -> tuple[tuple[tuple[str, ...], bool], ...]:
    """Per word, in the book's order: its written forms (as written, upper case; a Russian word's stem) and
    whether a Russian case ending may follow."""
    out = []
    for w in words:
        if _CYR.search(w):
            out.append((ru_mention_forms(w), True))
        else:
            out.append((_latin_forms(w), False))
    return tuple(out)


def _latin_forms(w: str) -> tuple[str, ...]:
    """A Latin name word as written, in capitals and in lower case, each also the Turkish way (İ/ı):
    "Çelik", "ÇELİK", "ÇELIK", "çelik"; "Işık", "IŞIK", "ışık". A lower-case form only for a word of four
    letters or more (a short one is too often another word)."""
    forms = [w, w.upper(), w.replace("i", "İ").replace("ı", "I").upper()]
    if len(w) >= 4:
        forms += [w.lower(), w.replace("I", "ı").replace("İ", "i").lower()]
    return tuple(dict.fromkeys(forms))


_WORD_CHAR = re.compile(r"\w")


def _is_word(ch: str) -> bool:
    return _WORD_CHAR.match(ch) is not None


def _mention_spans(text: str, words: tuple[str, ...]) -> list[tuple[int, int]]:
    r"""The spans finditer would give for the alternation `(?<![\w'’\-.@/])(?:w1|W1|w2|W2...)(?![\w@])` of the
    words' forms (each Russian stem followed by an optional case ending), without compiling one regex per
    name book (re.compile of a book's alternation cost ~1.5 ms, once per record): the candidate starts come
    from str.find, and at each start the forms are tried in the alternation's order, leftmost-first like
    the regex, the scan resuming after a match."""
    forms = _mention_forms(words)
    starts = set()
    for variants, _ in forms:
        for v in variants:
            k = text.find(v)
            while k >= 0:
                starts.add(k)
                k = text.find(v, k + 1)
    out = []
    pos = 0
    for s in sorted(starts):
        if s < pos:
            continue
        if s > 0 and (text[s - 1] in _NOT_AFTER or _is_word(text[s - 1])):
            continue
        for variants, ru in forms:
            end = -1
            for v in variants:
                if not text.startswith(v, s):
                    continue
                k = s + len(v)
                if ru:
                    m = _RU_ENDING.match(text, k)
                    if m is not None:
                        end = m.end()
                elif k >= len(text) or not (text[k] == "@" or _is_word(text[k])):
                    end = k
                if end >= 0:
                    break
            if end >= 0:
                out.append((s, end))
                pos = end
                break
    return out


def find_mentions(text: str, book: NameBook, kept: list[Hit]) -> list[Hit]:
    """Mentions of the book's persons in `text` outside the `kept` spans."""
    words = book.searchable()
    if not words:
        return []
    out = []
    spans = sorted((h.start, h.end) for h in kept)
    for s, e in _mention_spans(text, words):
        if any(a < e and s < b for a, b in spans):
            continue
        key = fold(text[s:e])
        if key in book.titled:
            # "Mobil Bey", "Samsun Bey": the record calls a person so, so "mobil" or "Ramaza Samsun" is that
            # person too, in any case and beside any word
            out.append(Hit(s, e, "PERSON", 0.8, "record"))
            continue
        initial = sentence_initial(text, s)
        if initial and key in _AMBIGUOUS and not _TITLE_OR_SUFFIX.match(text, e) \
                and not surname_opens_sentence(text, e, key in book.surnames) and not subject_of_clause(text, e):
            continue  # "Rose ...", "Kara ...": a capital at a sentence start says nothing, unless a title or an
            # apostrophe suffix follows ("Deniz Hanım", "Derya'nın") or a Turkish clause (tr_later)
        if text[s].islower() and (key in _AMBIGUOUS or _everyday_word(key)
                                  or not (_listed_any(key) or lower_case_mention(key))) \
                and not _TITLE_OR_SUFFIX.match(text, e):
            continue  # "the rose is red", "çelik kapı", "anarchism": in lower case a word, unless a listed name
            # or "çelik bey", "çelik'in"
        if _inside_other_noun(text, s, e, book, initial):
            continue
        if key in _NOT_ALONE and not _stop_surname_mention(text, s, e, initial):
            continue
        out.append(Hit(s, e, "PERSON", 0.8, "record"))
    return out


_TITLE_AFTER_RE = r"[ \u00a0](?:" + "|".join(sorted(map(re.escape, (
    w for w in CONTEXT_WORDS["name_titles_after"])), key=len, reverse=True)) + r")(?!\w)"
_TITLE_AFTER = re.compile(_TITLE_AFTER_RE, re.I)
_TITLE_OR_SUFFIX = re.compile(r"['’]\w|" + _TITLE_AFTER_RE, re.I)


_ARTICLE_BEFORE = re.compile(r"(?<![\w'’-])(?i:the|an?)[ \u00a0]$")


def _stop_surname_mention(text: str, s: int, e: int, initial: bool) -> bool:
    """A surname that is also a stop word ("Hall", "Church", "Park"), of a person the record names in full, alone:
    capitalized mid-sentence, or at a sentence start with a suffix ("Hall's order") or a calling verb after it
    ("Church confirmed"); in lower case or after an article it is the word ("the Park entrance")."""
    if not text[s].isupper() or _ARTICLE_BEFORE.search(text, max(0, s - 5), s) is not None:
        return False
    return not initial or _TITLE_OR_SUFFIX.match(text, e) is not None or VERBS_AFTER.match(fold(text[e:e + 40])) is not None


def _listed_any(key: str) -> bool:
    """A Latin first name or surname of the gazetteer or its names-dataset extension."""
    return key in LATIN_FIRST or key in LATIN_LAST or key in LISTED_EXT


def _everyday_word(key: str) -> bool:
    """A common word of Turkish or English (wordfreq, see name_signals)."""
    return key in common_words("tr") or key in common_words("en")


def _listed(word: str, key: str) -> bool:
    """A first name or surname of the gazetteers (Russian ones in any case form)."""
    if key in LATIN_FIRST or key in LATIN_LAST:
        return True
    return word[:1] in "АБВГДЕЁЖЗИЙКЛМНОПРСТУФХЦЧШЩЭЮЯ" and ru_name_kind(word) in ("first", "middle", "last")


def _inside_other_noun(text: str, s: int, e: int, book: NameBook, initial: bool) -> bool:
    """The mention is a word of another proper noun: a capitalized word that is not the person's is glued to it
    by one space ("Türk Telekom", "Kaya Holding"); a title (Bey, Hanım) after it or before it does not count, nor
    a capitalized word that starts the sentence before it ("Later Smith said")."""
    w = _CAP_WORD.match(text, e)
    if w is not None and w.start(1) == e + 1 and text[e] in " \u00a0":
        k = fold(w.group(1))
        if k not in TITLES_AFTER and k not in book.surfaces and k not in NEVER:
            return True
    if s >= 2 and text[s - 1] in " \u00a0":
        j = s - 1
        while j > 0 and (text[j - 1].isalpha()):
            j -= 1
        prev = text[j:s - 1]
        if prev[:1].isupper() and not sentence_initial(text, j):
            k = fold(prev)
            if k not in book.surfaces and k not in TITLES and k not in OFFICES and k not in NEVER:
                return True
    return False


_POSSESSIVE = re.compile(rf"(?<![\w'’.-])([{LATIN_UPPER}][{LATIN_LOWER}]{{2,}})['’]s[ \t]+[a-z]")
_CAP_BEFORE = re.compile(rf"[{LATIN_UPPER}][\w'’-]*[ \t]+$")


def lone_first_name_surnames(text: str, book: NameBook, kept: list[Hit]) -> list[Hit]:
    """English: where the record names a person by one word alone, a first name ("Patricia will call back"), a
    capitalized word in the possessive before a lower-case word is that person's surname ("Quillbury's order is
    on hold") unless it is an everyday word or one written in the possessive as often as without it (a shop's:
    "Sainsbury's"). en_possessive takes only words rare in English at large; a found first name in the record
    lets a surname of middle frequency ("Murphy", "Lang", "Emery") through, the one a shop's name would
    need too ("Walmart's" beside a lone first name is taken: a lesser harm than a person's surname left)."""
    if not any(len(p) == 1 for p in book.persons):
        return []
    spans = [(h.start, h.end) for h in kept]
    out = []
    for m in _POSSESSIVE.finditer(text):
        s, e = m.span(1)
        key = fold(m.group(1))
        if key in NOT_NAME or key in book.surfaces or any(a < e and s < b for a, b in spans):
            continue
        if en_zipf(key) >= EVERYDAY_ZIPF or not person_possessive(key):
            continue
        if not sentence_initial(text, s) and _CAP_BEFORE.search(text, max(0, s - 30), s):
            continue  # "Trader Joe's"
        out.append(Hit(s, e, "PERSON", 0.7, "record"))
    return out
