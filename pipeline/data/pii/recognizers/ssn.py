"""US Social Security numbers."""
from __future__ import annotations

import re

from pipeline.data.pii.recognizers.base import PiiRecognizer


class SsnRecognizer(PiiRecognizer):
    """US Social Security numbers (English text is often American): area 001-899 except 666, group 01-99,
    serial 0001-9999; no check digit. Written 123-45-6789 it stands at the threshold; spaced or bare (nine
    digits are also phone parts, order numbers, RU passports) it needs a context word (SSN, social security)."""

    ENTITY = "SSN"
    NEEDS_A_DIGIT = True
    # starts with a digit (the regex engine skips to digits), the word-start look-behind right after it
    _RE = re.compile(r"(\d(?<![\w-]\d)\d{2})([- \u00a0]?)(\d{2})\2(\d{4})(?![\w-])")
    _BASE = {"-": 0.5, "": 0.1}

    def triggered(self, ctx):
        return self._RE.search(ctx.text) is not None

    def find(self, ctx):
        out = []
        for m in self._RE.finditer(ctx.text):
            area, group, serial = int(m.group(1)), int(m.group(3)), int(m.group(4))
            if not (0 < area < 900 and area != 666 and group and serial):
                continue
            base = self._BASE.get(m.group(2), 0.3)
            out.append(self.hit(m.start(), m.end(), self.context_score(ctx, m.start(), m.end(), base, bonus=0.45)))
        return out
