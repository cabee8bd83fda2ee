"""The whole line under a Turkish closing formula is the writer's name: "Saygılarımla,\nÜmmet Has",
"İyi çalışmalar,\nNilgün Kalem".

The sign-off rule of latin_names.py takes the capitalized words at the start of the line below a closing
formula that are name-like, one at a time: a surname that is also a word ("Has", "Kalem", "Boz") is left
behind its first name. A line that holds two or three capitalized words and nothing else, right under a closing
formula, is a signature: all of it is the name. Not a team or firm line ("Müşteri Hizmetleri", "Destek Ekibi"):
the first word no everyday word (Zipf >= 4.3: "Türk Telekom", "Satış Müdürü") and no stop, title, office,
firm or cue word, none a title, office, role or inflected common word,
and one at least rare or a listed name.
"""
from __future__ import annotations

import re

from pipeline.data.pii.later import everyday_word, inflected_common
from pipeline.data.pii.name_context import ROLES, TITLES, TITLES_AFTER, signoff_above
from pipeline.data.pii.name_signals import common_words
from pipeline.data.pii.names import LATIN_FIRST, LATIN_LAST, LATIN_LOWER, LATIN_UPPER, OFFICES
from pipeline.data.pii.text import Hit, fold

SIGNATURE_SCORE = 0.7
_WORD = rf"(?:[{LATIN_UPPER}][{LATIN_LOWER}]+|[{LATIN_UPPER}]{{2,}})"  # capitalized or in capitals
_LINE = re.compile(rf"^[ \t]*({_WORD}(?:[ \u00a0]+{_WORD}){{1,2}})[ \t]*$", re.MULTILINE)  # two or three words
_COMMON: list = []


def signature_names(ctx, not_a_name) -> list[Hit]:
    """PERSON hits for signature lines (see the module doc); `not_a_name(key)`: a stop, title, office, cue or
    firm word."""
    out = []
    for m in _LINE.finditer(ctx.text):
        s, e = m.span(1)
        if s < 2 or not signoff_above(ctx.norm, m.start()):
            continue
        keys = [fold(w) for w in m.group(1).split()]
        if not not_a_name(keys[0]) and not everyday_word(keys[0]) and all(_word_of_name(k) for k in keys) and any(map(_rare_or_listed, keys)):
            out.append(Hit(s, e, "PERSON", SIGNATURE_SCORE, "signature"))
    return out


def _word_of_name(key: str) -> bool:
    """No title, office, role or inflected common word. After the first word an English stop word may be a
    Turkish surname here ("Has", "Can"): the first word passed the full test."""
    return len(key) >= 2 and key not in TITLES and key not in TITLES_AFTER and key not in OFFICES \
        and key not in ROLES and not inflected_common(key)


def _rare_or_listed(key: str) -> bool:
    if not _COMMON:
        _COMMON.append(common_words("tr") | common_words("en"))
    return key in LATIN_FIRST or key in LATIN_LAST or key not in _COMMON[0]
