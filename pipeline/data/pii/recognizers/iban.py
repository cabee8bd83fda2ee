"""IBANs, checked by mod 97 and their country's length."""
from __future__ import annotations

import re

from pipeline.data.pii import checks
from pipeline.data.pii.recognizers.base import PiiRecognizer


class IbanMod97Recognizer(PiiRecognizer):
    """IBAN, spaced or not, mod 97 and country length (python-stdnum); trailing words are trimmed off."""

    ENTITY = "IBAN"
    NEEDS_A_DIGIT = True
    # typed in lower or mixed case ("iban tr33 0006 ..."): text.py's iban_like takes capitals only, since its
    # spans also keep digits from being read as phones or cards
    _LOWER = re.compile(r"(?<![A-Za-z0-9])(?:[a-z][A-Za-z]|[A-Z][a-z])\d{2}(?:[ \u00a0-]?[A-Za-z0-9]){10,32}")
    _LOWER_HINT = re.compile(r"\d\d(?<=[a-z]\d\d)")  # its necessary part, 3x cheaper to search for

    def triggered(self, ctx):
        # what find() reads from: an IBAN-shaped span in capitals, or the lower-case form's necessary part
        return bool(ctx.iban_like) or self._LOWER_HINT.search(ctx.text) is not None

    def find(self, ctx):
        out = [self.hit(s, e, 1.0) for s, e in ctx.ibans]  # in capitals: checked once, in text.py
        text = ctx.text
        if self._LOWER_HINT.search(text) and (ctx.has_run_of(10) or "iban" in ctx.words):
            for m in self._LOWER.finditer(text):  # spaced groups, or glued after "iban"
                end = checks.iban_end(text, m.start(), m.end())
                if end is not None:
                    out.append(self.hit(m.start(), end, 1.0))
        return out
