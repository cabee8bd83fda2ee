"""KVKK article 6 special categories of personal data: mentions of health (diagnoses, medication), religion or
belief, ethnic origin, political opinion or party membership, union membership, sexual orientation or sex life,
criminal convictions and security measures, biometric and genetic data, in Turkish, Russian and English text.

What counts as a mention (the rules; the lexicon is pipeline/resources/kvkk_special/lexicon.json):
- a lexicon term at a word start, matched on fold()ed text (Turkish dotted/dotless i folded, ё as е), a stem
  with any suffix ("diyabet*": diyabetim, diyabetli; "диабет*": диабетом) or a whole word;
- about a person: a person cue of the term's language (a pronoun, "müşteri", "у него", "patient", "my
  husband", "diagnosed", "kullanıyor", "var") in the same sentence, at most _CUE_BEFORE characters before or
  _CUE_AFTER after it; or a Turkish first-person suffix on the term itself (kanserim, Aleviyim, CHP'liyim);
  or a term that is about a person by itself ("судим", "sabıkalı");
- not a product, place or topic: no blocker word next to it ("health insurance", "glukometre cihazı",
  "Armenian restaurant", "fingerprint sensor", "Dünya Diyabet Günü", "тест-полоски").
Hard negatives that the lexicon does not hold at all: holidays and sales ("Christmas sale", "Kurban Bayramı
kampanyası"), places ("Union Square"), "party" alone ("party pack"), "political" alone ("political news"),
"health"/"sağlık"/"здоровье" alone ("sağlık sigortası"), and KVKK's "security measures" (it collides with IT
security). The results are categories and spans; nothing here keeps, logs or counts a matched value.
"""
from __future__ import annotations

import json
import re
import threading
from collections import Counter
from functools import lru_cache

from pipeline.core.resources import resource
from pipeline.data.pii.text import NON_WORD, WordStart, fold, holds_any

CATEGORIES = ("health", "religion", "ethnicity", "politics", "union", "sexual", "criminal", "biometric")
_CUE_BEFORE, _CUE_AFTER = 60, 40  # characters around a term in which a person cue must stand
_BLOCK_BEFORE, _BLOCK_AFTER = 20, 25  # characters around a term in which a blocker cancels it
_SEP = re.compile(r"[\s\-]+")
_SENTENCE_END = re.compile(r"[.!?;\n]")
_LETTERS = r"[^\W\d_]*(?:['’][^\W\d_]+)?"  # a suffix: letters, then maybe an apostrophe suffix (CHP'li)
_TR_FIRST_PERSON = ("im", "um", "üm", "iz", "uz", "üz")
_PREFILTER_CHARS = 300  # texts shorter are scanned at once: the test costs them more than it saves (bench/pii)
_TOKENS_KEPT = 1 << 16  # white-space tokens whose answer a process keeps


def norm(text: str) -> str:
    """The matching form of a text: fold()ed, ё as е; the same length, so spans carry over."""
    return fold(text).replace("ё", "е")


class _Entry:
    __slots__ = ("star", "langs", "category", "self")

    def __init__(self, star, lang, category, is_self):
        self.star, self.langs, self.category, self.self = star, {lang}, category, is_self


def _trie_regex(keys) -> str:
    """A regex matching any of `keys` (normalized terms, " " for a separator), one character class per trie
    level: a flat alternation of ~500 words would try each one at every word start."""
    trie: dict = {}
    for k in keys:
        node = trie
        for ch in k:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node) -> str:
        end = "" in node
        alts = [(r"[\s\-]+" if ch == " " else re.escape(ch)) + build(sub) for ch, sub in sorted(node.items()) if ch]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{body})?" if end else body
    return build(trie)


class _WordSet:
    """Cue or blocker words: whole words, or stems ('stem*') with any suffix, at a word start."""

    def __init__(self, words):
        exact = sorted({_SEP.sub(" ", norm(w.strip())) for w in words if not w.endswith("*")}, key=len, reverse=True)
        stems = sorted({_SEP.sub(" ", norm(w[:-1].strip())) for w in words if w.endswith("*")}, key=len, reverse=True)
        parts = []
        if exact:
            parts.append("(?:" + "|".join(re.escape(w).replace(r"\ ", r"[\s\-]+") for w in exact) + r")(?![^\W\d_])")
        if stems:
            parts.append("(?:" + "|".join(re.escape(w).replace(r"\ ", r"[\s\-]+") for w in stems) + ")")
        self.regex = re.compile(r"(?<!\w)(?:" + "|".join(parts) + ")") if parts else None

    def spans(self, text: str, lo: int, hi: int):
        if self.regex is None or hi <= lo:
            return []
        return [(m.start(), m.end()) for m in self.regex.finditer(text, lo, hi)]


class SpecialDetector:
    """Finds special-category mentions in a text: one regex pass for the lexicon terms, and the context rules
    only around the (rare) hits."""

    def __init__(self, lexicon: dict, languages=("tr", "ru", "en")):
        self.languages = tuple(languages)
        self.entries: dict[str, _Entry] = {}
        raw: list[tuple[str, str, str]] = []
        for lang in self.languages:
            for category, terms in lexicon["terms"].get(lang, {}).items():
                if category not in CATEGORIES:
                    raise ValueError(f"kvkk_special lexicon: unknown category {category!r}")
                for term in terms:
                    is_self = term.startswith("!")
                    term = term.lstrip("!")
                    if term.startswith("re:"):
                        raw.append((term[3:], lang, category))
                        continue
                    star = term.endswith("*")
                    key = _SEP.sub(" ", norm(term.rstrip("*").strip()))
                    old = self.entries.get(key)
                    if old is None:
                        self.entries[key] = _Entry(star, lang, category, is_self)
                    else:  # the same word in two languages ("bipolar", "hiv"): either language's rules apply
                        old.langs.add(lang)
                        old.star = old.star or star
        # a term (group 1) at a word start; every key ends with a word character, so no term starts where one ended
        self.terms = WordStart("((?:" + _trie_regex(self.entries) + ")" + _LETTERS + ")") if self.entries else None
        self.raw = [(lang, category) for _, lang, category in raw]
        # the raw patterns start at any word: run them only on a text that holds a literal each one needs
        self.raw_keys = tuple({max(re.findall(r"[^\W\d_]{4,}", r), key=len) for r, _, _ in raw})
        self.raw_regex = (re.compile(r"(?<!\w)(?:" + "|".join(f"({r})" for r, _, _ in raw) + ")") if raw else None)
        # the word of the text a term starts: a one-word term's word starts with it, the first word of a longer
        # one ("ak parti", "CHP'li") is that word (a separator or an apostrophe is no word character)
        leads = [re.match(r"\w*", key).group() for key in self.entries]
        if not all(leads):
            raise ValueError("kvkk_special lexicon: every term starts with a letter or digit")
        self.leads = frozenset(w for w, key in zip(leads, self.entries) if w == key)
        # a longer term's first word -> the words after it, which the text must hold too ("срок отбывал")
        self.first_words: dict[str, set[str]] = {}
        for w, key in zip(leads, self.entries):
            if w != key:
                self.first_words.setdefault(w, set()).add(re.match(r"\W*(\w*)", key[len(w):]).group(1))
        self.lead_start = re.compile(_trie_regex(self.leads))  # .match(word): the word starts with a lead
        # white-space tokens seen, those a one-word term may start in, and those holding a longer term's first word
        self._lock = threading.Lock()
        self._tokens_seen: set[str] = set()
        self._lead_tokens: set[str] = set()
        self._first_tokens: dict[str, tuple[str, ...]] = {}
        self._raw_tokens: set[str] = set()
        self.cues = {lang: _WordSet(lexicon["cues"].get(lang, ())) for lang in self.languages}
        self.blockers = _WordSet([w for lang in self.languages for w in lexicon["blockers"].get(lang, ())])

    # -- matching --
    def _term(self, matched: str):
        """The lexicon entry a term match is, and its suffix; None when no term fits the whole match."""
        m = _SEP.sub(" ", matched)
        for n in range(len(m), 0, -1):
            entry = self.entries.get(m[:n])
            if entry is None:
                continue
            rest = m[n:]
            if not rest or entry.star or rest[0] in "'’":
                return entry, rest
            return None
        return None

    def find(self, text: str, words: frozenset | None = None) -> list[tuple[int, int, str]]:
        """(start, end, category) of each mention in `text`, in order. `words`: the words of the folded text
        where the caller has them (TextContext.folded_words): they answer the test below as the white-space
        tokens do (a token's words are the pieces _token_may_lead reads, every raw key is letters only), at the
        cost of set operations, so texts of any length take it."""
        if self.terms is None or not text:
            return []
        if words is not None or len(text) >= _PREFILTER_CHARS:
            leads, firsts, raw = self._token_answers(set(text.split()) if words is None else words)
            if not (leads or firsts or raw):
                return []  # most texts: no word may start a term, no pattern's literal (the text is not even folded)
        else:  # a short text: its scan costs less than the test
            leads, firsts, raw = True, [], None
        t = norm(text)
        hits = []
        for m in self.terms.finditer(t) if leads or any(nxt in t for w in firsts for nxt in self.first_words[w]) \
                else ():
            found = self._term(m.group(1))
            if found is None:
                continue
            entry, rest = found
            start, end = m.span(1)
            if self._counts(t, start, end, entry.langs, entry.self, rest):
                hits.append((start, end, entry.category))
        if self.raw_regex is not None and (raw if raw is not None else holds_any(t, self.raw_keys)):
            for m in self.raw_regex.finditer(t):
                lang, category = self.raw[m.lastindex - 1]
                if self._counts(t, m.start(), m.end(), {lang}, False, ""):
                    hits.append((m.start(), m.end(), category))
            hits.sort()
        # one mention per span: "Yeşil Partisi üyesiyim" is a pattern and a term
        out, last = [], -1
        for h in hits:
            if h[0] >= last:
                out.append(h)
                last = h[1]
        return out

    def _token_answers(self, tokens: set[str]) -> tuple[bool, list[str], bool]:
        """What the text's white-space tokens (each normalized: fold keeps white space where it is, so they are the
        normalized text's tokens) say, each token's answer kept: whether a one-word term may start in one (a word
        of it starts with the term's first word), the first words of longer terms among their words, and whether
        one holds a literal of the raw patterns. Most texts hold none of these: the term regex, which tests every
        character (~40 us for a text of 700), and the text's folding are skipped."""
        with self._lock:  # a thread-pool task runner shares the detector
            new = tokens.difference(self._tokens_seen)
            if new:
                if len(self._tokens_seen) + len(new) > _TOKENS_KEPT:
                    self._tokens_seen, self._lead_tokens, self._first_tokens = set(), set(), {}
                    self._raw_tokens = set()
                    new = tokens
                for token in new:
                    key = norm(token)
                    found = self._token_may_lead(key)
                    if found is True:
                        self._lead_tokens.add(token)
                    elif found:
                        self._first_tokens[token] = found
                    if holds_any(key, self.raw_keys):
                        self._raw_tokens.add(token)
                self._tokens_seen |= new
            leads = not self._lead_tokens.isdisjoint(tokens)
            firsts = [w for token in tokens & self._first_tokens.keys() for w in self._first_tokens[token]]
            raw = not self._raw_tokens.isdisjoint(tokens)
        return leads, firsts, raw

    def _token_may_lead(self, token: str):
        """True where a one-word term may start in the (normalized) token, else the first words of longer terms
        in it (a tuple; empty: no term starts there)."""
        words = (token,) if token.isalnum() else NON_WORD.split(token)
        for w in words:
            if self.lead_start.match(w) is not None:
                return True
        return tuple(w for w in words if w in self.first_words)

    def _counts(self, t: str, start: int, end: int, langs, is_self: bool, suffix: str) -> bool:
        lo = start
        while lo > 0 and not _SENTENCE_END.match(t, lo - 1):
            lo -= 1
        hi = _SENTENCE_END.search(t, end)
        hi = hi.start() if hi else len(t)
        if self.blockers.spans(t, max(lo, start - _BLOCK_BEFORE), start) \
                or self.blockers.spans(t, end, min(hi, end + _BLOCK_AFTER)):
            return False
        if is_self:
            return True
        letters = suffix.replace("'", "").replace("’", "")
        if "tr" in langs and len(letters) >= 2 and letters.endswith(_TR_FIRST_PERSON):
            return True
        a, b = max(lo, start - _CUE_BEFORE), min(hi, end + _CUE_AFTER)
        for lang in langs:
            cues = self.cues.get(lang)
            if cues is not None and any(ce <= start or cs >= end for cs, ce in cues.spans(t, a, b)):
                return True
        return False

    def count(self, texts, found_of=None) -> Counter:
        """Mentions per category over the texts of one record (`found_of`: text -> what find() gave for it, or
        None where it was not asked yet)."""
        out: Counter = Counter()
        for text in texts:
            found = found_of(text) if found_of is not None else None
            for _, _, category in self.find(text) if found is None else found:
                out[category] += 1
        return out


@lru_cache(maxsize=None)
def load_lexicon() -> dict:
    path = resource("kvkk_special", "lexicon.json")
    return json.loads(path.read_text(encoding="utf-8"))


@lru_cache(maxsize=8)
def get_special_detector(languages: tuple = ("tr", "ru", "en")) -> SpecialDetector:
    return SpecialDetector(load_lexicon(), languages)


def record_special(detector: SpecialDetector, texts, lang: str, stats, found_of=None) -> Counter:
    """Count one record's mentions into the pii stage's stats: special.<category>,
    special_languages.<lang>.<category>, records_with_special. Counts only."""
    found = detector.count(texts, found_of)
    if found:
        stats.add("records_with_special")
        for category, n in found.items():
            stats.add(f"special.{category}", n)
            stats.add(f"special_languages.{lang}.{category}", n)
    return found


def strict_message(found: Counter, records: int) -> str:
    """The one-line strict-mode error: counts per category, never text."""
    kinds = ", ".join(f"{k}: {v}" for k, v in sorted(found.items()))
    return (f"kvkk strict: {sum(found.values())} KVKK special-category mention(s) would remain in the output of {records} "
            f"record(s) ({kinds}); set pii.special to drop or quarantine, or remove them from the input")
