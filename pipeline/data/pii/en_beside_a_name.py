"""English: in a record that already names a person, a first name or surname that is also an English word of
middle frequency is taken where only a person stands: opening a sentence before a calling verb ("Kate will call
back", "Davies confirmed the new address") or told something ("Told Kate the parcel is on its way").

en_subject and en_addressed take there only listed names and words rare in English, since "Amazon confirmed" and
"Told Support the" are no persons; a person named elsewhere in the record makes a middle word likely to be that
person's other name (step: before the record's mentions are searched).
"""
from __future__ import annotations

import re

from pipeline.data.pii.en_addressed import TOLD_BEFORE
from pipeline.data.pii.en_subject import FUNCTION_WORDS, VERBS_AFTER
from pipeline.data.pii.en_words import NOT_NAME, en_zipf
from pipeline.data.pii.name_context import sentence_initial
from pipeline.data.pii.names import LATIN_LOWER, LATIN_UPPER
from pipeline.data.pii.text import Hit, fold

# beside a named person: a first name or surname that is also a word of middle frequency ("Kate" 4.3, "Davies" 3.9,
# "Charlie" 4.4); "Amazon" 4.6, "Apple" 4.8 and "Support" 5.6 stay above
_BESIDE_A_NAME_ZIPF = 4.5
_ONE_CAPITALIZED = re.compile(rf"(?<![\w'’@./\\-])([{LATIN_UPPER}][{LATIN_LOWER}]{{2,}})(?![\w'’-])")
_LOWER_AFTER = re.compile(r"[ \u00a0]+[a-z]")


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
        if key in NOT_NAME or key in FUNCTION_WORDS or en_zipf(key) >= _BESIDE_A_NAME_ZIPF:
            continue
        subject = sentence_initial(text, s) and VERBS_AFTER.match(norm, e) is not None
        told = TOLD_BEFORE.search(text, max(0, s - 16), s) is not None and _LOWER_AFTER.match(text, e) is not None
        if subject or told:
            out.append(Hit(s, e, "PERSON", 0.7, "subject"))
    return out
