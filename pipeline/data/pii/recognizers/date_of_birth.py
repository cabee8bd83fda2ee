"""Dates of birth: a date that a birth word stands next to."""
from __future__ import annotations

import re

from pipeline.data.pii.recognizers.base import PiiRecognizer

_TR_MONTHS = "ocak|şubat|subat|mart|nisan|mayıs|mayis|haziran|temmuz|ağustos|agustos|eylül|eylul|ekim|kasım|kasim|aralık|aralik"
_RU_MONTHS = "января|февраля|марта|апреля|мая|июня|июля|августа|сентября|октября|ноября|декабря"
_EN_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|december|"
              "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_YEAR = r"(?:19\d{2}|20[0-2]\d)"


class DateOfBirthRecognizer(PiiRecognizer):
    """Dates (numeric, ISO, or with the month written in tr/ru/en) that a birth word stands next to."""

    ENTITY = "DATE_OF_BIRTH"
    NEEDS_A_DIGIT = True
    _RE = re.compile(
        r"(?<![\w.])(?:"
        r"(?:0?[1-9]|[12]\d|3[01])[./-](?:0?[1-9]|1[0-2])[./-]" + _YEAR +
        r"|" + _YEAR + r"-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"
        r"|(?:0?[1-9]|1[0-2])/(?:0?[1-9]|[12]\d|3[01])/" + _YEAR +
        r"|(?:0?[1-9]|[12]\d|3[01])(?:st|nd|rd|th)?\s+(?:" + _TR_MONTHS + "|" + _RU_MONTHS + "|" + _EN_MONTHS +
        r")\.?,?\s+" + _YEAR + r"(?:\s*(?:г\.|года|г(?![\w])))?"
        r"|(?:" + _EN_MONTHS + r")\.?\s+(?:0?[1-9]|[12]\d|3[01])(?:st|nd|rd|th)?,?\s+" + _YEAR +
        r")(?![\w])", re.IGNORECASE)

    def triggered(self, ctx):
        return self.pos.search(ctx.norm)

    def find(self, ctx):
        out = []
        spans = [m.span() for m in self._RE.finditer(ctx.text)]
        for k, (s, e) in enumerate(spans):
            # the birth word in the date's own sentence ("born on 08/15/1948. Delivery on 16/09/2025."), and
            # after it only in its own clause ("15.03.1980 doğumlu"; not "Delivery on 16/09/2025, born on ...")
            tail = ctx.text[e:min(e + 24, spans[k + 1][0]) if k + 1 < len(spans) else e + 24]
            after = min((i for i in (tail.find(","), tail.find(";")) if i >= 0), default=len(tail))
            if self.pos.near(ctx.norm, s, e, s - ctx.scope_start(s, 40), after):
                out.append(self.hit(s, e, 0.9))
        return out
