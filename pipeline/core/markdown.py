"""Markdown for report.md and the Prefect artifacts."""
from __future__ import annotations

import html
import re

# the Markdown that can make a link, an image or a code span of data (html.escape takes care of <autolinks>
# and raw HTML); a backslash makes each literal
_SYNTAX = re.compile(r"([\\`\[\]])")

from pipeline.core.numfmt import is_number, number


def text(value) -> str:
    """Inline text from data (file names): shown as written, never interpreted by a Markdown viewer, neither
    its HTML nor its links ("[x](javascript:...)" is no link)."""
    return _SYNTAX.sub(r"\\\1", html.escape(str(value), quote=False))


def cell(value) -> str:
    """A table cell: file names may hold "|" or line breaks, which would break the Markdown table."""
    return text(value).replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def table(header: list[str], rows: list[list], numeric: tuple[int, ...] = ()) -> str:
    """A Markdown table; the columns at the `numeric` indexes are right-aligned, counts formatted by number()."""
    lines = ["| " + " | ".join(header) + " |",
             "|" + "".join("---:|" if k in numeric else "---|" for k in range(len(header)))]
    lines += ["| " + " | ".join(cell(number(c) if is_number(c) else c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
