"""schemas/ is the contract: record, manifest, report and config. Code and tests validate against it."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import jsonschema

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict:
    return json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))


def validate(document: dict, name: str) -> None:
    """Raise jsonschema.ValidationError when `document` breaks schemas/<name>.schema.json."""
    jsonschema.validate(document, load_schema(name), cls=jsonschema.Draft202012Validator)
