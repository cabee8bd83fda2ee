"""A capitalized word with an apostrophe and a case suffix is a proper noun: Turkish writes the suffix of a
proper name after an apostrophe ("Harmankaya'ya", "Eflinaz'ı", "Bozdemiroğlu'ndan") and never after a common
noun. Such a word that is rare as an ordinary word (wordfreq, name_signals.Rarity) is taken for a person's name,
with no list and no cue: the places and firms people write so are common words there ("İstanbul'a",
"Netflix'in", "Migros'tan") or in the gazetteers' stop lists ("Trendyol'dan", "Telekom'un").

Not taken: the last word of a run of capitalized words ("Kuala Lumpur'a", "Eflinaz Harmankaya'nın": the
recognizers decide on the run as a whole), a word right after an article or a place preposition. Not English
"'s": firms take it as often as persons do ("Costco's"); a person found elsewhere in the record is found in that
form by the record-level pass (mentions.NameBook).
"""
from __future__ import annotations

from pipeline.data.pii.name_context import THING_BEFORE, adjacent_words, sentence_initial, word_before_in
from pipeline.data.pii.name_signals import Rarity
from pipeline.data.pii.text import Hit

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


def _is_case_suffix(suffix: str) -> bool:
    """suffix: the apostrophe and what follows it, as the tokenizer took it ("'ın", "’a")."""
    return suffix[1:] in CASE_SUFFIXES


def suffixed_names(ctx, toks: list, rarity: Rarity, taken: list[Hit], not_a_name) -> list[Hit]:
    """PERSON hits for the capitalized tokens with an apostrophe case suffix that are rare as words
    (`toks`: the Latin tokens of names.py, each with its suffix end `full_end`), outside the spans `taken`.
    `not_a_name(key)`: a stop word, title, firm or cue word that a name never is."""
    text = ctx.text
    out: list[Hit] = []
    for i, t in enumerate(toks):
        if t.full_end == t.end or not _is_case_suffix(text[t.end:t.full_end].lower()):
            continue
        key = t.key
        if len(key) < 3 or not t.word[1:].islower() or not rarity.rare(key) or not_a_name(key):
            continue
        if any(h.start < t.end and t.start < h.end for h in taken):
            continue
        if i > 0 and adjacent_words(text, toks[i - 1], t) and not sentence_initial(text, toks[i - 1].start):
            continue  # the end of a run of capitalized words ("Kuala Lumpur'a")
        if word_before_in(text, t.start, THING_BEFORE):
            continue
        out.append(Hit(t.start, t.end, "PERSON", SUFFIX_SCORE, "suffix"))
    return out
