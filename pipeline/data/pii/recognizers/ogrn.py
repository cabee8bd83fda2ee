"""OGRN and OGRNIP: the Russian registration numbers of companies and sole proprietors."""
from __future__ import annotations

from pipeline.data.pii import checks
from pipeline.data.pii.recognizers.base import WIN_AFTER, WIN_BEFORE, PiiRecognizer, contiguous_groups, positive
from pipeline.data.pii.text import Hit


class OgrnRecognizer(PiiRecognizer):
    """OGRN (13 digits) and OGRNIP (15 digits, first digit 3) with their own mod 11 / mod 13 checks."""

    ENTITY = "OGRN"
    NEEDS_A_DIGIT = True
    NEEDS, MIN_DIGITS = "digits", 13
    _IP = positive("OGRNIP")

    def __init__(self, language="en"):
        super().__init__(language)
        self.supported_entities = ["OGRN", "OGRNIP"]

    def find(self, ctx):
        out = []
        text = ctx.text
        for s, e in contiguous_groups(ctx, 13):
            if checks.ogrn_valid(text[s:e]):
                out.append(self.hit(s, e, self.context_score(ctx, s, e, 0.4, bonus=0.55)))
        for s, e in contiguous_groups(ctx, 15):
            if checks.ogrnip_valid(text[s:e]):
                near = self._IP.near(ctx.norm, s, e, WIN_BEFORE, WIN_AFTER) or \
                    self.pos.near(ctx.norm, s, e, WIN_BEFORE, WIN_AFTER)
                score = 0.95 if near else self.context_score(ctx, s, e, 0.45)
                out.append(Hit(s, e, "OGRNIP", score, "pattern"))
        return out
