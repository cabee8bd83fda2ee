"""`--set section.key=value` flags of the e2e scripts, as the nested overrides pipeline.core.config.merge_config takes.

A value is read as JSON when it parses (false, 3, "x", [..]) and kept as a string otherwise, so
`--set filters.detect_language=false --set quality.enabled=false` turns the language and quality steps off.
"""
from __future__ import annotations

import json


def parse_sets(items: list[str] | None) -> dict:
    overrides: dict = {}
    for item in items or []:
        path, sep, raw = item.partition("=")
        if not sep or not path:
            raise SystemExit(f"--set wants section.key=value, got {item!r}")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        *sections, key = path.split(".")
        node = overrides
        for section in sections:
            node = node.setdefault(section, {})
        node[key] = value
    return overrides
