"""In a Turkish record that already names a person, a listed name word opening a sentence before a person's verb is
a name: "Not: Şahin cuma gününe kadar bekleyebileceğini söyledi", "Bulut faturanın kopyasını istedi".

Many Turkish surnames and first names are everyday words ("Şahin" falcon, "Bulut" cloud, "Erdem" virtue), and
at a sentence start a capital says nothing, so a surname mentioned alone there is left unless the record found
it before (tr_later). A record that names someone is about people, and a word of the name lists that opens its
sentence, the rest of the clause in lower case ending in a verb only a person does (tr_spelling.person_verb,
strict: not a thing's "geldi", not a passive; tr_later: not "Cuma günü", not "Umut ediyorum"), is that kind of
mention. Not a place, month or weekday, a stop, title, role or cue word: "Kurye paketi teslim etti" (no listed
name), "Ankara talebi onayladı" (a place) stay.
"""
from __future__ import annotations

import re

from pipeline.data.pii.name_context import ROLES, TITLES, TITLES_AFTER
from pipeline.data.pii.names import LATIN_LOWER, LATIN_UPPER, NEVER, STOP
from pipeline.data.pii.not_person import PLACES
from pipeline.data.pii.text import Hit, fold
from pipeline.data.pii.tr_later import clause_of_subject
from pipeline.data.pii.tr_partner import CLAUSE_OPENERS
from pipeline.data.pii.tr_spelling import person_verb
from pipeline.data.pii.tr_suffix import person_word

BESIDE_SCORE = 0.6
# a capitalized word opening a sentence or a label's value ("Not: X ..."), a space after it
_OPENING_WORD = re.compile(rf"(?:^|(?<=[.!?:\n]))[ \t]*([{LATIN_UPPER}][{LATIN_LOWER}]{{2,}})(?= )")
_NOT_NAME = STOP | NEVER | TITLES | TITLES_AFTER | ROLES | CLAUSE_OPENERS | PLACES


def subjects_beside_a_name(text: str) -> list[Hit]:
    """PERSON hits for listed name words opening a sentence as the subject of a person's verb (see the module
    doc); step.py asks only in a record that names a person."""
    out: list[Hit] = []
    for m in _OPENING_WORD.finditer(text):
        key = fold(m.group(1))
        if key in _NOT_NAME or not person_word(key):  # a listed name, no place or calendar word
            continue
        clause = clause_of_subject(text, m.end(1))
        if clause is not None and person_verb(clause, True):
            out.append(Hit(m.start(1), m.end(1), "PERSON", BESIDE_SCORE, "beside_a_name"))
    return out
