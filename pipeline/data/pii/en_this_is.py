"""English: a writer who introduces themself in lower case ("hi, this is necdet seelmann, i ordered a kettle"):
two lower-case words after "this is" that end the clause (a comma, a stop or the line's end) are a name when one
is an anchor of en_subject (a listed first name, or rare in English and no place or stop word) and the other may
stand beside one and is no everyday English word unless a listed surname.

The shared lower-case rules weigh a word against Turkish and English together: "necdet" and "kalem" are Turkish
words, rare in English. "this is very good,", "this is my order." and "this is bad news," stay: no anchor.
"""
from __future__ import annotations

import re

from pipeline.data.pii.en_subject import name_anchor, name_partner
from pipeline.data.pii.en_words import EVERYDAY_ZIPF, en_zipf
from pipeline.data.pii.names import LATIN_LAST, LATIN_LOWER
from pipeline.data.pii.text import Hit

_THIS_IS = re.compile(rf"(?<![\w'’-])(?i:this[ \t]+is)[ \t]+([{LATIN_LOWER}]{{2,}})[ \t]+([{LATIN_LOWER}]{{2,}})"
                      r"(?=[ \t]*(?:[,.;!\n]|$))")


def this_is_names(text: str) -> list[Hit]:
    """PERSON spans of the two lower-case words a writer introduces themself by (see the module doc)."""
    if "this is" not in text.lower():
        return []
    out = []
    for m in _THIS_IS.finditer(text):
        a, b = m.group(1), m.group(2)
        if _pair(a, b) or _pair(b, a):
            out.append(Hit(m.start(1), m.end(2), "PERSON", 0.7, "this_is"))
    return out


def _pair(anchor: str, other: str) -> bool:
    return name_anchor(anchor) and name_partner(other) \
        and (name_anchor(other) or other in LATIN_LAST or en_zipf(other) < EVERYDAY_ZIPF)
