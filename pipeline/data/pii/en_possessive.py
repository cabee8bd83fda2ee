"""English: a rare capitalized word in the possessive before a lower-case word is a person ("Sahni's order is on
hold", "I checked Almutairi's account").

English "'s" alone says little: shops and brands take it as often as persons ("Costco's prices", "Walmart's").
Two frequencies tell them apart (wordfreq): the word is rare in English at large (Zipf < 2.0: "costco" 3.3,
"tesco" 3.3, "aldi" 3.0, "currys" 2.2 are above; many surnames are below), and it is written in the possessive
far less often than without it, as a surname is ("smith's" 1.3 Zipf below "smith", "hussain's" 1.4) and a brand
known by its possessive is not ("sainsbury's" above "sainsbury", "applebee's" above). It must also follow no
other capitalized word ("Trader Joe's").
"""
from __future__ import annotations

import re

from pipeline.data.pii.en_words import NOT_NAME, en_zipf
from pipeline.data.pii.name_context import sentence_initial
from pipeline.data.pii.names import LATIN_LOWER, LATIN_UPPER
from pipeline.data.pii.text import Hit, fold

# the capital first: the regex engine skips to capitals (a look-behind first would be tried at every position)
_POSSESSIVE = re.compile(rf"([{LATIN_UPPER}][{LATIN_LOWER}]{{2,}})['’]s[ \t]+[a-z]")
_NOT_BEFORE = re.compile(r"[\w'’.-]")
_CAP_BEFORE = re.compile(rf"[{LATIN_UPPER}][\w'’-]*[ \t]+$")
_RARE_ZIPF = 2.0
_DROP = 0.8  # Zipf: a surname's possessive is this much rarer than the word at least


def possessive_names(text: str) -> list[Hit]:
    if "'s" not in text and "’s" not in text:
        return []  # what the regex needs (two substring tests; the scan tests every capital)
    out = []
    for m in _POSSESSIVE.finditer(text):
        word, s = m.group(1), m.start(1)
        if s > 0 and _NOT_BEFORE.match(text, s - 1):
            continue
        key = fold(word)
        if key in NOT_NAME or en_zipf(key) >= _RARE_ZIPF or not person_possessive(key):
            continue
        if not sentence_initial(text, s) and _CAP_BEFORE.search(text, max(0, s - 30), s):
            continue
        out.append(Hit(s, m.end(1), "PERSON", 0.7, "possessive"))
    return out


def person_possessive(key: str) -> bool:
    """The word is written in the possessive far less often than without it, as a surname is."""
    possessive = en_zipf(key + "'s")
    return possessive == 0.0 or en_zipf(key) - possessive >= _DROP
