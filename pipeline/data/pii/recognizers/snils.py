"""SNILS: the Russian pension insurance number."""
from __future__ import annotations

import re

from pipeline.data.pii import checks
from pipeline.data.pii.recognizers.base import PiiRecognizer, contiguous_groups


class SnilsRecognizer(PiiRecognizer):
    """SNILS: NNN-NNN-NNN NN (distinctive) or 11 digits in a row (context or Russian text)."""

    ENTITY = "SNILS"
    NEEDS_A_DIGIT = True
    NEEDS, MIN_DIGITS = "digits", 11
    _FORMATTED = re.compile(r"\d(?<![\d-]\d)\d{2}-\d{3}-\d{3}[ \u00a0-]\d{2}(?![\d-])")  # first a class: text._NUMSPAN

    def find(self, ctx):
        out = []
        text = ctx.text
        for m in self._FORMATTED.finditer(text):
            s, e = m.span()
            if checks.snils_valid(text[s:e]):
                out.append(self.hit(s, e, self.context_score(ctx, s, e, 0.85, bonus=0.15)))
        for s, e in contiguous_groups(ctx, 11):
            if checks.snils_valid(text[s:e]):
                base = 0.5 if ctx.lang == "ru" else 0.4
                out.append(self.hit(s, e, self.context_score(ctx, s, e, base, bonus=0.5)))
        return out
