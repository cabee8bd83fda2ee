"""English: the value of a shipping or billing label is a person's name when it holds a rare word ("Ship to: Nizam
Alanazi", "ship to: raiyan dhaka"-style lower case, "SHIP TO: RAY SALVADOR").

"ship to", "deliver to", "bill to" are no introductions in running text ("can you ship to Florence?"), so they
count only as a label: a colon after them, and a value of one to three words that ends the line, the text or
the clause (a comma or stop after it). The value is a name when no word of it is a stop, place or calendar
word (en_words.NOT_NAME), no word is an everyday English word unless a listed first name, and one word at least
is rare in English (Zipf < 3.0) or a listed first name: "Bill to: Accounts Payable" and "Ship to: Florence,
Alabama" stay.
"""
from __future__ import annotations

import re

from pipeline.data.pii.en_words import EVERYDAY_ZIPF, FIRST_NAMES, NOT_NAME, en_zipf
from pipeline.data.pii.text import Hit, fold

_RARE_ZIPF = 3.0
_WORD = r"[^\W\d_][^\W\d_'’-]*(?:[-'’][^\W\d_]+)?"
LABEL = re.compile(r"(?:^|(?<=[.!?;\n])[ \t]*|(?<=[.!?;:][ ]))(?i:ship|deliver|bill|sold|send)[ \t]+(?i:to)"
                   rf"[ \t]*:[ \t]*({_WORD}(?:[ \t]+{_WORD}){{0,2}})[ \t]*(?=[,.;]|[ \t]*$)", re.MULTILINE)


def label_names(text: str) -> list[Hit]:
    out = []
    if ":" not in text:
        return out
    for m in LABEL.finditer(text):
        keys = [fold(w) for w in m.group(1).split()]
        if all(_may_be_name_word(k) for k in keys) and any(k in FIRST_NAMES or en_zipf(k) < _RARE_ZIPF for k in keys):
            out.append(Hit(m.start(1), m.end(1), "PERSON", 0.7, "label"))
    return out


def _may_be_name_word(key: str) -> bool:
    return len(key) >= 2 and key not in NOT_NAME and (key in FIRST_NAMES or en_zipf(key) < EVERYDAY_ZIPF)
