"""The PII step: field stripping, detection, operators, counts, the KVKK summary and the strict policy.

Nothing this module logs, raises or counts holds a detected value: counters are entity types, language
codes, method names, operator names and field-name rules; errors name counts and types only.
"""
from __future__ import annotations

import json
import os
from collections import Counter

from .fields import field_rules, strip_value
from .lang import detect_language
from .operators import Operators
from .text import ENTITY_TYPES, Hit


class PiiPolicyError(Exception):
    """kvkk: strict and detected personal data above strict_score would remain. Counts and types only."""


class PiiStepError(RuntimeError):
    """The step failed; the message names the failure's type, never record content."""


_MAX_JSON_INT = 10 ** 6  # numbers below this cannot be an identifier we look for


class _Unit:
    """One string to analyze and where its anonymized form goes."""

    __slots__ = ("text", "setter", "kind", "loc")

    def __init__(self, text: str, setter, kind: str = "text", loc: tuple = ()):
        self.text = text
        self.setter = setter
        self.kind = kind
        self.loc = loc


class _FieldValue:
    """A value replaced whole because its field name says what it is (tool-call argument 'email': ...)."""

    __slots__ = ("entity", "rule", "value", "setter")

    def __init__(self, entity, rule, value, setter):
        self.entity, self.rule, self.value, self.setter = entity, rule, value, setter


class _Json:
    """A parsed JSON document whose strings (and long numbers, and keys) are analyzed."""

    def __init__(self, obj, rules, units: list, fields: list):
        self.obj = obj
        self.changed = False
        self._walk(obj, rules, units, fields)

    def _set(self, container, key):
        def setter(value):
            container[key] = value
            self.changed = True
        return setter

    def _walk(self, node, rules, units, fields):
        if isinstance(node, dict):
            for k, v in list(node.items()):
                m = rules.match(k) if rules is not None else None
                if m is not None and m[1] == "name":
                    m = None  # a tool's "name" argument is as often a file, city or product: analyze it
                if m is not None and v not in (None, "", [], {}) and not isinstance(v, (dict, list, bool)):
                    fields.append(_FieldValue(m[0], m[1], str(v), self._set(node, k)))
                    continue
                self._leaf(node, k, v, rules, units, fields)
            if any(isinstance(k, str) and len(k) >= 6 and any(ch.isdigit() or ch == "@" for ch in k) for k in node):
                units.append(_Unit("\n".join(k for k in node if isinstance(k, str)), self._rekey(node), "keys"))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                self._leaf(node, i, v, rules, units, fields)

    def _leaf(self, container, key, v, rules, units, fields):
        if isinstance(v, str):
            if v:
                units.append(_Unit(v, self._set(container, key)))
        elif isinstance(v, bool) or v is None:
            return
        elif isinstance(v, int) and abs(v) >= _MAX_JSON_INT:
            units.append(_Unit(str(v), self._set(container, key), "number"))
        elif isinstance(v, (dict, list)):
            self._walk(v, rules, units, fields)

    def _rekey(self, node: dict):
        def setter(joined: str):
            new_keys = joined.split("\n")
            old = [k for k in node if isinstance(k, str)]
            if len(new_keys) != len(old) or new_keys == old:
                return
            mapping = dict(zip(old, new_keys))
            items = list(node.items())
            node.clear()
            for k, v in items:
                nk = mapping.get(k, k) if isinstance(k, str) else k
                while nk in node:
                    nk += "_"
                node[nk] = v
            self.changed = True
        return setter


class PiiStep:
    """Strip, detect and anonymize personal data in a batch of canonical records.

    Engines are built lazily, once per process and language set (engine.get_detector). The salt stays in
    this object (and its Operators); it is never logged, counted or written.
    """

    name = "pii"

    def __init__(self, cfg, salt: bytes):
        unknown = sorted(set(cfg.operators) - set(ENTITY_TYPES))
        if unknown:
            raise ValueError(f"pii.operators: unknown entity types {unknown}; known: {list(ENTITY_TYPES)}")
        self.cfg = cfg
        self.ops = Operators(cfg.operator, cfg.operators, salt)
        self.rules = field_rules(tuple(cfg.strip_fields) if cfg.strip_fields is not None else None)
        self.languages = tuple(cfg.languages) or ("tr", "ru", "en")

    def __repr__(self) -> str:
        return f"PiiStep(languages={self.languages}, operator={self.cfg.operator!r})"

    @property
    def detector(self):
        from .engine import get_detector  # presidio is imported here, on first use

        return get_detector(self.languages)

    def process(self, batch: list[dict], stats) -> list[dict]:
        if not self.cfg.enabled:
            if self.cfg.kvkk == "strict":
                raise PiiPolicyError("kvkk strict: personal-data stripping (pii.enabled) is off")
            return batch
        try:
            return self._process(batch, stats)
        except PiiPolicyError:
            raise
        except Exception as exc:
            if os.environ.get("PREPARE_DEBUG") == "1":
                raise
            raise PiiStepError(f"pii step failed ({type(exc).__name__})") from None

    def findings(self, records: list[dict]) -> list[tuple[str, list[tuple[tuple, list[Hit], list[Hit]]]]]:
        """For evaluation and debugging: per record its language and, per content field (loc is
        ("messages", i, "content") or ("text",)), the spans process() would replace and the residual
        candidates. Same code path as process(), nothing is changed or counted."""
        from .engine import resolve

        collected = [self._collect(rec, _NullStats()) for rec in records]
        items = [(u.text, lang) for _, lang, units, _, _ in collected for u in units]
        found = iter(self.detector.detect(items))
        out = []
        for _, lang, units, _, _ in collected:
            per = []
            for u in units:
                kept, residual = resolve(next(found), self.cfg.score_threshold)
                if u.loc:
                    per.append((u.loc, kept, residual))
            out.append((lang, per))
        return out

    # ------------------------------------------------------------------------------------------------
    def _collect(self, rec: dict, stats):
        """A copy of the record with meta stripped, its language, and its units/field values."""
        new = dict(rec)
        units: list[_Unit] = []
        fields: list[_FieldValue] = []
        docs: list[tuple[_Json, object]] = []
        sample = []

        meta = rec.get("meta")
        meta_doc = None
        if meta:
            try:
                obj = json.loads(meta)
            except (TypeError, ValueError):
                obj = None
                units.append(_Unit(meta, lambda v: new.__setitem__("meta", v)))
            if isinstance(obj, (dict, list)):
                obj, removed, types = strip_value(obj, self.rules)
                for ent, rule in types:
                    stats.add(f"fields_stripped.{rule}")
                    stats.add(f"fields_stripped_types.{ent}")
                meta_doc = _Json(obj, None, units, fields)
                meta_doc.changed = bool(removed)
                docs.append((meta_doc, lambda d: new.__setitem__("meta", json.dumps(
                    d.obj, ensure_ascii=False, separators=(",", ":")))))
            elif obj is not None and isinstance(obj, str) and obj:
                units.append(_Unit(meta, lambda v: new.__setitem__("meta", v)))

        if rec.get("messages") is not None:
            msgs = [dict(m) for m in rec["messages"]]
            new["messages"] = msgs
            for i, m in enumerate(msgs):
                content = m.get("content")
                if isinstance(content, str) and content:
                    sample.append(content)
                    units.append(_Unit(content, _setter(m, "content"), loc=("messages", i, "content")))
                name = m.get("name")
                if isinstance(name, str) and name and m.get("role") != "tool":
                    units.append(_Unit(name, _setter(m, "name")))
                if m.get("tool_calls"):
                    m["tool_calls"] = [dict(tc) for tc in m["tool_calls"]]
                    for tc in m["tool_calls"]:
                        args = tc.get("arguments")
                        if not isinstance(args, str) or not args:
                            continue
                        try:
                            obj = json.loads(args)
                        except ValueError:
                            obj = None
                        if isinstance(obj, (dict, list)):
                            doc = _Json(obj, self.rules, units, fields)
                            docs.append((doc, _doc_setter(tc, "arguments")))
                        else:
                            units.append(_Unit(args, _setter(tc, "arguments")))
        text = rec.get("text")
        if isinstance(text, str) and text:
            sample.append(text)
            units.append(_Unit(text, _setter(new, "text"), loc=("text",)))
        lang = detect_language(" ".join(sample)[:3000] if sample else "", self.languages)
        return new, lang, units, fields, docs

    def _process(self, batch: list[dict], stats) -> list[dict]:
        from .engine import resolve

        cfg = self.cfg
        threshold = cfg.score_threshold
        strict = cfg.kvkk == "strict"
        collected = [self._collect(rec, stats) for rec in batch]
        items = []
        for _, lang, units, _, _ in collected:
            items.extend((u.text, lang) for u in units)
        detector = self.detector
        skipped_before, cached_before = detector.texts_skipped, detector.texts_cached
        found = detector.detect(items)
        stats.add("texts_scanned", len(items))
        stats.add("texts_skipped", detector.texts_skipped - skipped_before)
        stats.add("texts_cached", detector.texts_cached - cached_before)

        out = []
        violations: Counter = Counter()
        violating_records = 0
        pos = 0
        for new, lang, units, fields, docs in collected:
            stats.add(f"records_by_language.{lang}")
            plans = []
            found_types: list[tuple[str, str]] = []
            residuals: list[Hit] = []
            for u in units:
                hits = found[pos]
                pos += 1
                kept, residual = resolve(hits, threshold)
                if u.kind == "number":
                    # a number is replaced whole or not at all
                    kept = [Hit(0, len(u.text), h.entity, h.score, h.method) for h in kept[:1]]
                plans.append((u, kept))
                found_types.extend((h.entity, h.method) for h in kept)
                residuals.extend(residual)
            found_types.extend((f.entity, "field") for f in fields)
            for ent, method in found_types:
                stats.add(f"entities.{ent}")
                stats.add(f"languages.{lang}.{ent}")
                stats.add(f"methods.{ent}.{method}")
            if found_types:
                stats.add("records_with_pii")
            drop = any(self.ops.op_for(ent) == "drop" for ent, _ in found_types)
            if drop:
                stats.drop("pii_drop")
                stats.add("dropped_records")
                stats.add("actions.drop", len(found_types))
                continue
            rec_violations = 0
            for h in residuals:
                stats.add(f"residual.{h.entity}")
                if strict and h.score >= cfg.strict_score:
                    violations[h.entity] += 1
                    rec_violations += 1
            if rec_violations:
                violating_records += 1
            for ent, _ in found_types:
                stats.add(f"actions.{self.ops.op_for(ent)}")
            for u, kept in plans:
                if kept:
                    u.setter(self.ops.splice(u.text, kept, lang))
            for f in fields:
                f.setter(self.ops.replacement(f.entity, f.value, lang))
            for doc, setter in docs:
                if doc.changed:
                    setter(doc)
            out.append(new)
        if violations:
            total = sum(violations.values())
            kinds = ", ".join(f"{k}: {v}" for k, v in sorted(violations.items()))
            raise PiiPolicyError(
                f"kvkk strict: {total} detected personal data item(s) scored >= {cfg.strict_score} would remain "
                f"in the output of {violating_records} record(s) ({kinds}); they scored below "
                f"pii.score_threshold={threshold}. Lower the threshold to {cfg.strict_score} or below.")
        return out


class _NullStats:
    def add(self, key, n=1):
        pass


def _setter(container: dict, key: str):
    def setter(value):
        container[key] = value
    return setter


def _doc_setter(container: dict, key: str):
    def setter(doc: _Json):
        container[key] = json.dumps(doc.obj, ensure_ascii=False)
    return setter
