"""The PII stage's speed cuts give what the plain computations they replace give."""
from __future__ import annotations

import pytest

from pipeline.data.pii.name_signals import COMMON_ZIPF, EVERYDAY_ZIPF, common_words
from pipeline.data.pii.text import fold


@pytest.mark.parametrize("lang", ["tr", "ru", "en"])
def test_common_words_read_from_buckets_equal_the_frequency_dict(lang):
    import wordfreq

    freqs = wordfreq.get_frequency_dict(lang, "best")
    for zipf in (COMMON_ZIPF, EVERYDAY_ZIPF):
        floor = 10 ** (zipf - 9)
        expected = frozenset(fold(w) for w, f in freqs.items() if f >= floor and w.isalpha())
        assert common_words(lang, zipf) == expected
    assert "ve" in common_words("tr") and "и" in common_words("ru", EVERYDAY_ZIPF)


def test_common_words_of_a_language_wordfreq_lacks_are_empty():
    assert common_words("xx") == frozenset()
