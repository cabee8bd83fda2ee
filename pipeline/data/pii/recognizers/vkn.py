"""Vergi Kimlik No: the Turkish tax number."""
from __future__ import annotations

from pipeline.data.pii import checks
from pipeline.data.pii.recognizers.base import DigitChecksumRecognizer


class VknRecognizer(DigitChecksumRecognizer):
    """Vergi Kimlik No: 10 digits, one check digit: needs context."""

    ENTITY, MIN_DIGITS, FORMS = "VKN", 10, ((10, 0.35),)
    valid = staticmethod(checks.vkn_valid)
