"""Turkish licence plates."""
from __future__ import annotations

import re

from pipeline.data.pii.recognizers.base import WIN_BEFORE, PiiRecognizer

# two digits (a closing parenthesis, one separator) and a character: a capital there, or a lower-case letter
# in a text that talks about a plate, is a necessary condition. The character is looked at, not consumed:
# "30 71 ST" must also try "71"
_TWO_DIGITS_LETTER = re.compile(r"\d\d\)?(?=[ \u00a0-]?(\S))")


class LicensePlateRecognizer(PiiRecognizer):
    """Turkish plates, every current format: province 01-81, then 1 letter + 4-5 digits, 2 letters + 3-4
    digits, or 3 letters + 2-3 digits ('06 A 12345', '34 AB 1234', '35 ABC 12'); Ç Ğ İ Ö Ş Ü Q W X unused."""

    ENTITY = "LICENSE_PLATE"
    NEEDS_A_DIGIT = True
    AFTER = 16
    # the province 01-81 not after a word character, written to start with a class (text._NUMSPAN): its first
    # digit, the look-behind, then the second digit that this first one admits
    _RE = re.compile(r"([0-8](?<!\w[0-8])(?:(?<=0)[1-9]|(?<=[1-7])\d|(?<=8)[01]))"
                     r"([ \u00a0-]?)([A-PR-VYZ]{1,3})([ \u00a0-]?)(\d{2,5})(?![\w])")
    _UNITS = {"TL", "KG", "GB", "MB", "KB", "TB", "KM", "CM", "MM", "ML", "GR", "HZ", "KW", "MW", "USD", "EUR",
              "TRY", "RUB", "GBP", "AM", "PM", "AH", "MAH", "SOK", "CAD", "NO", "TEL", "KAT", "DK", "SN", "YIL",
              "AY", "GUN", "LT", "MG", "KCAL", "MP", "FPS", "HP", "CC", "GHZ", "MHZ", "DPI", "PPM"}

    # typed in lower or mixed case ("plakam 34 abc 123"): a plate only where a plate is talked about
    _ANY_CASE = re.compile(_RE.pattern, re.IGNORECASE)

    def triggered(self, ctx):
        # a two-digit run followed by a capital letter ("34 ABC 123", "34ABC123")
        text = ctx.text
        followers = [m.group(1) for m in _TWO_DIGITS_LETTER.finditer(text)]
        # no two digits followed by a capital at all: the runs need not be built
        if any(c.isupper() for c in followers):
            # any two-digit group of a run, also the last of a longer one ("... 62 30 71 ST 6228")
            for r in ctx.runs:
                for a, b in r.groups:
                    if b - a == 2 and text[b:b + 2].lstrip(" \u00a0-")[:1].isupper():
                        return True
        # typed in lower case: only in a text that talks about a plate
        return any(c.islower() for c in followers) and self._plate_talk(ctx)

    def _plate_talk(self, ctx) -> bool:
        """A plate context word anywhere in the text (one scan for triggered() and find())."""
        return ctx.memo("plate_talk", lambda: self.pos.search(ctx.norm) is not None)

    def find(self, ctx):
        out = []
        matches = list(self._RE.finditer(ctx.text))
        if self._plate_talk(ctx):
            matches += [m for m in self._ANY_CASE.finditer(ctx.text) if not m.group(3).isupper()
                        and self.pos.near(ctx.norm, m.start(), m.end(), WIN_BEFORE, self.AFTER)]
        for m in matches:
            letters, num = m.group(3).upper(), m.group(5)
            if letters in self._UNITS and not self.pos.near(ctx.norm, m.start(), m.end(), WIN_BEFORE, self.AFTER):
                continue  # "65 TL 9988" is a plate only where a plate is talked about
            nl, nd = len(letters), len(num)
            if not ((nl == 1 and nd in (4, 5)) or (nl == 2 and nd in (3, 4)) or (nl == 3 and nd in (2, 3))):
                continue
            s, e = m.span()
            spaced = bool(m.group(2)) and bool(m.group(4))
            base = 0.6 if spaced else 0.4
            out.append(self.hit(s, e, self.context_score(ctx, s, e, base, bonus=0.35)))
        return out
