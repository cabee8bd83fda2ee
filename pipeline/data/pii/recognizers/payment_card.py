"""Payment card numbers."""
from __future__ import annotations

import re

from pipeline.data.pii import checks
from pipeline.data.pii.recognizers.base import NEG_WIN, NEGATIVE, WIN_BEFORE, PiiRecognizer, digit_windows
from pipeline.data.pii.text import ContextWords

_DIGITS = re.compile(r"\d+")


class PaymentCardRecognizer(PiiRecognizer):
    """Payment cards: 13-19 digits in groups (space or dash, also wide: "4111  1111  1111  1111", tabs, " - ")
    or in a row; issuer prefix and Luhn."""

    ENTITY = "CREDIT_CARD"
    NEEDS_A_DIGIT = True
    NEEDS, MIN_DIGITS = "digits", 13
    # groups with wider separators than a digit run allows (two or more spaces, a tab, a spaced dash)
    _WIDE = re.compile(r"(?<!\d)\d{3,6}(?:(?:\t|[ \u00a0\t]{2,4}|[ \u00a0\t]*-[ \u00a0\t]*)\d{3,6}){1,5}(?!\d)")
    _WIDE_HINTS = ("  ", "\t", " -", "- ")
    # negative words that name a document, not a code as long as a card (tracking numbers and barcodes have
    # 12-14 digits and pass Luhn one time in ten): a Luhn-valid number with its issuer's prefix and length
    # after them stays a card ("Payment reference 4111 ...", "Invoice number: 5555 ..."), scored lower
    _DOCUMENT_WORDS = ContextWords([
        "ref", "referans", "reference", "invoice", "fatura", "order", "sipariş", "siparis", "заказ", "счет-фактур",
        "счёт №", "счет №", "ticket", "talep", "заявк", "обращени", "case", "başvuru", "dosya", "kayıt no",
        "protokol"])

    def _wide(self, ctx) -> bool:
        return ctx.memo("card_wide", lambda: any(h in ctx.text for h in self._WIDE_HINTS)
                        and self._WIDE.search(ctx.text) is not None)

    def triggered(self, ctx):
        return ctx.has_run_of(13) or self._wide(ctx)

    def _score(self, ctx, s, e, base):
        penalty = 0.4
        lo = ctx.scope_start(s, WIN_BEFORE)
        neg_end = NEGATIVE.last_end(ctx.norm, s, min(NEG_WIN, s - lo))
        if neg_end >= 0 and self._DOCUMENT_WORDS.last_end(ctx.norm, s, min(NEG_WIN, s - lo)) == neg_end:
            penalty = 0.2
        return self.context_score(ctx, s, e, base, bonus=0.15, penalty=penalty)

    def find(self, ctx):
        out = []
        taken_end = -1
        for run, i, j, s, e, d in digit_windows(ctx, 13, 19, seps=" -\u00a0"):
            if s < taken_end:
                continue
            if checks.card_prefix_ok(d) and checks.luhn_valid(d) and len(set(d)) >= 2:
                base = 0.85 if j > i else 0.75
                out.append(self.hit(s, e, self._score(ctx, s, e, base)))
                taken_end = e
        if self._wide(ctx):
            self._find_wide(ctx, out)
        return out

    def _find_wide(self, ctx, out) -> None:
        text = ctx.text
        for m in self._WIDE.finditer(text):
            groups = [g.span() for g in _DIGITS.finditer(text, m.start(), m.end())]
            taken_end = -1
            for i in range(len(groups)):
                if groups[i][0] < taken_end or ctx.in_iban_like(groups[i][0]):
                    continue
                total = 0
                for j in range(i, len(groups)):
                    total += groups[j][1] - groups[j][0]
                    if total > 19:
                        break
                    if total < 13:
                        continue
                    s, e = groups[i][0], groups[j][1]
                    d = "".join(text[a:b] for a, b in groups[i:j + 1])
                    if any(h.start < e and s < h.end for h in out):
                        continue
                    if checks.card_prefix_ok(d) and checks.luhn_valid(d) and len(set(d)) >= 2:
                        out.append(self.hit(s, e, self._score(ctx, s, e, 0.85)))
                        taken_end = e
                        break
