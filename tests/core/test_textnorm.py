"""normalize_text's shortcut (NFC and strip only, when no substitution applies) against the whole chain."""
from __future__ import annotations

import re
import sys
import unicodedata

import pytest

from pipeline.core.textnorm import needs_substitution, normalize_text


def full_chain(text: str) -> str:
    """normalize_text without its shortcut: every substitution, in order."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = re.sub("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufeff]", "", text)
    text = unicodedata.normalize("NFC", text)
    text = re.sub("[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]", " ", text)
    text = re.sub(r"(?<![ \t])[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()


@pytest.mark.parametrize("text", [
    "plain words", "  padded  ", "Türkçe ve русский", "e\u0301 composed", "a\r\nb", "a\rb", "a\x00b", "a\x85b",
    "\ufeffbom", "nbsp\u00a0here", "en\u2000quad", "ideographic\u3000space", "trailing \nspace", "tab\t\nend",
    "a\n\n\nb", "a\n\nb", "a \u00a0\nb", "x\u0301\x00\u0301", "lone \ud800 surrogate", "\u2001\n\n\n",
    "code\n    indented\n\tline", " \t\n \n",
])
def test_shortcut_gives_the_full_chain(text):
    assert normalize_text(text) == full_chain(text)


def test_nfc_creates_nothing_a_substitution_acts_on():
    # the shortcut skips the substitutions before NFC: NFC of a character they leave alone must not hold one
    # they act on, nor a space, tab or line end (U+2000 and U+2001 become U+2002 and U+2003: both are
    # themselves substituted)
    def acted_on(ch: str) -> bool:
        return ch in " \t\n" or needs_substitution(ch)

    made = [hex(c) for c in range(sys.maxunicode + 1)
            if not 0xD800 <= c <= 0xDFFF and not acted_on(chr(c))
            and any(map(acted_on, unicodedata.normalize("NFC", chr(c))))]
    assert made == []
