"""English: the word after an abbreviated title is a surname, an everyday word too ("Mr. Stars asked for a copy",
"Ms. Hall's order", "Dr. Church").

The shared recognizers take a title's word only when it may be a name on its own (no stop word: "Hall",
"Church", "Stars" are); after "Mr.", "Mrs.", "Ms.", "Mx.", "Dr." a capitalized word is a person's in English
text, unless a function or calendar word ("Mr. And Mrs. Smith" keeps "And" a word).
"""
from __future__ import annotations

import re

from pipeline.data.pii.en_subject import FUNCTION_WORDS
from pipeline.data.pii.en_words import CALENDAR
from pipeline.data.pii.names import LATIN_LOWER, LATIN_UPPER
from pipeline.data.pii.text import Hit, fold

_TITLED = re.compile(rf"(?<![\w'’-])(?:Mr|Mrs|Ms|Mx|Dr|MR|MRS|MS|DR)\.?[ \u00a0]+([{LATIN_UPPER}][{LATIN_LOWER}]+"
                     rf"(?:-[{LATIN_UPPER}][{LATIN_LOWER}]+)?|[{LATIN_UPPER}]{{2,}})(?![\w-])")


def titled_names(text: str) -> list[Hit]:
    out = []
    if "M" not in text and "D" not in text:
        return out
    for m in _TITLED.finditer(text):
        key = fold(m.group(1))
        if len(key) >= 2 and key not in FUNCTION_WORDS and key not in CALENDAR:
            out.append(Hit(m.start(1), m.end(1), "PERSON", 0.7, "title"))
    return out
