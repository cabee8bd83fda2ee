"""Presidio recognizers for Turkish, Russian and English personal data.

Every recognizer is a Presidio LocalRecognizer (usable in an AnalyzerEngine registry) whose work is in
`find(ctx)`: candidates from a regular expression or from the shared digit runs, a checksum or format
check, then a score from context words. Scores:
  * checksum-valid identifiers: 0.75-0.85 alone, up to 1.0 with a context word;
  * identifiers whose checksum passes by chance too often (10-digit VKN/INN, OGRN) or that have none
    (passports, dates of birth): below the default threshold (0.5) unless a context word is near;
  * words that announce another kind of number (order, invoice, tracking...) just before a candidate lower it.
Built-in Presidio recognizers are not loaded: see DISABLED_BUILTINS for why.
"""
from __future__ import annotations

import re
from typing import Iterable

from presidio_analyzer import LocalRecognizer

from pipeline.data.pii import checks
from pipeline.data.pii.text import (  # noqa: F401
    ENTITY_TYPES,
    NON_WORD,
    ContextWords,
    Hit,
    TextContext,
    fold,
    load_data,
    presence_pattern,
    to_results,
)

# The built-in recognizers are replaced, not loaded: on this data they misfire or cannot see tr/ru text.
# Ours have other class names: Presidio's loader (load_predefined_recognizers) finds a recognizer class by
# its name among all subclasses, so a shared name would break a stock registry built in the same process.
DISABLED_BUILTINS = {
    "MedicalLicenseRecognizer": "matched the bank code inside IBANs (TR3300061...)",
    "UsLicenseRecognizer": "US_DRIVER_LICENSE matches plain words",
    "NhsRecognizer": "UK_NHS fired on phone numbers at score 1.0",
    "UsBankRecognizer": "any 8-17 digit number",
    "UsItinRecognizer": "US only; overlaps TCKN/SNILS digits",
    "UsPassportRecognizer": "9 digits without context; replaced by PassportRecognizer",
    "UsSsnRecognizer": "replaced by SsnRecognizer: invalid areas (000, 666, 9xx) out, bare nine digits need context",
    "PhoneRecognizer": "default regions have no TR/RU; slowest recognizer; replaced by PhoneNumberRecognizer",
    "EmailRecognizer": "tldextract tries the network; replaced by EmailAddressRecognizer",
    "IbanRecognizer": "replaced by IbanMod97Recognizer: spaced TR IBANs, trims trailing words",
    "CreditCardRecognizer": "not loaded for tr/ru; replaced by PaymentCardRecognizer: issuer prefixes, "
                            "negative context",
    "IpRecognizer": "replaced by IpAddressRecognizer: a version word lowers an IPv4-shaped number",
    "TrNationalIdRecognizer": "disabled by default; replaced with context-aware TcknRecognizer",
    "TrLicensePlateRecognizer": "allows 2-4 digits only, missed '06 A 12345'",
    "DateRecognizer": "every date; only dates of birth are personal data here",
    "UrlRecognizer": "URLs are not personal data by themselves; credentials in URLs are SECRET",
    "SpacyRecognizer": "no NER model can be downloaded; names come from natasha and the gazetteer",
}

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


def _group_text(ctx: TextContext, g) -> str:
    return ctx.text[g[0]:g[1]]


def _contiguous(ctx: TextContext, length: int) -> Iterable[tuple[int, int]]:
    """Digit groups of exactly `length` digits (not inside an IBAN-like string)."""
    for run in ctx.runs:
        if run.ndigits < length:
            continue
        for g in run.groups:
            if g[1] - g[0] == length and not ctx.in_iban_like(g[0]):
                yield g


def _windows(ctx: TextContext, lo: int, hi: int, seps: str | None = None):
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


# ---------------------------------------------------------------- identifiers with checksums

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
            for s, e in _contiguous(ctx, length):
                if self.valid(ctx.text[s:e]):
                    out.append(self.hit(s, e, self.context_score(ctx, s, e, base, bonus=self.BONUS)))
        return out


class TcknRecognizer(DigitChecksumRecognizer):
    """T.C. Kimlik No: 11 digits, two check digits; written in groups ("123 456 789 01", "273.846.195.50")
    only with a context word (kimlik, TC) before it, except in its own 3-3-3-2 grouping (no IP address);
    glued to a word before it ("TC27384619550", "musteri_27384619550.pdf") it is found as well."""

    ENTITY, MIN_DIGITS, FORMS, BONUS = "TCKN", 11, ((11, 0.8),), 0.2
    valid = staticmethod(checks.tckn_valid)

    def triggered(self, ctx):
        return ctx.has_run_of(11) or bool(ctx.glued)

    def find(self, ctx):
        out = super().find(ctx) if ctx.has_run_of(11) else []
        text = ctx.text
        for _run, i, j, s, e, d in _windows(ctx, 11, 11, seps=" \u00a0."):
            if j <= i or not checks.tckn_valid(d):
                continue
            seps = {text[a:b] for (_, a), (b, _) in zip(_run.groups[i:j], _run.groups[i + 1:j + 1])}
            if "." in seps and seps != {"."}:
                continue
            # the 3-3-3-2 grouping is the TCKN's own (an IPv4 address aside): found without a context word too
            own = tuple(b - a for a, b in _run.groups[i:j + 1]) == (3, 3, 3, 2) and not checks.ip_valid(text[s:e])
            out.append(self.hit(s, e, self.context_score(ctx, s, e, 0.3, bonus=0.6, without=0.6 if own else None)))
        for s, e in ctx.glued:
            # glued to a word before it, not after it (a run of digits inside a token or a hash is no id)
            if e - s == 11 and not (e < len(text) and (text[e].isalnum() or text[e] == "_")) \
                    and not ctx.in_iban_like(s) and checks.tckn_valid(text[s:e]):
                out.append(self.hit(s, e, self.context_score(ctx, s, e, 0.6, bonus=0.3)))
        return out


class VknRecognizer(DigitChecksumRecognizer):
    """Vergi Kimlik No: 10 digits, one check digit: needs context."""

    ENTITY, MIN_DIGITS, FORMS = "VKN", 10, ((10, 0.35),)
    valid = staticmethod(checks.vkn_valid)


class InnRecognizer(DigitChecksumRecognizer):
    """Russian INN: 12 digits (person, two check digits) or 10 (organisation, one: needs context)."""

    ENTITY, MIN_DIGITS, FORMS = "INN", 10, ((12, 0.55), (10, 0.35))
    valid = staticmethod(checks.inn_valid)


class SnilsRecognizer(PiiRecognizer):
    """SNILS: NNN-NNN-NNN NN (distinctive) or 11 digits in a row (context or Russian text)."""

    ENTITY = "SNILS"
    NEEDS_A_DIGIT = True
    NEEDS, MIN_DIGITS = "digits", 11
    _FORMATTED = re.compile(r"\d(?<![\d-]\d)\d{2}-\d{3}-\d{3}[ \u00a0-]\d{2}(?![\d-])")  # first a class: text._NUMSPAN

    def find(self, ctx):
        out = []
        text = ctx.text
        for m in self._FORMATTED.finditer(text):
            s, e = m.span()
            if checks.snils_valid(text[s:e]):
                out.append(self.hit(s, e, self.context_score(ctx, s, e, 0.85, bonus=0.15)))
        for s, e in _contiguous(ctx, 11):
            if checks.snils_valid(text[s:e]):
                base = 0.5 if ctx.lang == "ru" else 0.4
                out.append(self.hit(s, e, self.context_score(ctx, s, e, base, bonus=0.5)))
        return out


class OgrnRecognizer(PiiRecognizer):
    """OGRN (13 digits) and OGRNIP (15 digits, first digit 3) with their own mod 11 / mod 13 checks."""

    ENTITY = "OGRN"
    NEEDS_A_DIGIT = True
    NEEDS, MIN_DIGITS = "digits", 13
    _IP = positive("OGRNIP")

    def __init__(self, language="en"):
        super().__init__(language)
        self.supported_entities = ["OGRN", "OGRNIP"]

    def find(self, ctx):
        out = []
        text = ctx.text
        for s, e in _contiguous(ctx, 13):
            if checks.ogrn_valid(text[s:e]):
                out.append(self.hit(s, e, self.context_score(ctx, s, e, 0.4, bonus=0.55)))
        for s, e in _contiguous(ctx, 15):
            if checks.ogrnip_valid(text[s:e]):
                near = self._IP.near(ctx.norm, s, e, WIN_BEFORE, WIN_AFTER) or \
                    self.pos.near(ctx.norm, s, e, WIN_BEFORE, WIN_AFTER)
                score = 0.95 if near else self.context_score(ctx, s, e, 0.45)
                out.append(Hit(s, e, "OGRNIP", score, "pattern"))
        return out


class PaymentCardRecognizer(PiiRecognizer):
    """Payment cards: 13-19 digits in groups (space or dash, also wide: "4111  1111  1111  1111", tabs, " - ")
    or in a row; issuer prefix and Luhn."""

    ENTITY = "CREDIT_CARD"
    NEEDS_A_DIGIT = True
    NEEDS, MIN_DIGITS = "digits", 13
    # groups with wider separators than a digit run allows (two or more spaces, a tab, a spaced dash)
    _WIDE = re.compile(r"(?<!\d)\d{3,6}(?:(?:\t|[ \u00a0\t]{2,4}|[ \u00a0\t]*-[ \u00a0\t]*)\d{3,6}){1,5}(?!\d)")
    _WIDE_HINTS = ("  ", "\t", " -", "- ")
    # negative words that name a document, not a code as long as a card (tracking numbers and barcodes have
    # 12-14 digits and pass Luhn one time in ten): a Luhn-valid number with its issuer's prefix and length
    # after them stays a card ("Payment reference 4111 ...", "Invoice number: 5555 ..."), scored lower
    _DOCUMENT_WORDS = ContextWords([
        "ref", "referans", "reference", "invoice", "fatura", "order", "sipariş", "siparis", "заказ", "счет-фактур",
        "счёт №", "счет №", "ticket", "talep", "заявк", "обращени", "case", "başvuru", "dosya", "kayıt no",
        "protokol"])

    def _wide(self, ctx) -> bool:
        return ctx.memo("card_wide", lambda: any(h in ctx.text for h in self._WIDE_HINTS)
                        and self._WIDE.search(ctx.text) is not None)

    def triggered(self, ctx):
        return ctx.has_run_of(13) or self._wide(ctx)

    def _score(self, ctx, s, e, base):
        penalty = 0.4
        lo = ctx.scope_start(s, WIN_BEFORE)
        neg_end = NEGATIVE.last_end(ctx.norm, s, min(NEG_WIN, s - lo))
        if neg_end >= 0 and self._DOCUMENT_WORDS.last_end(ctx.norm, s, min(NEG_WIN, s - lo)) == neg_end:
            penalty = 0.2
        return self.context_score(ctx, s, e, base, bonus=0.15, penalty=penalty)

    def find(self, ctx):
        out = []
        taken_end = -1
        for run, i, j, s, e, d in _windows(ctx, 13, 19, seps=" -\u00a0"):
            if s < taken_end:
                continue
            if checks.card_prefix_ok(d) and checks.luhn_valid(d) and len(set(d)) >= 2:
                base = 0.85 if j > i else 0.75
                out.append(self.hit(s, e, self._score(ctx, s, e, base)))
                taken_end = e
        if self._wide(ctx):
            self._find_wide(ctx, out)
        return out

    def _find_wide(self, ctx, out) -> None:
        text = ctx.text
        for m in self._WIDE.finditer(text):
            groups = [g.span() for g in _DIGITS.finditer(text, m.start(), m.end())]
            taken_end = -1
            for i in range(len(groups)):
                if groups[i][0] < taken_end or ctx.in_iban_like(groups[i][0]):
                    continue
                total = 0
                for j in range(i, len(groups)):
                    total += groups[j][1] - groups[j][0]
                    if total > 19:
                        break
                    if total < 13:
                        continue
                    s, e = groups[i][0], groups[j][1]
                    d = "".join(text[a:b] for a, b in groups[i:j + 1])
                    if any(h.start < e and s < h.end for h in out):
                        continue
                    if checks.card_prefix_ok(d) and checks.luhn_valid(d) and len(set(d)) >= 2:
                        out.append(self.hit(s, e, self._score(ctx, s, e, 0.85)))
                        taken_end = e
                        break


_HOME_REGIONS = {"tr": ("TR",), "ru": ("RU", "KZ"), "en": ("US", "CA", "GB")}
_HOME_CODES = {"tr": ("90",), "ru": ("7",), "en": ("1", "44")}  # their country calling codes


# hh:mm after a digit group, or hh: before one ("14:00 2024-03-05"): the group is part of a date and time
_TIME_AFTER = re.compile(r":\d\d?(?!\d)")


def _time_before(text: str, start: int) -> bool:
    return start >= 3 and text[start - 1] == " " and text[start - 2].isdigit() and \
        re.match(r"\d{1,2}:\d\d", text[max(0, start - 6):start - 1][-5:]) is not None


def _dotted_nanp(groups) -> bool:
    """Three groups of 3, 3 and 4 digits: a North American number written with dots, no date's shape."""
    return tuple(b - a for a, b in groups) == (3, 3, 4)


def _area_slash(text: str, groups) -> bool:
    """An area code with its trunk 0, a slash and the number, as Germans write it: "0151/57390093", "030/1234567"
    (no date or fraction has ten digits or more in two groups)."""
    return len(groups) == 2 and text[groups[0][0]] == "0" and 3 <= groups[0][1] - groups[0][0] <= 5


class PhoneNumberRecognizer(PiiRecognizer):
    """Phones validated by `phonenumbers`: international (+/00, any country), TR (0 5xx ..., 0 2xx ...),
    RU (8 9xx ..., 8 4xx ...), US/GB. Unformatted 10-11 digit numbers score lower."""

    ENTITY = "PHONE"
    NEEDS_A_DIGIT = True
    NEEDS, MIN_DIGITS = "digits", 10

    def find(self, ctx):
        out = []
        text = ctx.text
        taken_end = -1
        for run, i, j, s, e, d in _windows(ctx, 10, 15):
            if s < taken_end:
                continue
            plus = run.plus and i == 0
            bare_country = False
            if not plus and len(d) > 11 and not d.startswith("0"):
                # a national number has at most 11 digits with its trunk prefix; longer, it may be an international
                # one without its "+" (905321234567, as WhatsApp exports write them) from this language's country
                if not d.startswith(_HOME_CODES.get(ctx.lang, ())):
                    continue
                bare_country = True
            if plus:
                s = run.start
            elif i == 0 and text[run.start] == "(":
                s = run.start
            seps = {text[run.groups[k][1]:run.groups[k + 1][0]] for k in range(i, j)}
            if j - i == 3 and seps == {"."} and all(b - a <= 3 for a, b in run.groups[i:j + 1]):
                continue  # an IPv4 address
            if seps == {"/"} and not _area_slash(text, run.groups[i:j + 1]) \
                    or seps == {"."} and j - i == 2 and not _dotted_nanp(run.groups[i:j + 1]):
                continue  # a date or a fraction; not 305.880.5327 or 0151/57390093
            if "/" in seps and "." in seps:
                continue  # a decimal number next to a date ("70.8750 11/25/2013"): no phone mixes the two
            if _TIME_AFTER.match(text, run.groups[j][1]) or _time_before(text, run.groups[i][0]):
                continue  # a timestamp's digits ("2024-03-05 14:00:00"): a group that is the hour of a time
            candidate = ("+" if plus or bare_country else "") + d
            if not plus and d.startswith("00"):
                candidate = d
            region = checks.phone_region(candidate, ctx.lang)
            if region is None:
                continue
            home = region in _HOME_REGIONS.get(ctx.lang, ())
            if bare_country and not home:
                continue  # a country code without its "+" is read only as this language's country
            # the full national form: with its trunk prefix (0 5xx..., 8 9xx...), or NANP's ten digits
            trunk = d[0] in "08" or (len(d) == 11 and d[0] in "17") or (region in ("US", "CA") and len(d) == 10)
            if plus or d.startswith("00"):
                base = 0.9
            elif bare_country:
                base = 0.5 if j == i else 0.75
            elif j > i:  # written in groups
                base = 0.75 if home else 0.55
            elif home and trunk:  # 0532..., 8916...: a national number with its trunk prefix
                base = 0.55
            else:  # ten bare digits, or another country's national format
                base = 0.4
            if self.near_other_ids(ctx, s) and not self.pos.near(ctx.norm, s, e, 24):
                base -= 0.3
            out.append(self.hit(s, e, self.context_score(ctx, s, e, base, bonus=0.3, penalty=0.4)))
            taken_end = e
        return out


class IbanMod97Recognizer(PiiRecognizer):
    """IBAN, spaced or not, mod 97 and country length (python-stdnum); trailing words are trimmed off."""

    ENTITY = "IBAN"
    NEEDS_A_DIGIT = True
    # typed in lower or mixed case ("iban tr33 0006 ..."): text.py's iban_like takes capitals only, since its
    # spans also keep digits from being read as phones or cards
    _LOWER = re.compile(r"(?<![A-Za-z0-9])(?:[a-z][A-Za-z]|[A-Z][a-z])\d{2}(?:[ \u00a0-]?[A-Za-z0-9]){10,32}")
    _LOWER_HINT = re.compile(r"\d\d(?<=[a-z]\d\d)")  # its necessary part, 3x cheaper to search for

    def triggered(self, ctx):
        # what find() reads from: an IBAN-shaped span in capitals, or the lower-case form's necessary part
        return bool(ctx.iban_like) or self._LOWER_HINT.search(ctx.text) is not None

    def find(self, ctx):
        out = [self.hit(s, e, 1.0) for s, e in ctx.ibans]  # in capitals: checked once, in text.py
        text = ctx.text
        if self._LOWER_HINT.search(text) and (ctx.has_run_of(10) or "iban" in ctx.words):
            for m in self._LOWER.finditer(text):  # spaced groups, or glued after "iban"
                end = checks.iban_end(text, m.start(), m.end())
                if end is not None:
                    out.append(self.hit(m.start(), end, 1.0))
        return out


class EmailAddressRecognizer(PiiRecognizer):
    ENTITY = "EMAIL"
    _RE = re.compile(r"(?<![\w.+%-])[\w.+%-]{1,64}@(?:[^\W_](?:[\w-]{0,61}[^\W_])?\.)+[^\W\d_]{2,24}(?![\w-])")
    # written to dodge scrapers: "ali.veli [at] example [dot] com", "ivan(собака)mail(точка)ru"; the bracketed
    # forms only ("at" and "dot" as plain words are prose)
    _BRACKETED_AT = r"[\[({<]\s?(?:at|собака)\s?[\])}>]"
    _AT = r"\s?" + _BRACKETED_AT + r"\s?"
    _DOT = r"(?:\s?[\[({<]\s?(?:dot|nokta|точка)\s?[\])}>]\s?|\.)"
    _AT_HINT = re.compile(_BRACKETED_AT)  # searched in the folded text: the pattern's necessary part
    _OBFUSCATED = re.compile(r"(?<![\w.+%-])[\w.+%-]{1,64}" + _AT + r"(?:[^\W_](?:[\w-]{0,61}[^\W_])?" + _DOT
                             + r")+[^\W\d_]{2,24}(?![\w-])", re.IGNORECASE)

    # spelled out with plain words ("name at example dot org"): only with a dot word before a common top-level
    # domain, and not after a word that "at" follows in prose ("visit us at example dot com" is a site)
    _SPELLED_DOT = r"\s+(?:dot|nokta|точка)\s+"
    _TLDS = ("com|org|net|edu|gov|info|biz|io|co|me|ru|tr|su|uk|de|fr|it|es|nl|az|kz|by|ua|eu|us|ca|au|ch|at|se|"
             "dk|fi|no|pl|cz|pro|dev|app|mail|online|site|xyz|рф")
    _SPELLED = re.compile(
        r"(?<![\w.+%-])([\w+%-]{1,64}(?:(?:\.|" + _SPELLED_DOT + r")[\w+%-]{1,64}){0,3})\s+(?:at|собака)\s+"
        r"(?:[^\W_][\w-]{0,62}" + _SPELLED_DOT + r"){1,3}(?:" + _TLDS + r")(?![\w-])", re.IGNORECASE)
    _SPELLED_HINTS = (" dot ", " nokta ", " точка ")
    _PROSE_BEFORE_AT = frozenset("""us me you him her them it we they this that here there who one all is are was were
        be been look looking looked arrive arrived arriving stay stayed work works worked working live lives lived
        meet met home available located online found visit visited find found reach reached call email write
        mail contact up out back held based service sale good bad best""".split())

    def _bracketed(self, ctx) -> bool:
        """A bracketed "at" in the text (one scan for triggered() and find())."""
        return ctx.memo("email_bracketed_at", lambda: self._AT_HINT.search(ctx.norm) is not None)

    def _spelled(self, ctx) -> bool:
        """A spelled-out dot in the text (one scan for triggered() and find())."""
        return ctx.memo("email_spelled_dot", lambda: any(h in ctx.norm for h in self._SPELLED_HINTS))

    def triggered(self, ctx):
        return "@" in ctx.text or self._bracketed(ctx) or self._spelled(ctx)

    def find(self, ctx):
        text = ctx.text
        out = [self.hit(m.start(), m.end(), 0.9) for m in self._OBFUSCATED.finditer(text)] \
            if self._bracketed(ctx) else []
        if self._spelled(ctx):
            for m in self._SPELLED.finditer(text):
                local = m.group(1)
                if fold(local) in self._PROSE_BEFORE_AT or any(h.start < m.end() and m.start() < h.end for h in out):
                    continue
                out.append(self.hit(m.start(), m.end(), 0.8))
        if "@" not in text:
            return out
        for m in self._RE.finditer(text):
            s = m.start()
            pre = text[max(0, s - 80):s]
            k = pre.rfind("://")
            if k >= 0 and not any(ch.isspace() or ch == "/" for ch in pre[k + 3:]):
                continue  # "scheme://user:password@host": credentials (SECRET), not an address
            out.append(self.hit(s, m.end(), 1.0))
        return out


class IpAddressRecognizer(PiiRecognizer):
    ENTITY = "IP_ADDRESS"
    _V4 = re.compile(r"\d(?<![\w.]\d)\d{0,2}\.(?:\d{1,3}\.){2}\d{1,3}(?![\w]|\.\d)")  # first a class: text._NUMSPAN
    _V6 = re.compile(r"(?<![\w:.])(?=[0-9A-Fa-f:.]*::|(?:[0-9A-Fa-f]{1,4}:){3})[0-9A-Fa-f:.]{4,45}(?![\w:])")
    _VERSION = ContextWords(["version", "sürüm", "versiyon", "версия", "ver", "v", "build", "release", "oid"])

    def triggered(self, ctx):
        # IPv6: two colons; IPv4: a digit run of four groups, the first two joined by a dot
        if ctx.text.count(":") >= 2:
            return True
        return _DIGIT_DOT_DIGIT.search(ctx.text) is not None and \
            any(len(r.groups) >= 4 and ctx.text[r.groups[0][1]] == "." for r in ctx.runs)

    def find(self, ctx):
        import ipaddress

        out = []
        text = ctx.text
        for m in self._V4.finditer(text):
            s, e = m.span()
            value = text[s:e]
            if not checks.ip_valid(value):
                continue
            addr = ipaddress.ip_address(value)
            if addr.is_loopback or addr.is_unspecified or addr.is_multicast or value.startswith("255."):
                base = 0.2
            else:
                base = 0.65
            if self._VERSION.near(ctx.norm, s, e, 12):
                base -= 0.45
            out.append(self.hit(s, e, self.context_score(ctx, s, e, base, bonus=0.3)))
        if ":" in text:
            for m in self._V6.finditer(text):
                s, e = m.span()
                value = text[s:e].rstrip(".")
                e = s + len(value)
                if checks.ip_valid(value):
                    addr = ipaddress.ip_address(value)
                    base = 0.2 if addr.is_loopback or addr.is_unspecified else 0.8
                    out.append(self.hit(s, e, self.context_score(ctx, s, e, base, bonus=0.2)))
        return out


# ---------------------------------------------------------------- format + context

_DIGIT_DOT_DIGIT = re.compile(r"\d\.\d")
_DIGIT = re.compile(r"\d")
_DIGITS = re.compile(r"\d+")
_CYRILLIC = re.compile(r"[А-Яа-яЁё]")
# two digits (a closing parenthesis, one separator) and a character: a capital there, or a lower-case letter
# in a text that talks about a plate, is a necessary condition. The character is looked at, not consumed:
# "30 71 ST" must also try "71"
_TWO_DIGITS_LETTER = re.compile(r"\d\d\)?(?=[ \u00a0-]?(\S))")


class PassportRecognizer(PiiRecognizer):
    """Passports: RU internal (series 4 digits + number 6: '45 08 123456', '4508 123456'), RU foreign
    ('75 1234567'), TR and others (a letter + 7-8 digits: 'U12345678'). No checksum outside the MRZ,
    so a context word (passport, паспорт, pasaport, серия) is required to pass the default threshold."""

    ENTITY = "PASSPORT"
    NEEDS_A_DIGIT = True
    _RU = re.compile(r"(?<![\d\w])(?:\d{2}[ \u00a0]?\d{2}"
                     r"(?:[ \u00a0№#]{1,3}|[ \u00a0]+(?i:номер|ном\.|no\.?)[ \u00a0]*)\d{6}"
                     r"|\d{2}[ \u00a0]\d{7}|\d{10}|\d{9})(?![\d\w])")
    _LATIN = re.compile(r"(?<![\w])[A-Z]{1,2}[ \u00a0]?\d{7,8}(?![\w])")
    AFTER = 24  # "45 10 123456 выдан ОВД ..."
    # the internal passport's own groupings, series then number: "45 10 123456" and "4510 123456"; in Russian
    # text they are a passport without a context word too (other numbers are not grouped so)
    _RU_OWN = re.compile(r"\d\d[ \u00a0]\d\d[ \u00a0]\d{6}|\d{4}[ \u00a0]\d{6}")
    _OWN_BASE = {3: 0.6, 2: 0.5}  # by the number of groups

    def _russian(self, ctx) -> bool:
        return ctx.lang == "ru" or _CYRILLIC.search(ctx.text) is not None

    def triggered(self, ctx):
        return self.pos.search(ctx.norm) or (self._russian(ctx) and self._RU_OWN.search(ctx.text) is not None)

    def find(self, ctx):
        out = []
        text = ctx.text
        russian = self._russian(ctx)
        for rx, spaced_base in ((self._RU, 0.3), (self._LATIN, 0.3)):
            for m in rx.finditer(text):
                s, e = m.span()
                value = text[s:e]
                if len(set(checks.digits(value))) < 3:
                    continue
                contiguous = value.isdigit()
                base = 0.15 if contiguous else spaced_base
                if russian and rx is self._RU and self._RU_OWN.fullmatch(value):
                    base = self._OWN_BASE[len(value.split())]
                score = self.context_score(ctx, s, e, base, bonus=0.6 if not contiguous else 0.7)
                out.append(self.hit(s, e, score))
        return out


class SsnRecognizer(PiiRecognizer):
    """US Social Security numbers (English text is often American): area 001-899 except 666, group 01-99,
    serial 0001-9999; no check digit. Written 123-45-6789 it stands at the threshold; spaced or bare (nine
    digits are also phone parts, order numbers, RU passports) it needs a context word (SSN, social security)."""

    ENTITY = "SSN"
    NEEDS_A_DIGIT = True
    # starts with a digit (the regex engine skips to digits), the word-start look-behind right after it
    _RE = re.compile(r"(\d(?<![\w-]\d)\d{2})([- \u00a0]?)(\d{2})\2(\d{4})(?![\w-])")
    _BASE = {"-": 0.5, "": 0.1}

    def triggered(self, ctx):
        return self._RE.search(ctx.text) is not None

    def find(self, ctx):
        out = []
        for m in self._RE.finditer(ctx.text):
            area, group, serial = int(m.group(1)), int(m.group(3)), int(m.group(4))
            if not (0 < area < 900 and area != 666 and group and serial):
                continue
            base = self._BASE.get(m.group(2), 0.3)
            out.append(self.hit(m.start(), m.end(), self.context_score(ctx, m.start(), m.end(), base, bonus=0.45)))
        return out


class LicensePlateRecognizer(PiiRecognizer):
    """Turkish plates, every current format: province 01-81, then 1 letter + 4-5 digits, 2 letters + 3-4
    digits, or 3 letters + 2-3 digits ('06 A 12345', '34 AB 1234', '35 ABC 12'); Ç Ğ İ Ö Ş Ü Q W X unused."""

    ENTITY = "LICENSE_PLATE"
    NEEDS_A_DIGIT = True
    AFTER = 16
    # the province 01-81 not after a word character, written to start with a class (text._NUMSPAN): its first
    # digit, the look-behind, then the second digit that this first one admits
    _RE = re.compile(r"([0-8](?<!\w[0-8])(?:(?<=0)[1-9]|(?<=[1-7])\d|(?<=8)[01]))"
                     r"([ \u00a0-]?)([A-PR-VYZ]{1,3})([ \u00a0-]?)(\d{2,5})(?![\w])")
    _UNITS = {"TL", "KG", "GB", "MB", "KB", "TB", "KM", "CM", "MM", "ML", "GR", "HZ", "KW", "MW", "USD", "EUR",
              "TRY", "RUB", "GBP", "AM", "PM", "AH", "MAH", "SOK", "CAD", "NO", "TEL", "KAT", "DK", "SN", "YIL",
              "AY", "GUN", "LT", "MG", "KCAL", "MP", "FPS", "HP", "CC", "GHZ", "MHZ", "DPI", "PPM"}

    # typed in lower or mixed case ("plakam 34 abc 123"): a plate only where a plate is talked about
    _ANY_CASE = re.compile(_RE.pattern, re.IGNORECASE)

    def triggered(self, ctx):
        # a two-digit run followed by a capital letter ("34 ABC 123", "34ABC123")
        text = ctx.text
        followers = [m.group(1) for m in _TWO_DIGITS_LETTER.finditer(text)]
        # no two digits followed by a capital at all: the runs need not be built
        if any(c.isupper() for c in followers):
            # any two-digit group of a run, also the last of a longer one ("... 62 30 71 ST 6228")
            for r in ctx.runs:
                for a, b in r.groups:
                    if b - a == 2 and text[b:b + 2].lstrip(" \u00a0-")[:1].isupper():
                        return True
        # typed in lower case: only in a text that talks about a plate
        return any(c.islower() for c in followers) and self._plate_talk(ctx)

    def _plate_talk(self, ctx) -> bool:
        """A plate context word anywhere in the text (one scan for triggered() and find())."""
        return ctx.memo("plate_talk", lambda: self.pos.search(ctx.norm) is not None)

    def find(self, ctx):
        out = []
        matches = list(self._RE.finditer(ctx.text))
        if self._plate_talk(ctx):
            matches += [m for m in self._ANY_CASE.finditer(ctx.text) if not m.group(3).isupper()
                        and self.pos.near(ctx.norm, m.start(), m.end(), WIN_BEFORE, self.AFTER)]
        for m in matches:
            letters, num = m.group(3).upper(), m.group(5)
            if letters in self._UNITS and not self.pos.near(ctx.norm, m.start(), m.end(), WIN_BEFORE, self.AFTER):
                continue  # "65 TL 9988" is a plate only where a plate is talked about
            nl, nd = len(letters), len(num)
            if not ((nl == 1 and nd in (4, 5)) or (nl == 2 and nd in (3, 4)) or (nl == 3 and nd in (2, 3))):
                continue
            s, e = m.span()
            spaced = bool(m.group(2)) and bool(m.group(4))
            base = 0.6 if spaced else 0.4
            out.append(self.hit(s, e, self.context_score(ctx, s, e, base, bonus=0.35)))
        return out


# the twelve letters Russian plates use (those that look alike in Latin script), as typed in either script
_RU_PLATE_LETTERS = "АВЕКМНОРСТУХABEKMHOPCTYX"


class RuLicensePlateRecognizer(PiiRecognizer):
    """Russian plates: a letter, three digits, two letters and the region (2 or 3 digits, optionally RUS):
    "К334НТ 177", "А123ВС77", "а 123 вс 77". In Cyrillic letters the shape is distinctive; in Latin look-alikes
    ("A123BC77", a part number as much as a plate) or in lower case it needs a plate word (госномер, номер
    машины, plate)."""

    ENTITY = "LICENSE_PLATE"
    NEEDS_A_DIGIT = True
    AFTER = 16
    _RE = re.compile(rf"(?<![\w])([{_RU_PLATE_LETTERS}])[ \u00a0]?(\d{{3}})[ \u00a0]?([{_RU_PLATE_LETTERS}]{{2}})"
                     rf"[ \u00a0]?(\d{{2}}|[1-9]\d{{2}})(?:[ \u00a0]?(?:RUS|rus))?(?![\w])", re.IGNORECASE)
    _HINT = re.compile(r"\d{3}[ \u00a0]?[^\W\d_]{2}[ \u00a0]?\d\d")  # its necessary part

    def __init__(self, language="en"):
        super().__init__(language)
        self.pos = positive("LICENSE_PLATE")

    def triggered(self, ctx):
        return self._HINT.search(ctx.text) is not None

    def find(self, ctx):
        out = []
        for m in self._RE.finditer(ctx.text):
            if m.group(2) == "000":
                continue
            letters = m.group(1) + m.group(3)
            cyrillic = _CYRILLIC.search(letters) is not None
            latin = any("A" <= c <= "Z" or "a" <= c <= "z" for c in letters)
            if cyrillic and latin:
                continue  # mixed scripts: no plate is typed so
            s, e = m.span()
            base = 0.75 if cyrillic and letters.isupper() else 0.35
            out.append(self.hit(s, e, self.context_score(ctx, s, e, base, bonus=0.5)))
        return out


_TR_MONTHS = "ocak|şubat|subat|mart|nisan|mayıs|mayis|haziran|temmuz|ağustos|agustos|eylül|eylul|ekim|kasım|kasim|aralık|aralik"
_RU_MONTHS = "января|февраля|марта|апреля|мая|июня|июля|августа|сентября|октября|ноября|декабря"
_EN_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|december|"
              "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_YEAR = r"(?:19\d{2}|20[0-2]\d)"


class DateOfBirthRecognizer(PiiRecognizer):
    """Dates (numeric, ISO, or with the month written in tr/ru/en) that a birth word stands next to."""

    ENTITY = "DATE_OF_BIRTH"
    NEEDS_A_DIGIT = True
    _RE = re.compile(
        r"(?<![\w.])(?:"
        r"(?:0?[1-9]|[12]\d|3[01])[./-](?:0?[1-9]|1[0-2])[./-]" + _YEAR +
        r"|" + _YEAR + r"-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"
        r"|(?:0?[1-9]|1[0-2])/(?:0?[1-9]|[12]\d|3[01])/" + _YEAR +
        r"|(?:0?[1-9]|[12]\d|3[01])(?:st|nd|rd|th)?\s+(?:" + _TR_MONTHS + "|" + _RU_MONTHS + "|" + _EN_MONTHS +
        r")\.?,?\s+" + _YEAR + r"(?:\s*(?:г\.|года|г(?![\w])))?"
        r"|(?:" + _EN_MONTHS + r")\.?\s+(?:0?[1-9]|[12]\d|3[01])(?:st|nd|rd|th)?,?\s+" + _YEAR +
        r")(?![\w])", re.IGNORECASE)

    def triggered(self, ctx):
        return self.pos.search(ctx.norm)

    def find(self, ctx):
        out = []
        spans = [m.span() for m in self._RE.finditer(ctx.text)]
        for k, (s, e) in enumerate(spans):
            # the birth word in the date's own sentence ("born on 08/15/1948. Delivery on 16/09/2025."), and
            # after it only in its own clause ("15.03.1980 doğumlu"; not "Delivery on 16/09/2025, born on ...")
            tail = ctx.text[e:min(e + 24, spans[k + 1][0]) if k + 1 < len(spans) else e + 24]
            after = min((i for i in (tail.find(","), tail.find(";")) if i >= 0), default=len(tail))
            if self.pos.near(ctx.norm, s, e, s - ctx.scope_start(s, 40), after):
                out.append(self.hit(s, e, 0.9))
        return out


_ADDR = load_data("address.json")


def _alt(words):
    return "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))


class AddressRecognizer(PiiRecognizer):
    """Street addresses, best effort: a street word (Mah., Cad., Sok., ул., пер., Street, Ave ...) with
    the name before or after it and the house number, flat and city that follow."""

    ENTITY = "ADDRESS"
    # a word of a street's name: capitalized letters (with ' or - inside) or a short number ("19 Mayıs");
    # not a code mixing both ("Pasaport No: Z61451471 Umut Apartmanı" names a building after a passport).
    # A numbered street ("1234. Sokak", "1203/5 Sk.") is its number right before the street word.
    _W = r"(?:[A-ZÇĞİÖŞÜ][^\W\d_]*(?:['’-][^\W\d_]+)*|\d{1,4})"
    _NUMBERED = r"\d{1,5}(?:/\d{1,3})?\.? "
    _TR = re.compile(
        r"(?<![\w.])(?:(?:" + _W + r" ){1,3}|" + _NUMBERED + r")(?:" + _alt(w for w in _ADDR["tr_street_words"])
        + r")\b\.?"
        r"(?:[ ,]+(?:(?:" + _W + r" ){0,3}|" + _NUMBERED + r")(?:" + _alt(_ADDR["tr_street_words"]) + r")\b\.?)*"
        r"(?:[ ,]*(?:No|Numara|Kapı\s*No)\s*[:.]?\s*\d+[A-Za-z]?(?:\s*/\s*\d+)?)?"
        r"(?:[ ,]*(?:Daire|D|Kat|K|İç\s*Kapı)\s*[:.]?\s*\d+)*"
        r"(?:[ ,]+\d{5})?"
        r"(?:[ ,]+[A-ZÇĞİÖŞÜ][\wçğıöşü]+\s*/\s*[A-ZÇĞİÖŞÜ][\wçğıöşü]+)?")
    _RU = re.compile(
        r"(?:(?<![\w])(?:" + _alt(_ADDR["ru_settlement_words"]) + r")\.?\s*[А-ЯЁ][\w-]+(?:\s[А-ЯЁ][\w-]+)?"
        r"(?:\s\([\w.]+\))?,\s*)?"
        r"(?<![\w])(?:" + _alt(_ADDR["ru_street_words"]) + r")\.?\s+[А-ЯЁ0-9][\w.-]*(?:\s+[А-ЯЁа-яё0-9][\w.-]*){0,3}?"
        r",?\s*(?:д\.|дом)\s*\d+[а-яА-Я]?(?:/\d+)?"
        r"(?:,?\s*(?:к\.|корп\.|корпус|стр\.|строение)\s*\d+[а-яА-Я]?(?:/\d+)?)*"
        r"(?:,?\s*(?:кв\.|квартира|оф\.|офис)\s*\d+)?"
        r"(?:,\s*\d{6})?")
    # not after "the" ("in the 1860 Cooper Union speech": a year); the suffix a whole word ("Land-Grant")
    _EN = re.compile(
        r"(?<![\w])(?<!the )(?<!The )\d{1,6}\s+(?:[A-Z][\w'.-]*\s+){1,3}(?:" + _alt(_ADDR["en_street_suffixes"])
        + r")\b(?![-'’]\w)\.?"
        r"(?:,?\s+(?:Apt\.?|Apartment|Suite|Ste\.?|Unit|#)\s*\w+)?"
        r"(?:,?\s*\n?\s*(?:[A-Z][a-z]+\s){0,2}[A-Z][a-z]+,\s*[A-Z]{2}\s+\d{5}(?:-\d{4})?)?")
    _TR_WORD = re.compile(r"(?<![\w])(?:" + _alt(_ADDR["tr_street_words"]) + r")\b")

    @staticmethod
    def _first_parts(words) -> frozenset:
        """The street words split as the regexes' word boundaries split text ("Apartmanı'nın", "б-р", "küme
        evler"): the first part of one must be a word of the text for a regex to match."""
        return frozenset(NON_WORD.split(w.lower().rstrip("."))[0] for w in words)

    _TR_TRIGGER = _first_parts(_ADDR["tr_street_words"])
    _RU_TRIGGER = _first_parts(_ADDR["ru_street_words"])
    _EN_TRIGGER = _first_parts(_ADDR["en_street_suffixes"])  # common words ("Court", "Field"): needs a digit too
    _TRIGGER_WORDS = _TR_TRIGGER | _RU_TRIGGER | _EN_TRIGGER

    def triggered(self, ctx):
        return not ctx.words.isdisjoint(self._TRIGGER_WORDS)

    def find(self, ctx):
        out = []
        text = ctx.text
        words = ctx.words
        regexes = []
        if ctx.lang != "ru":
            if not words.isdisjoint(self._TR_TRIGGER):
                regexes.append(self._TR)
            if not words.isdisjoint(self._EN_TRIGGER) and _DIGIT.search(text):  # a house number leads
                regexes.append(self._EN)
        if (ctx.lang == "ru" or _CYRILLIC.search(text)) and not words.isdisjoint(self._RU_TRIGGER):
            regexes.append(self._RU)
        for rx in regexes:
            for m in rx.finditer(text):
                s, e = m.span()
                span = text[s:e]
                has_number = any(ch.isdigit() for ch in span)
                # without a house number a Turkish address needs two street words (Mah. + Sok.)
                if not has_number and (rx is not self._TR or len(self._TR_WORD.findall(span)) < 2):
                    continue
                out.append(self.hit(s, e, 0.7 if has_number else 0.55))
        return out


class SecretRecognizer(PiiRecognizer):
    """Credentials: private key blocks, provider tokens (AWS, GitHub, Slack, OpenAI-style sk-, Stripe,
    Google, JWT, Telegram bots), Bearer tokens, passwords in URLs and `password: ...` pairs."""

    ENTITY = "SECRET"
    _PATTERNS = [
        ("private_key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z ]*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.S), 1.0, 0),
        ("aws_key", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA)[A-Z0-9]{16}(?![A-Z0-9])"), 0.95, 0),
        ("github", re.compile(r"(?<![\w])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"), 0.95, 0),
        ("slack", re.compile(r"(?<![\w])xox[abposr]-[A-Za-z0-9-]{10,}"), 0.95, 0),
        ("sk_token", re.compile(r"(?<![\w-])sk-(?:proj-|ant-|live-)?[A-Za-z0-9_-]{20,}"), 0.95, 0),
        ("stripe", re.compile(r"(?<![\w])(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"), 0.95, 0),
        ("google", re.compile(r"(?<![\w])AIza[0-9A-Za-z_-]{35}"), 0.95, 0),
        ("jwt", re.compile(r"(?<![\w-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), 0.95, 0),
        ("telegram", re.compile(r"(?<![\d])\d{8,10}:AA[A-Za-z0-9_-]{33}"), 0.95, 0),
        ("bearer", re.compile(r"(?i:bearer)\s+([A-Za-z0-9._~+/-]{16,}=*)"), 0.9, 1),
        ("url_credentials", re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://([^\s:/?#@\"']+:[^\s/@\"']+)@"), 1.0, 1),
        ("keyword_value", re.compile(
            r"(?i:password|passwd|pwd|pass|passcode|şifre(?:m|si|niz)?|parola(?:m|sı)?|пароль|api[_ -]?key|apikey|"
            r"secret(?:[_ -]?key)?|client[_ -]?secret|access[_ -]?token|auth[_ -]?token|refresh[_ -]?token|"
            r"token|aws_secret_access_key)"
            r"[\"']?\s*(?:[:=]|=>|\bis\b|\s-\s|:\s*=)\s*[\"']?([^\s\"',;<>]{6,})"), 0.85, 1),
    ]

    # a literal each pattern's match must contain (in the text, or in the folded text for the case-blind
    # ones): the patterns whose literal is absent are not run (most start with a character class that
    # the regex engine tries at every position)
    _NEEDS = {"private_key": ("-----BEGIN",), "aws_key": ("AKIA", "ASIA", "AGPA", "AIDA", "AROA"),
              "github": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), "slack": ("xox",), "sk_token": ("sk-",),
              "stripe": ("_live_", "_test_"), "google": ("AIza",), "jwt": ("eyJ",), "telegram": (":AA",),
              "url_credentials": ("://",)}
    _NEEDS_FOLDED = {"bearer": ("bearer",)}
    _CASED = tuple(k for keys in _NEEDS.values() for k in keys)  # any of them: a cased pattern may match
    _FOLDED = ContextWords(["bearer", "password", "passwd", "passcode", "pass", "pwd", "şifre", "sifre", "parola",
                            "пароль", "api key", "api_key", "api-key", "apikey", "secret", "token",
                            "aws_secret_access_key", "client_secret", "access_token", "auth_token"])

    _CASED_RX = re.compile(presence_pattern(_CASED))  # any(k in text for k in _CASED), one scan

    def _keyword_starts(self, norm: str) -> list[int]:
        """Every position where a keyword starts, overlapping ones too ("client_secret_key": at "client" and
        "secret"), in order: str.find per keyword is C-speed, where a look-ahead alternation is tried at every
        character (~40 ns each)."""
        starts = set()
        for word in self._FOLDED.words:
            k = norm.find(word)
            while k >= 0:
                starts.add(k)
                k = norm.find(word, k + 1)
        return sorted(starts)

    def _cased(self, ctx) -> bool:
        """Any provider literal in the text (one scan for triggered() and find())."""
        return ctx.memo("secret_cased", lambda: self._CASED_RX.search(ctx.text) is not None)

    def triggered(self, ctx):
        if self._cased(ctx):
            return True
        # anywhere, not only at a word start: "mypassword=..." is matched by the keyword pattern too
        return self._FOLDED.quick.search(ctx.norm) is not None

    def find(self, ctx):
        out = []
        text = ctx.text
        cased = self._cased(ctx)  # whether any literal below is there at all
        for name, rx, score, group in self._PATTERNS:
            needs = self._NEEDS.get(name)
            if needs is not None and not (cased and any(k in text for k in needs)):
                continue
            needs = self._NEEDS_FOLDED.get(name)
            if needs is not None and not any(k in ctx.norm for k in needs):
                continue
            if name == "url_credentials" and "@" not in text:
                continue
            if name == "keyword_value" and self._FOLDED.quick.search(ctx.norm) is None:
                continue
            if name != "keyword_value":
                for m in rx.finditer(text):
                    s, e = m.span(group)
                    out.append(self.hit(s, e, score, name))
                continue
            # the case-blind keyword alternation costs ~40 ns a character when searched for; instead the
            # pattern is matched only where the folded text holds a keyword (same positions: fold keeps lengths)
            pos = 0
            for start in self._keyword_starts(ctx.norm):
                if start < pos:
                    continue
                m = rx.match(text, start)
                if m is None:
                    continue
                s, e = m.span(group)
                while e > s and text[e - 1] in ".,;:!?)" and (e == len(text) or text[e].isspace()):
                    e -= 1
                value = text[s:e]
                # a word after "password" is prose ("password is required", "key: Authorization: ..."), not
                # a secret; look again from that word ("token is password: X7!...")
                if value.isalpha() and (value.islower() or value.istitle()) or len(value) < 6:
                    pos = s
                    continue
                out.append(self.hit(s, e, score, name))
                pos = e
        return out


# ---------------------------------------------------------------- registry

IDENTIFIER_RECOGNIZERS = (
    TcknRecognizer, VknRecognizer, InnRecognizer, SnilsRecognizer, OgrnRecognizer, PaymentCardRecognizer,
    PhoneNumberRecognizer, IbanMod97Recognizer, EmailAddressRecognizer, IpAddressRecognizer, PassportRecognizer,
    LicensePlateRecognizer, RuLicensePlateRecognizer, DateOfBirthRecognizer, AddressRecognizer, SecretRecognizer, SsnRecognizer,
)
