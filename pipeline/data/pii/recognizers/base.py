"""The base of the identifier recognizers and what several of them share: the context words (context.json)
and their scoring, the digit groups of the shared digit runs, and the base of the checksum recognizers."""
from __future__ import annotations

import re
from typing import Iterable

from presidio_analyzer import LocalRecognizer

from pipeline.data.pii.text import ContextWords, Hit, TextContext, load_data, to_results

_CTX = load_data("context.json")
WIN_BEFORE = _CTX["window_before"]
WIN_AFTER = _CTX["window_after"]
NEG_WIN = _CTX["negative_window"]
NEGATIVE = ContextWords(_CTX["negative"])
_POSITIVE: dict[str, ContextWords] = {}
_OTHER_IDS = ContextWords([w for ent in ("TCKN", "VKN", "INN", "SNILS", "OGRN", "OGRNIP", "PASSPORT", "IBAN")
                           for w in _CTX["positive"][ent]])


def positive(entity: str) -> ContextWords:
    if entity not in _POSITIVE:
        _POSITIVE[entity] = ContextWords(_CTX["positive"].get(entity, []))
    return _POSITIVE[entity]


class PiiRecognizer(LocalRecognizer):
    """Base: subclasses set ENTITY and implement find(ctx) -> list[Hit]."""

    ENTITY = ""
    NEEDS = "any"  # prefilter class: "digits" (a run of >= MIN_DIGITS digits), "any" (always run)
    # every candidate holds a digit (\d): the fast path does not ask this recognizer about a text without one
    # (tests/data/test_pii_recognizers.py checks the flag against find() on digit-free texts)
    NEEDS_A_DIGIT = False
    MIN_DIGITS = 0
    AFTER = 0  # characters after a candidate searched for context words too ("34 ABC 123 plakalı")

    def __init__(self, language: str = "en"):
        super().__init__(supported_entities=[self.ENTITY], name=type(self).__name__,
                         supported_language=language)
        self.pos = positive(self.ENTITY)

    def load(self) -> None:  # nothing to load
        pass

    # -- the fast path calls these directly with a shared TextContext --
    def triggered(self, ctx: TextContext) -> bool:
        if self.NEEDS == "digits":
            return ctx.has_run_of(self.MIN_DIGITS)
        return True

    def find(self, ctx: TextContext) -> list[Hit]:
        raise NotImplementedError

    # -- Presidio API --
    def analyze(self, text, entities, nlp_artifacts=None):
        if entities and self.ENTITY not in entities and not set(entities) & set(self.supported_entities):
            return []
        return to_results(self, self.find(TextContext(text, self.supported_language)))

    # -- scoring --
    def context_score(self, ctx: TextContext, s: int, e: int, base: float, *, bonus: float = 0.3,
                      without: float | None = None, penalty: float = 0.35) -> float:
        """base (+bonus if a context word is near; `without` replaces base when none is; -penalty after a
        negative word such as 'order no')."""
        norm = ctx.norm
        lo = ctx.scope_start(s, WIN_BEFORE)
        pos_end = self.pos.last_end(norm, s, s - lo)
        neg_end = NEGATIVE.last_end(norm, s, min(NEG_WIN, s - lo))
        if neg_end > pos_end and not ctx.number_between(neg_end, s) and _labels_across_lines(norm, neg_end, s):
            # "kimlik no ... sipariş no 123": the nearer word decides
            score = (base if without is None else without) - penalty
        elif pos_end >= 0 and not ctx.number_between(pos_end, s):
            score = min(1.0, base + bonus)
        elif self.AFTER and self.pos.near(norm, s, e, 0, self.AFTER):
            score = min(1.0, base + bonus)
        else:
            score = base if without is None else without
        return round(max(0.0, score), 3)

    def near_other_ids(self, ctx: TextContext, s: int) -> bool:
        """A context word of another identifier (kimlik, ИНН, IBAN, паспорт...) right before `s`, in the
        same sentence, with no other number between."""
        end = _OTHER_IDS.last_end(ctx.norm, s, s - ctx.scope_start(s, 32))
        return end >= 0 and not ctx.number_between(end, s)

    def hit(self, s: int, e: int, score: float, method: str = "pattern") -> Hit:
        return Hit(s, e, self.ENTITY, score, method)


def _labels_across_lines(norm: str, word_end: int, s: int) -> bool:
    """A context word on an earlier line than the candidate at `s` belongs to it only as a label that ends its
    line ("Sipariş no:\n123..."), not inside a line of its own ("ORDER BY Name;" in code, "?no=TRK48213")."""
    k = norm.find("\n", word_end, s)
    if k < 0:
        return True
    rest = norm[word_end:k]
    return len(rest) <= 16 and not any(c.isdigit() or c in ";=?/(){}[]`" for c in rest)


def contiguous_groups(ctx: TextContext, length: int) -> Iterable[tuple[int, int]]:
    """Digit groups of exactly `length` digits (not inside an IBAN-like string)."""
    for run in ctx.runs:
        if run.ndigits < length:
            continue
        for g in run.groups:
            if g[1] - g[0] == length and not ctx.in_iban_like(g[0]):
                yield g


def digit_windows(ctx: TextContext, lo: int, hi: int, seps: str | None = None):
    """Consecutive digit groups of a run with lo..hi digits in total, longest first from each start.
    Yields (run, i, j, start, end, digits); `seps` restricts the characters allowed between groups."""
    text = ctx.text
    for run in ctx.runs:
        if run.ndigits < lo:
            continue
        groups = run.groups
        first = 0
        if ctx.in_iban_like(run.start):
            # the IBAN's digits are no candidate, the groups after its end are ("TR33 ... 26 4111 1111 ...")
            while first < len(groups) and ctx.in_iban_like(groups[first][0]):
                first += 1
            if sum(b - a for a, b in groups[first:]) < lo:
                continue
        n = len(groups)
        digits = "".join(text[a:b] for a, b in groups)
        offsets = [0]  # where each group's digits start in `digits`
        for a, b in groups:
            offsets.append(offsets[-1] + b - a)
        for i in range(first, n):
            best = []
            for j in range(i, n):
                if j > i and seps is not None:
                    sep = text[groups[j - 1][1]:groups[j][0]]
                    if len(sep) != 1 or sep not in seps:
                        break
                total = offsets[j + 1] - offsets[i]
                if total > hi:
                    break
                if total >= lo:
                    best.append(j)
            for j in reversed(best):
                yield run, i, j, groups[i][0], groups[j][1], digits[offsets[i]:offsets[j + 1]]


CYRILLIC = re.compile(r"[А-Яа-яЁё]")  # a Cyrillic letter: Russian text (passports, addresses), a plate's letters


class DigitChecksumRecognizer(PiiRecognizer):
    """N digits in a row that pass a checksum; a base score per length, raised by context words. Weak
    checksums (one check digit: 1 in 10 random numbers pass) get a low base and need context."""

    NEEDS = "digits"
    NEEDS_A_DIGIT = True
    FORMS: tuple[tuple[int, float], ...] = ()  # (digits, base score), in the order they are tried
    BONUS = 0.6
    valid = staticmethod(lambda digits: False)

    def find(self, ctx):
        out = []
        for length, base in self.FORMS:
            for s, e in contiguous_groups(ctx, length):
                if self.valid(ctx.text[s:e]):
                    out.append(self.hit(s, e, self.context_score(ctx, s, e, base, bonus=self.BONUS)))
        return out
