"""Phone numbers, checked by `phonenumbers`."""
from __future__ import annotations

import re

from pipeline.data.pii import checks
from pipeline.data.pii.recognizers.base import PiiRecognizer, digit_windows

_HOME_REGIONS = {"tr": ("TR",), "ru": ("RU", "KZ"), "en": ("US", "CA", "GB")}
_HOME_CODES = {"tr": ("90",), "ru": ("7",), "en": ("1", "44")}  # their country calling codes


# hh:mm after a digit group, or hh: before one ("14:00 2024-03-05"): the group is part of a date and time
_TIME_AFTER = re.compile(r":\d\d?(?!\d)")


def _time_before(text: str, start: int) -> bool:
    return start >= 3 and text[start - 1] == " " and text[start - 2].isdigit() and \
        re.match(r"\d{1,2}:\d\d", text[max(0, start - 6):start - 1][-5:]) is not None


def _dotted_nanp(groups) -> bool:
    """Three groups of 3, 3 and 4 digits: a North American number written with dots, no date's shape."""
    return tuple(b - a for a, b in groups) == (3, 3, 4)


def _area_slash(text: str, groups) -> bool:
    """An area code with its trunk 0, a slash and the number, as Germans write it: "0151/57390093", "030/1234567"
    (no date or fraction has ten digits or more in two groups)."""
    return len(groups) == 2 and text[groups[0][0]] == "0" and 3 <= groups[0][1] - groups[0][0] <= 5


class PhoneNumberRecognizer(PiiRecognizer):
    """Phones validated by `phonenumbers`: international (+/00, any country), TR (0 5xx ..., 0 2xx ...),
    RU (8 9xx ..., 8 4xx ...), US/GB. Unformatted 10-11 digit numbers score lower."""

    ENTITY = "PHONE"
    NEEDS_A_DIGIT = True
    NEEDS, MIN_DIGITS = "digits", 10

    def find(self, ctx):
        out = []
        text = ctx.text
        taken_end = -1
        for run, i, j, s, e, d in digit_windows(ctx, 10, 15):
            if s < taken_end:
                continue
            plus = run.plus and i == 0
            bare_country = False
            if not plus and len(d) > 11 and not d.startswith("0"):
                # a national number has at most 11 digits with its trunk prefix; longer, it may be an international
                # one without its "+" (905321234567, as WhatsApp exports write them) from this language's country
                if not d.startswith(_HOME_CODES.get(ctx.lang, ())):
                    continue
                bare_country = True
            if plus:
                s = run.start
            elif i == 0 and text[run.start] == "(":
                s = run.start
            seps = {text[run.groups[k][1]:run.groups[k + 1][0]] for k in range(i, j)}
            if j - i == 3 and seps == {"."} and all(b - a <= 3 for a, b in run.groups[i:j + 1]):
                continue  # an IPv4 address
            if seps == {"/"} and not _area_slash(text, run.groups[i:j + 1]) \
                    or seps == {"."} and j - i == 2 and not _dotted_nanp(run.groups[i:j + 1]):
                continue  # a date or a fraction; not 305.880.5327 or 0151/57390093
            if "/" in seps and "." in seps:
                continue  # a decimal number next to a date ("70.8750 11/25/2013"): no phone mixes the two
            if _TIME_AFTER.match(text, run.groups[j][1]) or _time_before(text, run.groups[i][0]):
                continue  # a timestamp's digits ("2024-03-05 14:00:00"): a group that is the hour of a time
            candidate = ("+" if plus or bare_country else "") + d
            if not plus and d.startswith("00"):
                candidate = d
            region = checks.phone_region(candidate, ctx.lang)
            if region is None:
                continue
            home = region in _HOME_REGIONS.get(ctx.lang, ())
            if bare_country and not home:
                continue  # a country code without its "+" is read only as this language's country
            # the full national form: with its trunk prefix (0 5xx..., 8 9xx...), or NANP's ten digits
            trunk = d[0] in "08" or (len(d) == 11 and d[0] in "17") or (region in ("US", "CA") and len(d) == 10)
            if plus or d.startswith("00"):
                base = 0.9
            elif bare_country:
                base = 0.5 if j == i else 0.75
            elif j > i:  # written in groups
                base = 0.75 if home else 0.55
            elif home and trunk:  # 0532..., 8916...: a national number with its trunk prefix
                base = 0.55
            else:  # ten bare digits, or another country's national format
                base = 0.4
            if self.near_other_ids(ctx, s) and not self.pos.near(ctx.norm, s, e, 24):
                base -= 0.3
            out.append(self.hit(s, e, self.context_score(ctx, s, e, base, bonus=0.3, penalty=0.4)))
            taken_end = e
        return out
