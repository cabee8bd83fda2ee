"""A capitalized word with an apostrophe and a case suffix is a proper noun: Turkish writes the suffix of a
proper name after an apostrophe ("Harmankaya'ya", "Eflinaz'ı", "Bozdemiroğlu'ndan") and never after a common
noun. Such a word that is rare as an ordinary word (wordfreq, name_signals.Rarity) is taken for a person's name,
with no list and no cue: the places and firms people write so are common words there ("İstanbul'a",
"Netflix'in", "Migros'tan") or in the gazetteers' stop lists ("Trendyol'dan", "Telekom'un").

A common word is taken too where more says "person": it is a first name or surname of the lists and no place,
month or day ("Şahin'den", "Pervane'yi": the apostrophe makes the word a proper noun, the list a person's), or
a verb that takes a person follows its case ("Çiçek'e teslim ettik", "Hediye'yi aradım"; not "Kasım'da aradım").

Not taken: the last word of a run of capitalized words ("Kuala Lumpur'a", "Eflinaz Harmankaya'nın": the
recognizers decide on the run as a whole), a word right after an article or a place preposition. Not English
"'s": firms take it as often as persons do ("Costco's"); a person found elsewhere in the record is found in that
form by the record-level pass (mentions.NameBook).
"""
from __future__ import annotations

import re

from pipeline.data.pii.name_context import THING_BEFORE, adjacent_words, sentence_initial, word_before_in
from pipeline.data.pii.name_signals import EVERYDAY_ZIPF, Rarity
from pipeline.data.pii.names import LATIN_FIRST, LATIN_LAST, LISTED_EXT, TURKISH_WORDS
from pipeline.data.pii.not_person import PLACES
from pipeline.data.pii.text import Hit, fold
from pipeline.data.pii.tr_spelling import TURKISH_LETTERS

SUFFIX_SCORE = 0.6  # by rarity and orthography alone: above the default threshold, under a cue's 0.8 - 0.9


def _case_suffixes() -> frozenset:
    """The Turkish case and plural suffixes a proper name takes after its apostrophe, every vowel-harmony
    and consonant form ("'ın", "'nin", "'ya", "'tan", "'ndeki", "'yla", "'lar")."""
    out = {"ki"}
    for a in "ae":
        out.update({a, "y" + a, "n" + a, "l" + a, "yl" + a, "l" + a + "r", "c" + a, "ç" + a})
        for d in "dt":
            out.update({d + a, d + a + "n", d + a + "ki", "n" + d + a, "n" + d + a + "n", "n" + d + a + "ki"})
    for i in "ıiuü":
        out.update({i, "y" + i, "n" + i, "s" + i, i + "n", "n" + i + "n", i + "nki", "n" + i + "nki", i + "m",
                    "s" + i + "n" + "a", "s" + i + "n" + "e", i + "n" + "a", i + "n" + "e", "s" + i + "n" + i})
    return frozenset(out)


CASE_SUFFIXES = _case_suffixes()


# months, days and feasts take an apostrophe after a date ("5 Kasım'da") and some are names too (Kasım, Cuma,
# Ramazan): a list's name only with a person's verb after it
_CALENDAR = frozenset(fold(w) for w in (
    "ocak şubat mart nisan mayıs haziran temmuz ağustos eylül ekim kasım aralık pazartesi salı çarşamba "
    "perşembe cuma cumartesi pazar ramazan bayram").split())
# verbs that take a person in the case the suffix marks, right after it (folded, "ı" as "i"): call, wait for,
# inform (accusative); deliver, tell, write, reach, forward, ask, give (dative)
_PERSON_VERB = {
    "acc": re.compile(r"[ \u00a0]+(?:ara[dmnyşi]|bekle|bilgilendir|tani[dmy]|ikna)"),
    "dat": re.compile(r"[ \u00a0]+(?:(?:bilgi|haber|dönüş|cevap|yanit|teslim|mesaj|mail|e-posta)[ \u00a0]+\w+"
                      r"|söyle|ilet|yaz[dmi]|ulaş|sor[dmu]|hatirlat|danış|başvur|teşekkür)"),
    # a genitive before what only a person has: a request, complaint, spouse, signature ("Boz'un talebi")
    "gen": re.compile(r"[ \u00a0]+(?:talebi|şikayeti|itirazi|isteği|ricasi|eşi|annesi|babasi|imzasi|kimliği)"
                      r"(?!\w)"),
}


def _case_of(suffix: str) -> str | None:
    """"acc", "dat" or "gen" for an accusative, dative or genitive suffix ("'yı", "'ne", "'nin"), else None."""
    body = suffix[1:].lstrip("yn")
    if body in ("ı", "i", "u", "ü") and len(suffix) <= 3:
        return "acc"
    if body in ("a", "e") and len(suffix) <= 3:
        return "dat"
    if body in ("ın", "in", "un", "ün") and len(suffix) <= 4:
        return "gen"
    return None


def person_word(key: str) -> bool:
    """A first name or surname of the lists that is no place, month or day."""
    return (key in LATIN_FIRST or key in LATIN_LAST or key in LISTED_EXT or key in TURKISH_WORDS) \
        and key not in PLACES and key not in _CALENDAR


def person_verb_after(ctx, tok) -> bool:
    """A verb that takes a person in the case of tok's suffix follows it ("Çiçek'e teslim ettik")."""
    case = _case_of(ctx.text[tok.end:tok.full_end].lower())
    return case is not None and _PERSON_VERB[case].match(ctx.norm, tok.full_end) is not None


def _everyday_genitive(ctx, tok, rarity: Rarity) -> bool:
    """An everyday word in the genitive: a country or an institution has requests too ("Türkiye'nin talebi").
    In a text typed with Turkish letters, the word as written: "Savci" is no "savcı" (prosecutor) there."""
    if _case_of(ctx.text[tok.end:tok.full_end].lower()) != "gen" or not rarity.everyday(tok.key):
        return False
    written = tok.key[:1] + tok.word[1:].lower()  # the first letter folded: "I" is how many type "İ"
    return "i" not in written or TURKISH_LETTERS.search(ctx.text) is None or _everyday_as_written(written)


def _everyday_as_written(word: str) -> bool:
    import wordfreq

    return wordfreq.zipf_frequency(word, "tr") >= EVERYDAY_ZIPF


def _is_case_suffix(suffix: str) -> bool:
    """suffix: the apostrophe and what follows it, as the tokenizer took it ("'ın", "’a")."""
    return suffix[1:] in CASE_SUFFIXES


def suffixed_names(ctx, toks: list, rarity: Rarity, taken: list[Hit], not_a_name, ambiguous: frozenset) -> list[Hit]:
    """PERSON hits for the capitalized tokens with an apostrophe case suffix that are rare as words or names
    by the lists or the verb after them (`toks`: the Latin tokens of names.py, each with its suffix end
    `full_end`), outside the spans `taken`. `not_a_name(key)`: a stop word, title, firm or cue word that a name
    never is; `ambiguous`: first names that are also words, names here by the lists or the verb only."""
    text = ctx.text
    out: list[Hit] = []
    for i, t in enumerate(toks):
        if t.full_end == t.end or not _is_case_suffix(text[t.end:t.full_end].lower()):
            continue
        key = t.key
        if len(key) < 3 or not t.word[1:].islower() or not_a_name(key):
            continue
        if not ((rarity.rare(key) and key not in ambiguous) or person_word(key)
                or (key not in PLACES and person_verb_after(ctx, t) and not _everyday_genitive(ctx, t, rarity))):
            continue
        if any(h.start < t.end and t.start < h.end and not (h.start == t.start and h.score < SUFFIX_SCORE)
               for h in taken):
            continue  # a weaker hit on the word alone ("Şahin" at 0.3, a first name that is also a word) is raised
        if i > 0 and adjacent_words(text, toks[i - 1], t) and not sentence_initial(text, toks[i - 1].start):
            continue  # the end of a run of capitalized words ("Kuala Lumpur'a")
        if word_before_in(text, t.start, THING_BEFORE):
            continue
        out.append(Hit(t.start, t.end, "PERSON", SUFFIX_SCORE, "suffix"))
    return out
