"""INN: the Russian tax number."""
from __future__ import annotations

from pipeline.data.pii import checks
from pipeline.data.pii.recognizers.base import DigitChecksumRecognizer


class InnRecognizer(DigitChecksumRecognizer):
    """Russian INN: 12 digits (person, two check digits) or 10 (organisation, one: needs context)."""

    ENTITY, MIN_DIGITS, FORMS = "INN", 10, ((12, 0.55), (10, 0.35))
    valid = staticmethod(checks.inn_valid)
