"""T.C. Kimlik No: the Turkish national id."""
from __future__ import annotations

from pipeline.data.pii import checks
from pipeline.data.pii.recognizers.base import DigitChecksumRecognizer, digit_windows


class TcknRecognizer(DigitChecksumRecognizer):
    """T.C. Kimlik No: 11 digits, two check digits; written in groups ("123 456 789 01", "273.846.195.50")
    only with a context word (kimlik, TC) before it, except in its own 3-3-3-2 grouping (no IP address);
    glued to a word before it ("TC27384619550", "musteri_27384619550.pdf") it is found as well."""

    ENTITY, MIN_DIGITS, FORMS, BONUS = "TCKN", 11, ((11, 0.8),), 0.2
    valid = staticmethod(checks.tckn_valid)

    def triggered(self, ctx):
        return ctx.has_run_of(11) or bool(ctx.glued)

    def find(self, ctx):
        out = super().find(ctx) if ctx.has_run_of(11) else []
        text = ctx.text
        for _run, i, j, s, e, d in digit_windows(ctx, 11, 11, seps=" \u00a0."):
            if j <= i or not checks.tckn_valid(d):
                continue
            seps = {text[a:b] for (_, a), (b, _) in zip(_run.groups[i:j], _run.groups[i + 1:j + 1])}
            if "." in seps and seps != {"."}:
                continue
            # the 3-3-3-2 grouping is the TCKN's own (an IPv4 address aside): found without a context word too
            own = tuple(b - a for a, b in _run.groups[i:j + 1]) == (3, 3, 3, 2) and not checks.ip_valid(text[s:e])
            out.append(self.hit(s, e, self.context_score(ctx, s, e, 0.3, bonus=0.6, without=0.6 if own else None)))
        for s, e in ctx.glued:
            # glued to a word before it, not after it (a run of digits inside a token or a hash is no id)
            if e - s == 11 and not (e < len(text) and (text[e].isalnum() or text[e] == "_")) \
                    and not ctx.in_iban_like(s) and checks.tckn_valid(text[s:e]):
                out.append(self.hit(s, e, self.context_score(ctx, s, e, 0.6, bonus=0.3)))
        return out
