"""One number format for every view of a run (report.md, report.html, the terminal summary, the Prefect
artifacts), so that a figure never shows two ways ("635525" beside "683,078", "1.77%" beside "1.8%",
"2 min" beside "0.04 h")."""
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


def percent(share: float | None) -> str:
    """A share (0..1) as a percentage: two decimals under 10%, so that a small loss does not read as none
    ("1.77%", "0.05%"), one above ("46.1%"); None as "-"."""
    if share is None:
        return "-"
    return f"{share * 100:.2f}%" if share < 0.1 else f"{share * 100:.1f}%"


def gib(size: float | None) -> str:
    """A memory size in GiB, to the hundredth ("7.27"); None as "-"."""
    return "-" if size is None else f"{size:,.2f}"


def hours(value: float | None) -> str:
    """A duration; under an hour in minutes: a 4-minute job printed as "0.0 h" read as no time at all."""
    if value is None:
        return "-"
    if value < 0.95:
        return "<1 min" if value * 60 < 1 else f"{value * 60:.0f} min"
    return f"{value:,.1f} h"


def cost(usd: float | None) -> str:
    """A rental cost: the catalog's prices exclude VAT ("$14.80 + VAT")."""
    return "-" if usd is None else f"${usd:,.2f} + VAT"
