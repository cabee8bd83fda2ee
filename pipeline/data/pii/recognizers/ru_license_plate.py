"""Russian licence plates."""
from __future__ import annotations

import re

from pipeline.data.pii.recognizers.base import CYRILLIC, PiiRecognizer, positive

# the twelve letters Russian plates use (those that look alike in Latin script), as typed in either script
_RU_PLATE_LETTERS = "АВЕКМНОРСТУХABEKMHOPCTYX"


class RuLicensePlateRecognizer(PiiRecognizer):
    """Russian plates: a letter, three digits, two letters and the region (2 or 3 digits, optionally RUS):
    "К334НТ 177", "А123ВС77", "а 123 вс 77". In Cyrillic letters the shape is distinctive; in Latin look-alikes
    ("A123BC77", a part number as much as a plate) or in lower case it needs a plate word (госномер, номер
    машины, plate)."""

    ENTITY = "LICENSE_PLATE"
    NEEDS_A_DIGIT = True
    AFTER = 16
    _RE = re.compile(rf"(?<![\w])([{_RU_PLATE_LETTERS}])[ \u00a0]?(\d{{3}})[ \u00a0]?([{_RU_PLATE_LETTERS}]{{2}})"
                     rf"[ \u00a0]?(\d{{2}}|[1-9]\d{{2}})(?:[ \u00a0]?(?:RUS|rus))?(?![\w])", re.IGNORECASE)
    _HINT = re.compile(r"\d{3}[ \u00a0]?[^\W\d_]{2}[ \u00a0]?\d\d")  # its necessary part

    def __init__(self, language="en"):
        super().__init__(language)
        self.pos = positive("LICENSE_PLATE")

    def triggered(self, ctx):
        return self._HINT.search(ctx.text) is not None

    def find(self, ctx):
        out = []
        for m in self._RE.finditer(ctx.text):
            if m.group(2) == "000":
                continue
            letters = m.group(1) + m.group(3)
            cyrillic = CYRILLIC.search(letters) is not None
            latin = any("A" <= c <= "Z" or "a" <= c <= "z" for c in letters)
            if cyrillic and latin:
                continue  # mixed scripts: no plate is typed so
            s, e = m.span()
            base = 0.75 if cyrillic and letters.isupper() else 0.35
            out.append(self.hit(s, e, self.context_score(ctx, s, e, base, bonus=0.5)))
        return out
