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

from .names import (_LAT_LO, _LAT_UP, LATIN_AMBIGUOUS, LATIN_FIRST, LATIN_LAST, NEVER, OFFICES, PLACE_BEFORE, RU_AMBIGUOUS, STOP,
                    TITLES, TITLES_AFTER, TURKISH_WORDS, _CTX, _sentence_initial,
                    ru_name_kind)
from .text import Hit, fold

_UP = _LAT_UP + "А-ЯЁ"
_LO = _LAT_LO + "а-яёʼ"
_PARTICLES = tuple(p for p in _CTX["name_particles"] if not p.endswith("-"))
_GLUED_PARTICLES = tuple(p[:-1] for p in _CTX["name_particles"] if p.endswith("-"))
_SP = "[ \u00a0]"
# " F." / " J. R." / " И.П." right after a name
_INITIALS_AFTER = re.compile(rf"{_SP}+[{_UP}]\.(?:{_SP}?[{_UP}]\.)*")
# "F. " / "J. R. R. " / "И. П. " right before a name, not inside a word or an abbreviation of letters
_INITIALS_BEFORE = re.compile(rf"(?<![\w.])(?:[{_UP}]\.{_SP}?){{1,3}}$")
_CAP_WORD = re.compile(rf"{_SP}*([{_UP}][{_LO}]+(?:[-'’][{_UP}][{_LO}]+)?)(?![\w])")
_PARTICLE_AFTER = re.compile(
    rf"{_SP}+(?:(?:{'|'.join(map(re.escape, _PARTICLES))}){_SP}+){{1,2}}"
    rf"|{_SP}+(?:{'|'.join(map(re.escape, _GLUED_PARTICLES))})-")
# words that start a sentence after a name and an initial ("I met John F. He said"), not a surname
_NOT_A_SURNAME = frozenset(fold(w) for w in (
    "he she it we they i you then but and so if when there here what who why how yes no o bu şu ve ama "
    "sonra он она оно они мы я вы ты но и а потом тогда").split())
_NOT_ALONE = STOP | NEVER | TITLES | TITLES_AFTER | OFFICES | PLACE_BEFORE | _NOT_A_SURNAME
# first names that are also words ("Rose", "Kaya", "Вера"): a mention only where a sentence does not start, since
# only a proper noun is capitalized there
_AMBIGUOUS = LATIN_AMBIGUOUS | TURKISH_WORDS | RU_AMBIGUOUS
_NAME_WORD = re.compile(rf"[{_UP}][{_LO}]+(?:-[{_UP}][{_LO}]+)?|[{_UP}]{{2,}}")
_RU_STEM_END = "аяйьоеы"
_RU_CASE = "(?:а|я|у|ю|ом|ем|ым|им|ой|ей|е|ы|и|ого|его|ому|ему|ую|юю|ою|ею|ов|ев|ой|ых|их|ым|ыми|ими|ам|ям|ах|ях)?"


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
        limit = hits[idx + 1].start if idx + 1 < len(hits) else len(text)
        floor = out[-1].end if out else 0
        s, e = _grow(text, h.start, h.end, floor, limit)
        h = Hit(s, e, h.entity, h.score, h.method)
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
    m = _INITIALS_BEFORE.search(text, max(floor, s - 12), s)
    if m is not None and (m.start() == 0 or not text[m.start() - 1].isalnum()):
        s = m.start()  # "F. Scott Fitzgerald", "И. П. Сидоров"
    return s, e


def name_words(value: str) -> tuple[str, ...]:
    """The words of a name that identify it: capitalized words, no initials, particles or titles."""
    return tuple(w for w in _NAME_WORD.findall(value) if fold(w) not in TITLES and fold(w) not in TITLES_AFTER)


class NameBook:
    """The persons detected in one record and where each mention's pseudonym comes from."""

    __slots__ = ("persons", "surfaces", "order")

    def __init__(self):
        self.persons: list[frozenset] = []  # per person, its words folded (ı/İ/I -> i, lower case)
        self.order: dict[frozenset, str] = {}  # the person's words in the order first written
        self.surfaces: dict[str, set] = {}  # a folded word -> the forms it was written in

    def add(self, value: str) -> None:
        if any(c.isdigit() or c in "/@:;,!?()" for c in value):
            return  # a span merged with an address or an identifier: its words are no name to look for
        written = name_words(value)
        if len(written) > 5:
            return
        words = frozenset(fold(w) for w in written)
        if not words:
            return
        if words not in self.persons:
            self.persons.append(words)
            self.order[words] = " ".join(dict.fromkeys(fold(w) for w in written))
        for w in written:
            self.surfaces.setdefault(fold(w), set()).add(w[:1] + w[1:].lower() if w.isupper() else w)

    def __bool__(self) -> bool:
        return bool(self.persons)

    def searchable(self) -> tuple[str, ...]:
        """The written forms of the words worth finding alone in the rest of the record."""
        out = set()
        for key, forms in self.surfaces.items():
            if len(key) >= 3 and key not in _NOT_ALONE:
                out.update(forms)
        return tuple(sorted(out))

    def canonical(self, value: str) -> str:
        """The value a mention is pseudonymized as: the fullest name of the one person whose words hold all of
        the mention's, else the mention itself ("Miller" beside "John Miller" and "Anna Miller")."""
        words = frozenset(fold(w) for w in name_words(value))
        if not words:
            return value
        cands = [p for p in self.persons if words <= p]
        if not cands:
            return value
        top = max(cands, key=len)
        if any(not p <= top for p in cands):
            return value
        return self.order[top]


@lru_cache(maxsize=4096)
def _mention_regex(words: tuple[str, ...]):
    alts = []
    for w in words:
        if re.search("[а-яёА-ЯЁ]", w):
            stem = w[:-1] if w[-1] in _RU_STEM_END and len(w) > 3 else w
            alts.append(f"(?:{re.escape(stem)}|{re.escape(stem.upper())}){_RU_CASE}")
        else:
            alts.append(f"(?:{re.escape(w)}|{re.escape(w.upper())})")
    return re.compile(r"(?<![\w'’\-.@/])(?:" + "|".join(alts) + r")(?![\w@])")


def find_mentions(text: str, book: NameBook, kept: list[Hit]) -> list[Hit]:
    """Mentions of the book's persons in `text` outside the `kept` spans."""
    words = book.searchable()
    if not words:
        return []
    regex = _mention_regex(words)
    out = []
    spans = sorted((h.start, h.end) for h in kept)
    for m in regex.finditer(text):
        s, e = m.span()
        if any(a < e and s < b for a, b in spans):
            continue
        key = fold(m.group())
        initial = _sentence_initial(text, s)
        if initial and (key in _AMBIGUOUS or not (_listed(m.group(), key) or text[e:e + 1] == ",")):
            continue  # "Мой ...", "Rose ...": a capital at a sentence start says nothing, unless the word is a
            # listed name or is addressed ("Joost, your order ...")
        if _inside_other_noun(text, s, e, book, initial):
            continue
        out.append(Hit(s, e, "PERSON", 0.8, "record"))
    return out


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
        if prev[:1].isupper() and not _sentence_initial(text, j):
            k = fold(prev)
            if k not in book.surfaces and k not in TITLES and k not in OFFICES and k not in NEVER:
                return True
    return False
