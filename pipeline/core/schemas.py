"""schemas/ is the contract: record, manifest, report and config. Code and tests validate against it."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import jsonschema

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schemas"


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict:
    return json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def validator(name: str) -> jsonschema.Draft202012Validator:
    schema = load_schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def validate(document: dict, name: str) -> None:
    """Raise jsonschema.ValidationError when `document` breaks schemas/<name>.schema.json."""
    error = jsonschema.exceptions.best_match(validator(name).iter_errors(document))
    if error is not None:
        raise error
