"""English: in a record that already names a person, a first name or surname that is also an English word of
middle frequency is taken where only a person stands: opening a sentence before a calling verb ("Kate will call
back", "Davies confirmed the new address") or told something ("Told Kate the parcel is on its way").

en_subject and en_addressed take there only listed names and words rare in English, since "Amazon confirmed" and
"Told Support the" are no persons; a person named elsewhere in the record makes a middle word likely to be that
person's other name (step: before the record's mentions are searched). There, a town is a name too ("Hyde
confirmed", "Told Salem the"), and a word in the possessive before what a customer has ("Gondal's order", "Monroe's
refund") when it is a listed name, a town or rare in English: "Walmart's order" and "Costco's refund" stay.
"""
from __future__ import annotations

import re

from pipeline.data.pii.en_addressed import TOLD_BEFORE
from pipeline.data.pii.en_subject import FUNCTION_WORDS, VERBS_AFTER
from pipeline.data.pii.en_words import NOT_NAME, en_zipf
from pipeline.data.pii.name_context import sentence_initial
from pipeline.data.pii.names import LATIN_FIRST, LATIN_LAST, LATIN_LOWER, LATIN_UPPER
from pipeline.data.pii.not_person import PLACES
from pipeline.data.pii.text import Hit, fold

# beside a named person: a first name or surname that is also a word of middle frequency ("Kate" 4.3, "Davies" 3.9,
# "Charlie" 4.4); "Amazon" 4.6, "Apple" 4.8 and "Support" 5.6 stay above
_BESIDE_A_NAME_ZIPF = 4.5
_ONE_CAPITALIZED = re.compile(rf"(?<![\w'’@./\\-])([{LATIN_UPPER}][{LATIN_LOWER}]{{2,}})(?![\w'’-])")
_LOWER_AFTER = re.compile(r"[ \u00a0]+[a-z]")
# a town is a surname too in these slots ("Hyde confirmed the new address"): only a place word among NOT_NAME's
_NOT_NAME = NOT_NAME - PLACES
# what a customer has: the word in the possessive before it is its owner ("Gondal's order is on hold")
_OWNER = re.compile(rf"(?<![\w'’@./\\-])([{LATIN_UPPER}][{LATIN_LOWER}]{{2,}})['’]s[ \u00a0]+(?:order|account|parcel"
                    r"|package|refund|request|complaint|card|payment|booking|invoice|delivery|ticket|subscription"
                    r"|contract)(?![\w-])")
_RARE_ZIPF = 3.0


def subjects_beside_a_name(text: str) -> list[Hit]:
    """In a record that already names a person: one capitalized word that opens a sentence before a calling verb
    of context.json ("Davies confirmed the new address", "Kate will call back"), or that the writer told something
    ("Told Kate the parcel is on its way"), is a name up to Zipf 4.5 where subject_names and en_addressed take
    only words rare in English or listed names; never a function, stop, place, calendar or address word."""
    out = []
    norm = fold(text)
    for m in _ONE_CAPITALIZED.finditer(text):
        s, e = m.span(1)
        key = fold(m.group(1))
        if key in _NOT_NAME or key in FUNCTION_WORDS or en_zipf(key) >= _BESIDE_A_NAME_ZIPF:
            continue
        subject = sentence_initial(text, s) and VERBS_AFTER.match(norm, e) is not None
        told = TOLD_BEFORE.search(text, max(0, s - 16), s) is not None and _LOWER_AFTER.match(text, e) is not None
        if subject or told:
            out.append(Hit(s, e, "PERSON", 0.7, "subject"))
    for m in _OWNER.finditer(text):
        key = fold(m.group(1))
        if key not in _NOT_NAME and key not in FUNCTION_WORDS and en_zipf(key) < _BESIDE_A_NAME_ZIPF \
                and (key in PLACES or key in LATIN_LAST or key in LATIN_FIRST or en_zipf(key) < _RARE_ZIPF):
            out.append(Hit(m.start(1), m.end(1), "PERSON", 0.7, "subject"))
    return sorted(out, key=lambda h: h.start)
