"""Field-level stripping: input fields that are personal data by their name.

Names come from pipeline/resources/pii/fields.json (or the configured list). A key is normalized first:
camelCase split, lower case, Turkish letters folded, non-alphanumerics -> '_' ("customerEmail",
"Customer-E-Mail" and "customer_email" are the same key).
"""
from __future__ import annotations

import json
import re
from functools import lru_cache

from pipeline.data.pii.text import load_data

_CAMEL = re.compile(r"(?<=[a-zçğıöşü0-9])(?=[A-ZÇĞİÖŞÜ])")
_NON_ALNUM = re.compile(r"[^\w]+|_+", re.UNICODE)
_TR_FOLD = str.maketrans({"ı": "i", "İ": "i", "I": "i", "ş": "s", "Ş": "s", "ğ": "g", "Ğ": "g", "ç": "c",
                          "Ç": "c", "ö": "o", "Ö": "o", "ü": "u", "Ü": "u"})


def normalize_key(key: str) -> str:
    k = _CAMEL.sub("_", str(key)).translate(_TR_FOLD).lower()
    return _NON_ALNUM.sub("_", k).strip("_")


class FieldRules:
    """Which keys are personal data, and what entity type their value is."""

    def __init__(self, fields: list[str] | None = None):
        data = load_data("fields.json")
        builtin = {normalize_key(k): v for k, v in data["exact"].items()}
        if fields is None:
            self.exact = builtin
            self.suffixes = sorted(((normalize_key(k), v) for k, v in data["suffixes"].items()),
                                   key=lambda kv: -len(kv[0]))
            self.owners = frozenset(normalize_key(o) for o in data["name_owners"])
        else:
            self.exact = {normalize_key(f): builtin.get(normalize_key(f), "PII_FIELD") for f in fields}
            self.suffixes = []
            self.owners = frozenset()

    def entity_of(self, key: str) -> str | None:
        """The entity type of a field named `key`, or None when the name says nothing."""
        m = self.match(key)
        return m[0] if m else None

    @lru_cache(maxsize=4096)
    def match(self, key: str) -> tuple[str, str] | None:
        """(entity type, rule) for a personal-data field name; the rule is a name from the list
        ("email", "*_email", "*_name"), safe to count where the key itself might not be."""
        k = normalize_key(key)
        if not k:
            return None
        if k in self.exact:
            return self.exact[k], k
        for suffix, ent in self.suffixes:
            if k.endswith("_" + suffix):
                return ent, "x_" + suffix
        if self.owners and k.endswith("_name"):
            head = k[: -len("_name")].split("_")[-1]
            if head in self.owners:
                return "PERSON", head + "_name"
        return None


@lru_cache(maxsize=16)
def field_rules(fields: tuple[str, ...] | None) -> FieldRules:
    return FieldRules(list(fields) if fields is not None else None)


def strip_value(value, rules: FieldRules, path: str = "") -> tuple[object, list[str], list[tuple[str, str]]]:
    """Remove personal-data keys from nested dicts/lists.
    Returns (value, removed paths, [(entity type, rule)] of the removed fields)."""
    removed: list[str] = []
    types: list[str] = []
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            m = rules.match(k)
            sub = f"{path}.{k}" if path else str(k)
            if m is not None:
                removed.append(sub)
                types.append(m)
                continue
            out[k], r, t = strip_value(v, rules, sub)
            removed += r
            types += t
        return out, removed, types
    if isinstance(value, list):
        out_list = []
        for v in value:
            nv, r, t = strip_value(v, rules, f"{path}[]")
            out_list.append(nv)
            removed += r
            types += t
        return out_list, removed, types
    return value, removed, types


def strip_fields(meta_json: str, fields: list[str] | None) -> tuple[str, list[str]]:
    """Remove the fields of `meta_json` (a JSON object) that are personal data by name, at any depth.

    `fields` None uses the built-in list (fields.json: exact names, suffixes such as *_email, and
    <owner>_name); a list uses exactly those names. Returns the new JSON and the removed field names as
    dotted paths of key names ("customer.email", "contacts[].phone"): names only, never values.
    Meta that is empty or not a JSON object is returned unchanged.
    """
    if not meta_json:
        return meta_json, []
    try:
        obj = json.loads(meta_json)
    except (TypeError, ValueError):
        return meta_json, []
    if not isinstance(obj, (dict, list)):
        return meta_json, []
    rules = field_rules(tuple(fields) if fields is not None else None)
    new, removed, _ = strip_value(obj, rules)
    if not removed:
        return meta_json, []
    return json.dumps(new, ensure_ascii=False, separators=(",", ":")), removed
