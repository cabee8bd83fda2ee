"""One number format for every view of a run (report.md, report.html, the terminal summary), so that a count
never shows two ways on one page ("635525" beside "683,078")."""
from __future__ import annotations


def number(value) -> str:
    """A count with thousands separators ("683,078"); a fraction with two decimals ("1,234.57"); None as "-"."""
    if value is None:
        return "-"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.2f}"
    return f"{int(value):,}"


def is_number(value) -> bool:
    """A table cell that number() formats: int or float (not bool, not a preformatted string)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)
