"""Passport numbers: Russian internal and foreign, Turkish and others."""
from __future__ import annotations

import re

from pipeline.data.pii import checks
from pipeline.data.pii.recognizers.base import CYRILLIC, PiiRecognizer


class PassportRecognizer(PiiRecognizer):
    """Passports: RU internal (series 4 digits + number 6: '45 08 123456', '4508 123456'), RU foreign
    ('75 1234567'), TR and others (a letter + 7-8 digits: 'U12345678'). No checksum outside the MRZ,
    so a context word (passport, паспорт, pasaport, серия) is required to pass the default threshold."""

    ENTITY = "PASSPORT"
    NEEDS_A_DIGIT = True
    _RU = re.compile(r"(?<![\d\w])(?:\d{2}[ \u00a0]?\d{2}"
                     r"(?:[ \u00a0№#]{1,3}|[ \u00a0]+(?i:номер|ном\.|no\.?)[ \u00a0]*)\d{6}"
                     r"|\d{2}[ \u00a0]\d{7}|\d{10}|\d{9})(?![\d\w])")
    _LATIN = re.compile(r"(?<![\w])[A-Z]{1,2}[ \u00a0]?\d{7,8}(?![\w])")
    AFTER = 24  # "45 10 123456 выдан ОВД ..."
    # the internal passport's own groupings, series then number: "45 10 123456" and "4510 123456"; in Russian
    # text they are a passport without a context word too (other numbers are not grouped so)
    _RU_OWN = re.compile(r"\d\d[ \u00a0]\d\d[ \u00a0]\d{6}|\d{4}[ \u00a0]\d{6}")
    _OWN_BASE = {3: 0.6, 2: 0.5}  # by the number of groups

    def _russian(self, ctx) -> bool:
        return ctx.lang == "ru" or CYRILLIC.search(ctx.text) is not None

    def triggered(self, ctx):
        return self.pos.search(ctx.norm) or (self._russian(ctx) and self._RU_OWN.search(ctx.text) is not None)

    def find(self, ctx):
        out = []
        text = ctx.text
        russian = self._russian(ctx)
        for rx, spaced_base in ((self._RU, 0.3), (self._LATIN, 0.3)):
            for m in rx.finditer(text):
                s, e = m.span()
                value = text[s:e]
                if len(set(checks.digits(value))) < 3:
                    continue
                contiguous = value.isdigit()
                base = 0.15 if contiguous else spaced_base
                if russian and rx is self._RU and self._RU_OWN.fullmatch(value):
                    base = self._OWN_BASE[len(value.split())]
                score = self.context_score(ctx, s, e, base, bonus=0.6 if not contiguous else 0.7)
                out.append(self.hit(s, e, score))
        return out
