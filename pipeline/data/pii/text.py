"""Per-text scan state shared by the recognizers, plus the small helpers they all use.

A TextContext caches what several recognizers need from one text (a folded lower-case copy for context
words, the runs of digits, the capitalized tokens) so that the fast path computes each once per text.
A recognizer called through Presidio's AnalyzerEngine.analyze builds its own context (the plain way).
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import NamedTuple

from pipeline.core.records import ENTITY_TYPES  # noqa: F401  (re-exported: the PII package's vocabulary)
from pipeline.core.resources import resource
from pipeline.data.pii.checks import iban_end, iban_length


# Entity types the step can report; the placeholder of each is "<TYPE>".
class Hit(NamedTuple):
    """One detection: character span, entity type, score, and how it was found (no value is stored)."""

    start: int
    end: int
    entity: str
    score: float
    method: str


@lru_cache(maxsize=None)
def load_data(name: str) -> dict:
    """A JSON file from pipeline/resources/pii/."""
    path = resource("pii", name)
    return json.loads(path.read_text(encoding="utf-8"))


_FOLD = str.maketrans({"İ": "i", "I": "i", "ı": "i"})


def fold(text: str) -> str:
    """Lower case with Turkish dotted/dotless i folded to i; same length as the input."""
    if text.isascii():  # most words: no Turkish i, no length change (isascii reads a flag: no scan)
        return text.lower()
    # two C-speed replaces (a no-op scan when absent) are ~8x faster than translate's per-character lookup;
    # "I".lower() is already "i"
    out = text.replace("İ", "i").replace("ı", "i").lower()
    if len(out) != len(text):  # a character whose lower case is longer: fold one by one
        out = "".join((c.translate(_FOLD).lower() or c)[:1] for c in text)
    return out


def holds_any(text: str, parts) -> bool:
    """Whether any of `parts` is a substring of `text` (a loop: any() over a generator costs ~1 us more)."""
    for p in parts:
        if p in text:
            return True
    return False


def presence_pattern(words) -> str:
    """A regex that finds some one of `words` wherever any of them occurs (for a presence test, not for the
    matches themselves): a word that holds another is left out, since the shorter one is found there first
    ("pass" for "password"), and the rest are grouped by their first character, so that the regex engine
    tries one branch per candidate position instead of every word."""
    words = set(words)
    needed = sorted(w for w in words if not any(o != w and o in w for o in words))
    branches = []
    for first in dict.fromkeys(w[0] for w in needed):
        tails = sorted((w[1:] for w in needed if w[0] == first), key=len, reverse=True)
        branches.append(re.escape(first) + ("(?:" + "|".join(map(re.escape, tails)) + ")" if len(tails) > 1
                                            else re.escape(tails[0])))
    return "|".join(branches)


def first_char_alternation(alternatives: list[tuple[str, str]]) -> str:
    """An alternation of regexes, each given with the literal first character of what it matches, grouped by
    that character: the engine then tries one group at a position instead of every alternative. The matches
    are the same: alternatives of one group keep their order, and two groups never match at one position."""
    groups: dict[str, list[str]] = {}
    for rx, first in alternatives:
        if len(first) != 1:
            raise ValueError("each alternative needs its literal first character")
        groups.setdefault(first, []).append(rx)
    return "|".join(g[0] if len(g) == 1 else "(?:" + "|".join(g) + ")" for g in groups.values())


class PhraseLeads:
    """What the folded text must hold for one of `phrases` (folded, matched as written; "stem*" for any word that
    starts so) to stand in it at a word start: a one-word phrase among the text's words, a one-word stem
    anywhere in it, a longer phrase written out in it (asked only when its first word is among the words). A
    phrase that starts with no word character is always searched for."""

    def __init__(self, phrases):
        words, stems, longer = set(), set(), {}
        self.always = False
        for p in phrases:
            star = p.endswith("*")
            p = p.rstrip("*")
            m = _LEAD_WORD.match(p)
            if m is None:
                self.always = True
            elif m.end() < len(p):
                longer.setdefault(m.group(), set()).add(p)
            elif star:
                stems.add(p)
            else:
                words.add(p)
        self.words, self.stems = frozenset(words), tuple(sorted(stems))
        self.longer = {k: tuple(sorted(v)) for k, v in longer.items()}
        self.longer_leads = frozenset(self.longer)


_LEAD_WORD = re.compile(r"\w+")


class WordStart:
    """A regex that matches at a word start only ("(?<!\\w)" and then `body`), searched at ~40% less CPU: past the
    text's start, the non-word character before a match is consumed ("\\W" and then `body`: the engine skips to
    such characters, where a look-behind first is tried at every position). The matches and their groups are
    the same (the whole match's span is not: read the groups) for a `body` none of whose matches can start
    where the one before it ended: one whose matches end with a word character, or are followed by a
    character no match starts with."""

    def __init__(self, body: str, flags: int = 0):
        self.first = re.compile(r"(?<!\w)(?:" + body + ")", flags)
        self.rest = re.compile(r"\W(?:" + body + ")", flags)

    def finditer(self, text: str):
        m = self.first.match(text)
        if m is not None:
            yield m
        yield from self.rest.finditer(text, m.end() if m is not None else 0)


class ContextWords:
    """Context words matched at a word start in folded text. Words of up to 3 characters must be whole words
    ('tc', 'ip', 'ref'); longer ones match as a prefix, so a stem covers its inflections ('kimli' -> 'kimliği')."""

    def __init__(self, words):
        parts = []
        self.words = tuple(sorted({fold(w).strip() for w in words if w.strip()}, key=len, reverse=True))
        for word in self.words:
            esc = re.escape(word)
            parts.append(esc + r"(?![^\W\d_])" if len(word) <= 3 else esc)
        self.regex = re.compile(r"(?<![^\W\d_])(?:" + "|".join(parts) + ")") if parts else None
        # presence test without the look-behind (which costs a check at every position)
        self.quick = re.compile(presence_pattern(self.words)) if self.words else None

    def last_end(self, norm: str, start: int, before: int) -> int:
        """End of the last context word within `before` characters before `start`, or -1."""
        if self.regex is None:
            return -1
        last = -1
        for m in self.regex.finditer(norm, max(0, start - before), start):
            last = m.end()
        return last

    def near(self, norm: str, start: int, end: int, before: int, after: int = 0) -> bool:
        if self.regex is None:
            return False
        if self.regex.search(norm, max(0, start - before), start):
            return True
        return bool(after) and self.regex.search(norm, end, end + after) is not None

    def search(self, norm: str) -> bool:
        """Any of the words in `norm` (a substring test first: the regex only confirms a word start)."""
        if self.regex is None or self.quick.search(norm) is None:
            return False
        return self.regex.search(norm) is not None


class NumRun(NamedTuple):
    start: int
    end: int
    plus: bool                        # written with a leading + (international phone)
    groups: tuple                     # ((start, end), ...) of the maximal digit groups
    ndigits: int


# A run of digits with single separators (space, dash, dot, slash, parentheses) between groups,
# optionally led by "+" or "(": "+90 (532) 123-45-67", "123-456-789 01", "4508 123456". A cheap
# character-class scan finds the stretches; _split_runs applies the separator rules in Python.
# The regexes that scan whole texts start with one character class: the regex engine then skips to the
# positions that class admits, where a look-behind or an optional part first is tried at every position
# (~35 ns a character). A look-behind moves after the first class C as "C(?<!BC)", the same test since C has
# just matched; here "[+(]?\d" is "[+(\d]", then a digit if that was "+" or "(". tests/data/test_pii_recognizers.py
# (CLASS_FIRST_FORMS) holds each such regex beside its plain form and compares their matches.
_NUMSPAN = re.compile(r"[+(\d](?:(?<=[+(])\d)?(?<=\d)[\d \u00a0\-./()]*")
_DIGITS = re.compile(r"\d+")
_ANY_DIGIT = re.compile(r"\d")
# ten digits with only run characters between them: a necessary condition for a run of ten or more
_TEN_DIGITS = re.compile(r"\d(?:[ \u00a0\-./()]*\d){9}")
_SEPARATORS = frozenset([" ", "\u00a0", "-", ".", "/", ")", ") ", ")\u00a0", "(", " (", "\u00a0("])


def _split_runs(text: str, s: int, e: int, out: list, glued: list) -> None:
    groups = [g.span() for g in _DIGITS.finditer(text, s, e)]
    if not groups:
        return
    # a number glued to a word ("TR33", "A123") starts no run: its first group is dropped (and kept in
    # `glued`: an identifier may still be glued to a prefix, "TC27384619550", "musteri_27384619550.pdf")
    k = groups[0][0]
    if k > 0 and (text[k - 1].isalnum() or text[k - 1] == "_") and text[s] not in "+(":
        glued.append(groups[0])
        groups = groups[1:]
    elif k > 1 and text[s] == "(" and (text[s - 1].isalnum()):
        groups = groups[1:]
    cur: list = []
    for g in groups:
        if cur and text[cur[-1][1]:g[0]] not in _SEPARATORS:
            _emit(text, cur, out)
            cur = []
        cur.append(g)
    if cur:
        _emit(text, cur, out)


def _emit(text: str, groups: list, out: list) -> None:
    a = groups[0][0]
    b = groups[-1][1]
    plus = False
    if a > 0 and text[a - 1] == "(":
        a -= 1
    if a > 0 and text[a - 1] == "+":
        a -= 1
        plus = True
    elif a > 1 and text[a - 1] in " \u00a0" and text[a - 2] == "+":
        a -= 2
        plus = True
    if plus and a > 0 and (text[a - 1].isalnum()):
        plus = False
        a = groups[0][0]
    if b < len(text) and text[b] == ")" and "(" in text[a:b]:
        b += 1
    out.append(NumRun(a, b, plus, tuple(groups), sum(y - x for x, y in groups)))


# a sentence ends at "?" or "!", or at "." after a lower-case letter, digit or ")" when a capital follows,
# or after a lower-case word of four letters or more when a digit follows ("teslim etmedi. 49 R 96151");
# "No. 123", "Tel. 0532" and "T.C. Kimlik" do not end one (the end mark first: _NUMSPAN)
_SENT_BOUNDARY = re.compile(r"[!?.](?:(?<=[!?])\s+|(?<=[a-zçğıöşüа-яё\d)]\.)\s+(?=[A-ZÇĞİÖŞÜА-ЯЁ])"
                            r"|(?<=[a-zçğıöşüа-яё]{4}\.)\s+(?=\d))")
NON_WORD = re.compile(r"\W+")  # what splits a text into words (TextContext.words)
_IBAN_HINT = re.compile(r"[A-Z]{2}\d{2}")
_IBAN_LIKE = re.compile(r"[A-Z](?<![A-Za-z0-9][A-Z])[A-Z]\d{2}(?:[ \u00a0-]?[A-Z0-9]){10,32}")  # see _NUMSPAN


def _nth_alnum_end(text: str, s: int, e: int, n: int | None) -> int | None:
    """The end of the n-th letter or digit of text[s:e], or None when there are fewer (or n is None)."""
    if n is None:
        return None
    for k in range(s, e):
        if text[k].isalnum():
            n -= 1
            if n == 0:
                return k + 1
    return None


def split_words(text: str) -> frozenset:
    """frozenset(NON_WORD.split(text)), at a third less CPU: str.split at white space, and the regex only for the
    pieces that hold another non-word character ("sipariş," "e-posta"). \\w is what str.isalnum() holds, and
    "_"; the split leaves "" where the text starts or ends with a non-word character."""
    # the commonest punctuation first blanked, so that most texts' pieces are words already
    out = set(text.replace(".", " ").replace(",", " ").split())
    glued = [w for w in out if not w.isalnum()] if not "".join(out).isalnum() else None
    if glued:
        out.difference_update(glued)
        for w in glued:
            out.update(NON_WORD.split(w))
        out.discard("")
    if not text or not (text[0].isalnum() or text[0] == "_") or not (text[-1].isalnum() or text[-1] == "_"):
        out.add("")
    return frozenset(out)


class WordTest:
    """A test of one word asked of a text's set of words with set operations: each word's answer is kept per
    process (up to `size` words), so a text whose words were all seen costs a set difference and an
    intersection, where a Python loop over its words costs ~0.1 us a word."""

    def __init__(self, test, size: int = 1 << 17):
        self.test = test
        self.size = size
        self.seen: set[str] = set()
        self.passed: set[str] = set()

    def select(self, words: frozenset) -> frozenset:
        """The words that pass the test."""
        new = words.difference(self.seen)
        if not new:
            return words & self.passed
        good = {w for w in new if self.test(w)}
        if len(self.seen) >= self.size:
            return frozenset((words & self.passed) | good)
        self.passed |= good  # before `seen`: a word seen is always answered (threads share the sets)
        self.seen |= new
        return words & self.passed


class TextContext:
    """Lazily computed views of one text."""

    __slots__ = ("text", "lang", "_norm", "_runs", "_glued", "_iban_like", "_ibans", "_max_digits", "_below_ten",
                 "_words", "_folded_words", "_has_digit", "extra")

    def __init__(self, text: str, lang: str):
        self.text = text
        self.lang = lang
        self._norm = None
        self._runs = None
        self._glued = None
        self._iban_like = None
        self._ibans = None
        self._max_digits = None
        self._below_ten = None
        self._words = None
        self._folded_words = None
        self._has_digit = None
        self.extra = {}

    def memo(self, key: str, compute):
        """A view of this text that a recognizer's triggered() and find() both read, computed once."""
        try:
            return self.extra[key]
        except KeyError:
            value = self.extra[key] = compute()
            return value

    @property
    def words(self) -> frozenset:
        """The text's lower-case words (split at non-word characters): one C-speed set test tells whether a
        text holds any of a list of words."""
        if self._words is None:
            self._words = split_words(self.text.lower())
        return self._words

    @property
    def has_digit(self) -> bool:
        """A digit anywhere (the engine asks first: most recognizers need one; so do IPv4 addresses)."""
        if self._has_digit is None:
            # a digit is a word character: it stands in some word of the text, and in most texts every word is
            # letters only (one C-speed test of the distinct words, where a regex scan of the whole text costs
            # ~10 ns a character); \d is str.isdecimal, and lower() changes no digit
            self._has_digit = not "".join(self.words).isalpha() and _ANY_DIGIT.search(self.text) is not None
        return self._has_digit

    @property
    def folded_words(self) -> frozenset:
        """The words of the folded text (norm), as `words` holds those of the lower-cased one. Without "İ" (which
        lower() alone makes two characters) they are the lower-cased words with "ı" folded to "i"."""
        if self._folded_words is None:
            text = self.text
            if "İ" in text:
                self._folded_words = split_words(self.norm)
            elif "ı" in text:  # one replace over the joined words (no word holds a line break)
                self._folded_words = frozenset("\n".join(self.words).replace("ı", "i").split("\n"))
            else:
                self._folded_words = self.words
        return self._folded_words

    def may_hold_phrase(self, leads: "PhraseLeads") -> bool:
        """A necessary condition for one of the phrases of `leads` to stand in the folded text at a word start (kept:
        several signals ask it of one text)."""
        found = self.extra.get(leads)
        if found is None:
            words, norm = self.folded_words, self.norm
            found = self.extra[leads] = leads.always or not words.isdisjoint(leads.words) \
                or holds_any(norm, leads.stems) or any(p in norm for w in words & leads.longer_leads
                                                       for p in leads.longer[w])
        return found

    @property
    def iban_like(self) -> list[tuple[int, int]]:
        """Spans shaped like an IBAN (valid or not): their digits are no phone, card or ID number. One that
        holds a valid IBAN ends with it: "TR33 0006 ... 26 4430 4692 ..." leaves the card after it alone."""
        if self._iban_like is None:
            self._scan_ibans()
        return self._iban_like

    @property
    def ibans(self) -> list[tuple[int, int]]:
        """The valid IBANs among the iban_like spans."""
        if self._ibans is None:
            self._scan_ibans()
        return self._ibans

    def _scan_ibans(self) -> None:
        text = self.text
        self._iban_like, self._ibans = [], []
        if _IBAN_HINT.search(text):
            for m in _IBAN_LIKE.finditer(text):
                s, e = m.span()
                end = iban_end(text, s, e)
                if end is None:
                    # an invalid one ends at its country's length: the match may run on into a card after it
                    end_like = _nth_alnum_end(text, s, e, iban_length(text[s:s + 2]))
                    self._iban_like.append((s, end_like or e))
                else:
                    self._iban_like.append((s, end))
                    self._ibans.append((s, end))

    def scope_start(self, s: int, before: int) -> int:
        """Where the context window of a candidate at `s` starts: `before` characters back, but not
        before the start of its sentence ("...magazine? Спишите с 4021..." keeps "товар" out)."""
        lo = max(0, s - before)
        last = lo
        # a candidate that starts with a digit may start a sentence ("etmedi. 49 R 96151"): the boundary's
        # look-ahead sees it; one that starts with a capital does not ("Passport No. E06863303")
        end = s + 1 if self.text[s:s + 1].isdigit() else s
        for m in _SENT_BOUNDARY.finditer(self.text, lo, end):
            last = m.end()
        return last

    def number_between(self, a: int, b: int) -> bool:
        """A digit group lies between positions a and b: a context word belongs to the number after it, also
        when the next number follows that one with only a space between ("ИНН 4415136454 8 (913) ...")."""
        for run in self.runs:
            if run.start >= b:
                break
            if run.end > a and any(g0 >= a and g1 <= b for g0, g1 in run.groups):
                return True
        return False

    def in_iban_like(self, start: int) -> bool:
        spans = self.iban_like
        return bool(spans) and any(a <= start < b for a, b in spans)  # most texts hold none: no generator

    @property
    def norm(self) -> str:
        if self._norm is None:
            self._norm = fold(self.text)
        return self._norm

    @property
    def runs(self) -> list[NumRun]:
        if self._runs is None:
            runs, glued = [], []
            text = self.text
            for m in _NUMSPAN.finditer(text):
                _split_runs(text, m.start(), m.end(), runs, glued)
            self._runs, self._glued = runs, glued
        return self._runs

    @property
    def glued(self) -> list[tuple[int, int]]:
        """Digit groups of ten or more glued to a word before them ("TC27384619550", "user_27384619550"): no
        run starts with them (a code such as "TR33" is no number), but an identifier may be written so."""
        if self._glued is None:
            if self._runs is None and self._below_ten is None:
                self._below_ten = _TEN_DIGITS.search(self.text) is None
            if self._below_ten and self._runs is None:
                return []
            self.runs  # noqa: B018  fills _glued
        return [g for g in self._glued if g[1] - g[0] >= 10]

    def has_run_of(self, n: int) -> bool:
        """A run of at least `n` digits. Most texts hold no ten digits within one stretch of digits and
        separators at all: one regex search answers for them without building the runs."""
        if self._max_digits is None:
            if n >= 10 and self._runs is None:
                if self._below_ten is None:
                    self._below_ten = _TEN_DIGITS.search(self.text) is None
                if self._below_ten:
                    return False
            self._max_digits = max((r.ndigits for r in self.runs), default=0)
        return self._max_digits >= n


def to_results(recognizer, hits) -> list:
    """Hits as Presidio RecognizerResults of `recognizer`, with how each was found."""
    from presidio_analyzer import RecognizerResult

    return [
        RecognizerResult(h.entity, h.start, h.end, h.score, recognition_metadata={
            RecognizerResult.RECOGNIZER_NAME_KEY: recognizer.name,
            RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: recognizer.id,
            RecognizerResult.IS_SCORE_ENHANCED_BY_CONTEXT_KEY: True,
            "method": h.method,
        })
        for h in hits
    ]


def word_shape(word: str) -> str | None:
    """"lower", "caps" or "title" (one capital, then lower case); None for mixed casing ("McDonald", "iPhone")."""
    if word.islower():
        return "lower"
    if word.isupper():
        return "caps"
    if word[:1].isupper() and word[1:].islower():
        return "title"
    return None
