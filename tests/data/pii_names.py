"""Shared by the name tests: the disjoint-source rule (issue 29) and one text through the PII step."""
from __future__ import annotations

import hashlib

import pytest

from pipeline.core.config import PiiConfig
from pipeline.data.pii import PiiStep


def half(name: str) -> int:
    """The names-dataset half of a name: 1 is the evaluation's, which no recognizer or its tests may use."""
    return hashlib.blake2b(name.casefold().encode("utf-8"), digest_size=8).digest()[0] & 1


def clean_text(step, text: str) -> str:
    """`text` as the PII step `step` writes it, as a text record."""
    rec = {"id": "x", "kind": "text", "text": text, "messages": None, "source": {"file": "f", "line": 1},
           "meta": "{}"}
    return step([rec])[0]["text"]


@pytest.fixture(scope="module")
def step():
    """The PII step with the default config (a module's tests share one: loading it takes seconds); a test module
    takes it by importing it."""
    return PiiStep(PiiConfig(), salt=b"test-salt")
