"""The one number formatter (pipeline/core/numfmt.py) every view of a run uses."""
import pytest

from pipeline.core import numfmt


@pytest.mark.parametrize("value, shown", [(683078, "683,078"), (1234.567, "1,234.57"), (3.0, "3"), (None, "-")])
def test_counts_have_thousands_separators(value, shown):
    assert numfmt.number(value) == shown


@pytest.mark.parametrize("share, shown", [(0.0177, "1.77%"), (0.0005, "0.05%"), (0.461, "46.1%"), (1.0, "100.0%"),
                                          (None, "-")])
def test_a_small_share_keeps_two_decimals(share, shown):
    assert numfmt.percent(share) == shown


@pytest.mark.parametrize("hours, shown", [(0.004, "<1 min"), (0.07, "4 min"), (0.5, "30 min"), (0.96, "1.0 h"),
                                          (20.0, "20.0 h"), (None, "-")])
def test_short_jobs_are_shown_in_minutes(hours, shown):
    assert numfmt.hours(hours) == shown


def test_memory_and_cost():
    assert (numfmt.gib(7.2681), numfmt.cost(14.8), numfmt.cost(None)) == ("7.27", "$14.80 + VAT", "-")
