"""Text normalization, used by every format converter, and the content measures of a record."""
from __future__ import annotations

import re
import unicodedata

from pipeline.core.records import arguments_text

# C0/C1 controls except tab and newline, DEL, lone surrogates, and BOM/zero-width no-break space.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufeff]")
_SPACES = re.compile("[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
# Only from the start of a run of spaces: r"[ \t]+\n" retried at every space of a long run that does not
# end a line, which is quadratic in the run's length.
_TRAILING = re.compile(r"(?<![ \t])[ \t]+\n")
_BLANK_RUNS = re.compile(r"\n{3,}")
# What one of the substitutions below acts on, besides a space or tab before a line end and a third line end
# in a row. Text without any (most content) only needs NFC and strip: NFC composes letters and creates none
# of these (tests/core/test_textnorm.py checks every code point), and this one search costs a fifth of the
# five substitutions that would each leave the text as it is.
_SUBSTITUTED = re.compile("[\r\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufeff"
                          "\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")


def needs_substitution(text: str) -> bool:
    """Whether any of normalize_text's substitutions would change the text."""
    return " \n" in text or "\t\n" in text or "\n\n\n" in text or _SUBSTITUTED.search(text) is not None


def normalize_text(text: str) -> str:
    """Unicode NFC, control characters stripped, whitespace normalized (line ends, exotic spaces,
    trailing spaces, runs of blank lines); indentation inside lines is kept (code)."""
    if not text:
        return ""
    if not needs_substitution(text):
        return unicodedata.normalize("NFC", text).strip()
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    text = unicodedata.normalize("NFC", text)
    text = _SPACES.sub(" ", text)
    text = _TRAILING.sub("\n", text)
    text = _BLANK_RUNS.sub("\n\n", text)
    return text.strip()


def content_chars(record: dict) -> int:
    """Characters the trainer sees: message contents and tool-call arguments, or the plain text."""
    if record.get("messages") is not None:
        return sum(len(m.get("content") or "") + sum(len(arguments_text(c)) for c in m.get("tool_calls") or ())
                   for m in record["messages"])
    return len(record.get("text") or "")


def answer_chars(record: dict) -> int:
    """Characters of the assistant turns (a tool call counts one)."""
    return sum(len(m.get("content") or "") + len(m.get("tool_calls") or ())
               for m in record.get("messages") or () if m["role"] == "assistant")
