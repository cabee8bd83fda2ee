"""Shared by the name tests: the disjoint-source rule (issue 29) and one text through the PII step."""
from __future__ import annotations

import hashlib


def half(name: str) -> int:
    """The names-dataset half of a name: 1 is the evaluation's, which no recognizer or its tests may use."""
    return hashlib.blake2b(name.casefold().encode("utf-8"), digest_size=8).digest()[0] & 1


def clean_text(step, text: str) -> str:
    """`text` as the PII step `step` writes it, as a text record."""
    rec = {"id": "x", "kind": "text", "text": text, "messages": None, "source": {"file": "f", "line": 1},
           "meta": "{}"}
    return step([rec])[0]["text"]
