"""A listed first name and an everyday word typed in lower case as the subject of a Turkish sentence: "emre kara
bugün şubeye gelip modemi teslim etti", "sabah ramazan mutlu tekrar yazdı".

Many Turkish surnames are everyday words ("kara" black, "mutlu" happy, "kaynak" source). In lower case nothing
marks them, and tr_lower_subject takes a lower-case pair only when both words are name-shaped: the surname stays.
A first name the lists hold, opening its sentence (after a time word at most), followed by one more word and the
rest of the clause ending in a verb only a person does (strict: not a thing's "geldi", not a passive), has its
surname in that word, unless it is a stop, time, title, role or reply word, an inflected word or a verb form
("ahmet de aradı", "ahmet bugün aradı", "ahmet bey aradı" keep theirs).
"""
from __future__ import annotations

import re

from pipeline.data.pii.name_context import ROLES, TITLES, TITLES_AFTER
from pipeline.data.pii.names import LATIN_AMBIGUOUS, LATIN_FIRST, LATIN_LOWER, NEVER, STOP, TURKISH_WORDS
from pipeline.data.pii.text import Hit, fold
from pipeline.data.pii.tr_later import clause_of_subject
from pipeline.data.pii.tr_lower_subject import SUBJECT_SCORE, VERB_SHAPE
from pipeline.data.pii.tr_partner import CLAUSE_OPENERS
from pipeline.data.pii.tr_spelling import TURKISH_LETTERS, inflected_in_spelling, person_verb
from pipeline.data.pii.tr_vocative import REPLY_WORDS

# a sentence's first three words in lower case, each followed by a space
_OPENING = re.compile(rf"(?:^|(?<=[.!?:\n]))[ \t]*([{LATIN_LOWER}]+) ([{LATIN_LOWER}]+) ([{LATIN_LOWER}]+)?(?= |$)")
_NOT_SURNAME = STOP | NEVER | TITLES | TITLES_AFTER | ROLES | CLAUSE_OPENERS | frozenset(fold(w) for w in REPLY_WORDS)


def _surname_word(word: str, spelled: bool) -> bool:
    key = fold(word)
    return key not in _NOT_SURNAME and VERB_SHAPE.search(key) is None and not inflected_in_spelling(word, spelled)


def listed_first_name_pairs(ctx) -> list[Hit]:
    """PERSON hits for a lower-case listed first name and the word after it as a sentence's subject (see the
    module doc)."""
    text = ctx.text
    out: list[Hit] = []
    spelled = TURKISH_LETTERS.search(text) is not None
    for m in _OPENING.finditer(text):
        i = 2 if fold(m.group(1)) in CLAUSE_OPENERS and m.group(3) else 1  # "sabah emre kara tekrar yazdı"
        first, second, end = m.group(i), m.group(i + 1), m.end(i + 1)
        key = fold(first)
        if len(key) < 3 or len(second) < 3 or key not in LATIN_FIRST or key in LATIN_AMBIGUOUS \
                or key in TURKISH_WORDS or not _surname_word(second, spelled):
            continue
        clause = clause_of_subject(text, end)
        if clause is not None and person_verb(clause, True):
            out.append(Hit(m.start(i), end, "PERSON", SUBJECT_SCORE, "lower_subject"))
    return out
