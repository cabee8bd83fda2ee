"""The PII step: field stripping, detection, operators, counts, the KVKK summary and the strict policy.

Nothing this module logs, raises or counts holds a detected value: counters are entity types, language
codes, method names, operator names and field-name rules; errors name counts and types only.
"""
from __future__ import annotations

import json
import os
import re
from collections import Counter

from pipeline.core.errors import EXIT_POLICY, PrepareError
from pipeline.core.step import Step
from pipeline.data.lang import pii_language
from pipeline.data.pii import checks
from pipeline.data.pii.en_beside_a_name import subjects_beside_a_name as en_subjects_beside_a_name
from pipeline.data.pii.en_found_again import found_again
from pipeline.data.pii.en_names import english_names
from pipeline.data.pii.en_subject import may_hold_subject as may_hold_en_subject
from pipeline.data.pii.fields import field_rules, strip_value
from pipeline.data.pii.found_partner import found_partners
from pipeline.data.pii.lang import detect_language
from pipeline.data.pii.mentions import NameBook, drop_named_things, expand, find_mentions, lone_first_name_surnames
from pipeline.data.pii.name_context import sentence_initial
from pipeline.data.pii.name_signals import code_spans, outside
from pipeline.data.pii.operators import Operators
from pipeline.data.pii.ru_names_pass import russian_names
from pipeline.data.pii.ru_subject import may_hold_subject
from pipeline.data.pii.ru_subject import subjects_beside_a_name as ru_subjects_beside_a_name
from pipeline.data.pii.special import get_special_detector, record_special, strict_message
from pipeline.data.pii.text import Hit
from pipeline.data.pii.tr_beside_a_name import subjects_beside_a_name as tr_subjects_beside_a_name
from pipeline.data.readers import too_deep


class PiiPolicyError(PrepareError):
    """kvkk: strict and detected personal data above strict_score would remain. Counts and types only."""

    exit_code = EXIT_POLICY

    def user_line(self) -> str:
        return f"kvkk strict policy: {super().user_line()}"


class PiiStepError(RuntimeError):
    """The step failed; the message names the failure's type, never record content."""


_MAX_JSON_INT = 10 ** 6  # numbers below this cannot be an identifier we look for
_WALK_DEPTH = 300  # containers deep, JSON found in strings included: about 600 frames of the 1000 Python allows
# record columns not scanned: a content hash, an enum, and the source reference (file names are data to the
# runner, which redacts them where they are written)
_NOT_SCANNED = frozenset(("id", "kind", "source"))
# a message's and a tool call's own keys, fixed by the record schema (tool calls in both shapes); any other
# key is scanned as data
_MESSAGE_KEYS = frozenset(("role", "content", "tool_calls", "tool_call_id", "name"))
_CALL_KEYS = frozenset(("type", "id", "function", "name", "arguments"))
# a field named as a person ("recipient", "sender", "username") whose value is an e-mail address or a phone:
# the value's type is what it is
_EMAIL_VALUE = re.compile(r"[^@\s<>]+@[^@\s<>]+\.[^\W\d_]{2,}")
_PHONE_VALUE = re.compile(r"\+?[\d ()\-.]{10,20}")
_INERT_META_KEPT = 4096  # distinct inert meta texts a step remembers
_GUESS_CHARS = 3000  # of a record's content the language guess is given (it reads the first 600)


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


class _Doc:
    """A JSON document held as text in the record (meta, tool-call arguments written as a string): written
    back, serialized, when anything inside it was replaced."""

    __slots__ = ("obj", "changed", "setter")

    def __init__(self, obj, setter):
        self.obj = obj
        self.changed = False
        self.setter = setter


class _Walk:
    """Every string of one record that is written out, keys included: the units to analyze, the values
    replaced by their field name, and how the replacements go back in.

    Generic over nested dicts and lists (the tool-call and tool-definition shapes are data here, not code):
    the walk copies each container it enters, so the input record is never changed, and every setter writes
    into the copy. A dict key that holds personal data is renamed to its replacement, in place and in its
    position, after all values are set (a value's setter addresses its slot by the old key); a replacement
    that collides with another key gets "_" appended, so no value is lost. A string that holds a JSON
    object or array is parsed and walked, and serialized again only when something in it changed.
    """

    __slots__ = ("units", "fields", "docs", "renames", "doc_rules", "worth", "level")

    def __init__(self, doc_rules=None, worth=None):
        # the detector's prefilter: a key or value it would skip ("type", "string") becomes no unit at all
        self.worth = worth or (lambda text: True)
        self.level = 0  # containers entered
        # the field-name rules for a JSON document found inside a string: its values are analyzed one by one,
        # without the key beside them that a context word would have been ('{"inn": "7707083893"}' as text)
        self.doc_rules = doc_rules
        self.units: list[_Unit] = []
        self.fields: list[_FieldValue] = []
        self.docs: list[_Doc] = []  # innermost first: a document inside another is serialized before it
        self.renames: dict[int, tuple[dict, dict, _Doc | None]] = {}

    # -- collecting --
    def value(self, v, rules, doc, set_back):
        """The copy of `v` to write, with its strings registered; `set_back(new)` replaces `v` itself (a string
        or a long number) in its container."""
        if isinstance(v, str):
            if v:
                self.string(v, rules, doc, set_back)
            return v
        if isinstance(v, bool) or v is None:
            return v
        if isinstance(v, int):
            if abs(v) >= _MAX_JSON_INT:
                self.units.append(_Unit(str(v), _marking(set_back, doc), "number"))
            return v
        if isinstance(v, (dict, list)):
            self.level += 1
            try:
                if isinstance(v, dict):
                    return self.mapping(v, rules, doc)
                out = list(v)
                for i, item in enumerate(v):
                    out[i] = self.value(item, rules, doc, _slot(out, i))
                return out
            finally:
                self.level -= 1
        return v

    def mapping(self, node: dict, rules, doc) -> dict:
        out = dict(node)
        for k, v in node.items():
            m = rules.match(k) if rules is not None and isinstance(k, str) else None
            if m is not None and m[1] == "name":
                m = None  # a tool's "name" argument is as often a file, city or product: analyze it
            if m is not None and v not in (None, "", [], {}) and not isinstance(v, (dict, list, bool)):
                self.fields.append(_FieldValue(m[0], m[1], str(v), _marking(_slot(out, k), doc)))
            else:
                out[k] = self.value(v, rules, doc, _slot(out, k))
        for k in node:
            if isinstance(k, str) and self.worth(k):
                self.units.append(_Unit(k, self.renamer(out, k, doc), "key"))
        return out

    def string(self, text: str, rules, doc, set_back) -> None:
        """A string value: a JSON object or array in it is walked as a document, anything else analyzed."""
        head = text.lstrip()[:1]
        if head in ("{", "["):
            try:
                obj = json.loads(text)
            except (ValueError, RecursionError):
                obj = None
            # the reader bounds a record's nesting, not that of JSON inside its strings: a document that
            # would take the walk past _WALK_DEPTH levels (two frames each) is analyzed as text instead
            if isinstance(obj, (dict, list)) and not too_deep(obj, _WALK_DEPTH - self.level):
                write = _marking(set_back, doc)
                inner = _Doc(None, lambda o: write(json.dumps(o, ensure_ascii=False)))
                inner.obj = self.value(obj, rules or self.doc_rules, inner, None)
                self.docs.append(inner)
                return
        if self.worth(text):
            self.units.append(_Unit(text, _marking(set_back, doc)))

    def renamer(self, node: dict, key: str, doc):
        def setter(new_key: str):
            if new_key != key:
                self.renames.setdefault(id(node), (node, {}, doc))[1][key] = new_key
        return setter

    # -- writing back --
    def finish(self) -> None:
        """After every unit and field value is set: rename keys, then serialize the changed documents."""
        for node, mapping, doc in self.renames.values():
            items = list(node.items())
            kept = {k for k in node if k not in mapping}
            node.clear()
            for k, v in items:
                nk = k
                if k in mapping:
                    nk = mapping[k]
                    while nk in kept or nk in node:
                        nk += "_"
                node[nk] = v
            if doc is not None:
                doc.changed = True
        for d in self.docs:
            if d.changed:
                d.setter(d.obj)


def _slot(container, key):
    def setter(value):
        container[key] = value
    return setter


def _marking(setter, doc):
    """`setter`, also marking the enclosing document changed."""
    if doc is None:
        return setter

    def mark(value):
        setter(value)
        doc.changed = True
    return mark


class PiiStep(Step):
    """Strip, detect and anonymize personal data in a batch of canonical records.

    Engines are built lazily, once per process and language set (engine.get_detector). The salt stays in
    this object (and its Operators); it is never logged, counted or written.
    """

    name = "pii"
    config_sections = ("pii",)

    def __init__(self, cfg, salt: bytes):
        self.cfg = cfg  # validated by PiiConfig: known entity types; kvkk strict only with the step on
        self.ops = Operators(cfg.operator, cfg.operators, salt)
        self.rules = field_rules(tuple(cfg.strip_fields) if cfg.strip_fields is not None else None)
        self.languages = tuple(cfg.languages) or ("tr", "ru", "en")
        self.special = get_special_detector(self.languages)
        self._inert_meta: set[str] = set()  # meta texts seen to hold nothing the step strips, analyzes or writes

    def __repr__(self) -> str:
        return f"PiiStep(languages={self.languages}, operator={self.cfg.operator!r})"

    @property
    def detector(self):
        from pipeline.data.pii.engine import get_detector  # presidio is imported here, on first use

        return get_detector(self.languages)

    def process(self, batch: list[dict]) -> list[dict]:
        try:
            return self._process(batch, self.stats)
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
        collected = [self._collect(rec, _NullStats()) for rec in records]
        found = iter(self.detector.detect(_items(collected)))
        out = []
        for c in collected:
            plans, _ = self._plan(c.units, c.fields, found, c.lang)
            out.append((c.lang, [(u.loc, kept, residual) for u, kept, residual in plans if u.loc]))
        return out

    def _plan(self, units: list, fields: list, found, lang: str, no_subject=frozenset()):
        """The spans to replace in each unit of one record (found: an iterator over the units' raw hits) and
        the record's NameBook. A PERSON span covers the whole name (initials, particles); every other mention
        of a detected name in the record (any unit: turns, tool arguments, tool definitions, keys) is a span
        too; residual candidates that such a span now covers are no longer residual. `no_subject`: (text, language)
        of the English and Russian texts known to hold no subject (en_subject / ru_subject.may_hold_subject)."""
        from pipeline.data.pii.engine import resolve  # presidio: on first use

        threshold = self.cfg.score_threshold
        plans = []
        for u in units:
            raw = next(found)
            code = code_spans(u.text) if u.kind != "number" and raw else []
            # code and URLs are not searched for names: identifiers in them still are
            kept, residual = resolve(outside(raw, code), threshold)
            if u.kind == "number":
                # a number is replaced whole or not at all
                kept = [Hit(0, len(u.text), h.entity, h.score, h.method) for h in kept[:1]]
            else:
                kept = expand(u.text, drop_named_things(u.text, kept))
                if lang == "en":
                    kept = english_names(u.text, kept, (u.text, lang) not in no_subject)
                elif lang == "ru":
                    kept = russian_names(u.text, kept, (u.text, lang) not in no_subject)
            plans.append([u, kept, residual, code])
        for f in fields:
            if f.entity in ("PERSON", "USER_ID"):
                value = f.value.strip()
                if _EMAIL_VALUE.fullmatch(value):
                    f.entity = "EMAIL"
                elif _PHONE_VALUE.fullmatch(value) and checks.phone_region(value, lang) is not None:
                    f.entity = "PHONE"
        book = NameBook()
        for u, kept, _, _ in plans:
            for h in kept:
                if h.entity == "PERSON":
                    # a label's value ("Alıcı: Edip Melek") opens no sentence: its first word stays a name's, as
                    # does that of a Turkish subject pair, read as a name word by its rule ("Selimm Miralamov aradı")
                    book.add(u.text[h.start:h.end], u.text[h.end:h.end + 8], sentence_initial(u.text, h.start)
                             and not u.text[:h.start].rstrip(" \t\u00a0").endswith(":") and h.method != "lower_subject")
        for f in fields:
            if f.entity == "PERSON":
                book.add(f.value)
        if book and lang in _BESIDE_A_NAME:
            _subjects_beside_a_name(plans, book, _BESIDE_A_NAME[lang])
            _found_partners(plans, book, lang)
        if book:
            for p in plans:
                u, kept, residual, code = p
                if u.kind == "number":
                    continue
                taken = kept + [Hit(s, e, "CODE", 0.0, "code") for s, e in code]
                extra = find_mentions(u.text, book, taken)
                if lang == "en":
                    extra += lone_first_name_surnames(u.text, book, taken + extra)
                    extra += found_again(u.text, book, taken + extra)
                if extra:
                    p[1] = kept = expand(u.text, kept + extra)
                    p[2] = [r for r in residual if not any(r.start < k.end and k.start < r.end for k in kept)]
        return [p[:3] for p in plans], book

    # ------------------------------------------------------------------------------------------------
    def _collect(self, rec: dict, stats) -> "_Collected":
        """A copy of the record with meta stripped, its language, its units and field values, and the walk that
        writes the replacements back."""
        new = dict(rec)
        from pipeline.data.pii.engine import may_hold_pii  # presidio: on first use

        walk = _Walk(self.rules, may_hold_pii)
        sample = self._walk_columns(rec, new, walk, stats)
        return _Collected(new, self._language(rec, sample), walk)

    def _walk_columns(self, rec: dict, new: dict, walk: "_Walk", stats) -> list[str]:
        """Every column that is written is walked except id (a hash), kind (an enum) and source (a file
        reference, redacted where file names are handled); "_" columns are never written. Returns the
        content strings, in order, that the language guess reads."""
        sample: list[str] = []
        for col, value in rec.items():
            if col in _NOT_SCANNED or col.startswith("_") or value is None:
                continue
            if col == "meta":
                self._meta(new, value, walk, stats)
            elif col == "text" and isinstance(value, str):
                if value:
                    sample.append(value)
                    walk.units.append(_Unit(value, _slot(new, "text"), loc=("text",)))
            elif col == "messages" and isinstance(value, list):
                new["messages"] = [self._message(i, m, walk, sample) if isinstance(m, dict)
                                   else walk.value(m, None, None, None) for i, m in enumerate(value)]
            else:  # tools, and any column added later
                new[col] = walk.value(value, None, None, _slot(new, col))
        return sample

    def _language(self, rec: dict, sample: list[str]) -> str:
        """The language step's result when it ran (pipeline/data/lang.py), else a stop-word guess on the content."""
        lang = pii_language(rec, self.languages)
        if lang:
            return lang
        return detect_language(_head(sample, _GUESS_CHARS), self.languages)

    def _message(self, i: int, m: dict, walk: "_Walk", sample: list) -> dict:
        out = dict(m)
        for k, v in m.items():
            if k == "role":
                continue  # an enum the schema checks
            if k == "content" and isinstance(v, str):
                if v:
                    sample.append(v)
                    walk.units.append(_Unit(v, _slot(out, "content"), loc=("messages", i, "content")))
            elif k == "tool_calls" and isinstance(v, list):
                out[k] = [self._tool_call(tc, walk) if isinstance(tc, dict) else walk.value(tc, None, None, None)
                          for tc in v]
            else:  # name (of a tool result too), tool_call_id, and any key added later
                out[k] = walk.value(v, None, None, _slot(out, k))
        for k in m:
            if isinstance(k, str) and k not in _MESSAGE_KEYS and walk.worth(k):
                walk.units.append(_Unit(k, walk.renamer(out, k, None), "key"))
        return out

    def _tool_call(self, tc: dict, walk: "_Walk") -> dict:
        """A tool call in either shape, {"name", "arguments"} or {"type", "id", "function": {"name",
        "arguments"}}: the arguments are walked with the field-name rules, everything else plainly."""
        out = dict(tc)
        for k, v in tc.items():
            if k == "arguments":
                out[k] = walk.value(v, self.rules, None, _slot(out, k))
            elif k == "function" and isinstance(v, dict):
                out[k] = self._tool_call(v, walk)
            else:
                out[k] = walk.value(v, None, None, _slot(out, k))
        for k in tc:
            if isinstance(k, str) and k not in _CALL_KEYS and walk.worth(k):
                walk.units.append(_Unit(k, walk.renamer(out, k, None), "key"))
        return out

    def _meta(self, new: dict, meta, walk: "_Walk", stats) -> None:
        """meta is a JSON object as text: fields named as personal data are removed (counted by rule), the
        rest walked; written back compact when anything changed."""
        if not isinstance(meta, str):
            new["meta"] = walk.value(meta, None, None, _slot(new, "meta"))
            return
        if not meta or meta in self._inert_meta:
            return  # nothing in it to strip, analyze or write back ('{"lang": "tr"}' in every record of a file)
        try:
            obj = json.loads(meta)
        except (TypeError, ValueError):
            walk.units.append(_Unit(meta, _slot(new, "meta")))
            return
        if isinstance(obj, (dict, list)):
            obj, removed, types = strip_value(obj, self.rules)
            for ent, rule in types:
                stats.add(f"fields_stripped.{rule}")
                stats.add(f"fields_stripped_types.{ent}")
            doc = _Doc(None, lambda o: new.__setitem__("meta", json.dumps(o, ensure_ascii=False,
                                                                           separators=(",", ":"))))
            before = (len(walk.units), len(walk.fields), len(walk.docs), len(walk.renames))
            doc.obj = walk.value(obj, None, doc, None)
            doc.changed = bool(removed)
            walk.docs.append(doc)
            if not removed and before == (len(walk.units), len(walk.fields), len(walk.docs) - 1, len(walk.renames)) \
                    and len(self._inert_meta) < _INERT_META_KEPT:
                self._inert_meta.add(meta)
        elif isinstance(obj, str) and obj:
            walk.units.append(_Unit(meta, _slot(new, "meta")))
        elif isinstance(obj, int) and not isinstance(obj, bool) and abs(obj) >= _MAX_JSON_INT:
            walk.units.append(_Unit(meta, _slot(new, "meta"), "number"))

    def _process(self, batch: list[dict], stats) -> list[dict]:
        """Collect every record's strings, detect in one batch, then per record: the special-category policy,
        the counts, the drop operator, the strict residuals and the write-back; the strict policy last."""
        collected = [self._collect(rec, stats) for rec in batch]
        scanned = _WhileScanned(self.special, {u.text for c in collected for u in c.units if u.kind == "text"})
        found = iter(self._detect(collected, stats, scanned.each))
        tally = _Tally()
        out = []
        for c in collected:
            new = self._record(c, found, stats, tally, scanned)
            if new is not None:
                out.append(new)
        self._enforce(tally)
        return out

    def _detect(self, collected: list["_Collected"], stats, each=None) -> list[list[Hit]]:
        """The raw hits of every unit of the batch, in order; counts the texts scanned, skipped and cached.
        `each(text, ctx)` is called for each text scanned (Detector.detect)."""
        items = _items(collected)
        detector = self.detector
        skipped_before, cached_before = detector.texts_skipped, detector.texts_cached
        found = detector.detect(items, each)
        stats.add("texts_scanned", len(items))
        stats.add("texts_skipped", detector.texts_skipped - skipped_before)
        stats.add("texts_cached", detector.texts_cached - cached_before)
        return found

    def _record(self, c: "_Collected", found, stats, tally: "_Tally", scanned: "_WhileScanned | None" = None) \
            -> dict | None:
        """One record's anonymized copy, or None when the special-category policy or a drop operator removes it.
        `scanned`: what was learnt of the texts while the detector scanned them."""
        stats.add(f"records_by_language.{c.lang}")
        plans, book = self._plan(c.units, c.fields, found, c.lang, scanned.no_subject if scanned else frozenset())
        if self._special_removes(c, stats, tally, scanned.found.get if scanned else None):
            return None
        found_types = self._count_found(plans, c.fields, c.lang, stats)
        if any(self.ops.op_for(ent) == "drop" for ent, _ in found_types):
            stats.drop("pii_drop")
            stats.add("dropped_records")
            stats.add("actions.drop", len(found_types))
            return None
        self._check_residuals(plans, stats, tally)
        for ent, _ in found_types:
            stats.add(f"actions.{self.ops.op_for(ent)}")
        self._write_back(c, plans, book)
        return c.new

    def _special_removes(self, c: "_Collected", stats, tally: "_Tally", special_of=None) -> bool:
        """Counts the record's KVKK art. 6 mentions; True when pii.special drops or quarantines it. Mentions
        that stay in the output are tallied for the strict policy."""
        special = record_special(self.special, (u.text for u in c.units if u.kind == "text"), c.lang, stats,
                                 special_of)
        if not special:
            return False
        if self.cfg.special != "report":
            if self.cfg.special == "drop":
                stats.drop("pii_special")
            else:
                stats.quarantine("pii_special_review")
            return True
        tally.special_left.update(special)
        tally.special_records += 1
        return False

    @staticmethod
    def _count_found(plans, fields, lang: str, stats) -> list[tuple[str, str]]:
        """(entity, method) of every span and field value to replace, counted by type, language and method."""
        found_types: list[tuple[str, str]] = []
        for _, kept, _ in plans:
            found_types.extend((h.entity, h.method) for h in kept)
        found_types.extend((f.entity, "field") for f in fields)
        for ent, method in found_types:
            stats.add(f"entities.{ent}")
            stats.add(f"languages.{lang}.{ent}")
            stats.add(f"methods.{ent}.{method}")
        if found_types:
            stats.add("records_with_pii")
        return found_types

    def _check_residuals(self, plans, stats, tally: "_Tally") -> None:
        """Counts the candidates left in the text; under kvkk: strict those scored >= strict_score are
        violations."""
        strict = self.cfg.kvkk == "strict"
        rec_violations = 0
        for _, _, residual in plans:
            for h in residual:
                stats.add(f"residual.{h.entity}")
                if strict and h.score >= self.cfg.strict_score:
                    tally.violations[h.entity] += 1
                    rec_violations += 1
        if rec_violations:
            tally.violating_records += 1

    def _write_back(self, c: "_Collected", plans, book) -> None:
        """The operators' replacements into the record's copy: spans into their units, whole field values,
        then the renamed keys and the changed JSON documents."""
        canon = book.canonical if book else None
        for u, kept, _ in plans:
            if kept:
                u.setter(self.ops.splice(u.text, kept, c.lang, canon))
        for f in c.fields:
            f.setter(self.ops.replacement(f.entity, f.value, c.lang, canon))
        c.walk.finish()

    def _enforce(self, tally: "_Tally") -> None:
        """kvkk: strict refuses a batch whose output would keep special-category mentions or residuals
        scored >= strict_score."""
        cfg = self.cfg
        if cfg.kvkk == "strict" and tally.special_left:
            raise PiiPolicyError(strict_message(tally.special_left, tally.special_records))
        if tally.violations:
            total = sum(tally.violations.values())
            kinds = ", ".join(f"{k}: {v}" for k, v in sorted(tally.violations.items()))
            raise PiiPolicyError(
                f"kvkk strict: {total} detected personal data item(s) scored >= {cfg.strict_score} would remain "
                f"in the output of {tally.violating_records} record(s) ({kinds}); they scored below "
                f"pii.score_threshold={cfg.score_threshold}. Lower the threshold to {cfg.strict_score} or below.")


class _Collected:
    """One record ready for detection: its copy to write into, its language, and the walk over its strings."""

    __slots__ = ("new", "lang", "walk")

    def __init__(self, new: dict, lang: str, walk: _Walk):
        self.new, self.lang, self.walk = new, lang, walk

    @property
    def units(self) -> list[_Unit]:
        return self.walk.units

    @property
    def fields(self) -> list[_FieldValue]:
        return self.walk.fields


class _Tally:
    """What the strict policy judges over a batch: residual violations and special-category mentions kept."""

    __slots__ = ("violations", "violating_records", "special_left", "special_records")

    def __init__(self):
        self.violations: Counter = Counter()
        self.violating_records = 0
        self.special_left: Counter = Counter()  # KVKK art. 6 mentions that stay in the output
        self.special_records = 0


def _items(collected: list[_Collected]) -> list[tuple[str, str]]:
    """(text, language) of every unit of the batch, in order: what the detector scans."""
    return [(u.text, c.lang) for c in collected for u in c.units]


def _head(parts: list[str], n: int) -> str:
    """" ".join(parts)[:n], joining only the parts that reach into the first n characters."""
    size, k = 0, 0
    while k < len(parts) and size < n:
        size += len(parts[k]) + 1
        k += 1
    return " ".join(parts[:k])[:n]


class _NullStats:
    def add(self, key, n=1):
        pass


# per language: the words that are names only in a record that already names a person
_BESIDE_A_NAME = {"en": en_subjects_beside_a_name, "ru": ru_subjects_beside_a_name, "tr": tr_subjects_beside_a_name}


def _subjects_beside_a_name(plans: list, book: NameBook, finder) -> None:
    """In a record that names a person, the words `finder` takes there (en_beside_a_name, ru_subject) join the
    plans and the book before the record's mentions are searched ("Едена перезвонит" makes the greeting
    "Едена, добрый вечер!" a mention too)."""
    for p in plans:
        u, kept, _, code = p
        if u.kind == "number":
            continue
        taken = [(k.start, k.end) for k in kept] + code
        new = [h for h in finder(u.text) if not any(h.start < e and s < h.end for s, e in taken)]
        for h in new:
            book.add(u.text[h.start:h.end], u.text[h.end:h.end + 8], True)
        if new:
            p[1] = sorted(kept + new, key=lambda h: h.start)


def _found_partners(plans: list, book: NameBook, lang: str) -> None:
    """The other words of the book's names in lower case or capitals, and the words before them that open their
    clause (found_partner) join the plans and the book before the record's mentions are searched: "ZULFIQAR FLEET
    CALLED" makes "Fleet's order" a mention too. A second pass where the first added a word: a mention before
    the words found ("рус сарсенов звонил" ... "Рус Смадиярович просил")."""
    for _ in range(2):
        grown = False
        for p in plans:
            u, kept, _, code = p
            if u.kind == "number":
                continue
            new = found_partners(u.text, lang, book, kept + [Hit(s, e, "CODE", 0.0, "code") for s, e in code])
            for h in new:
                # the word before the name was taken as its first word for what follows it: kept at a sentence start
                book.add(u.text[h.start:h.end], u.text[h.end:h.end + 8])
            if new:
                grown = True
                p[1] = kept = expand(u.text, kept + new)
                p[2] = [r for r in p[2] if not any(r.start < k.end and k.start < r.end for k in kept)]
        if not grown:
            return


class _WhileScanned:
    """What the step learns of each text while the detector scans it (`each`), from the views the detector
    computed: the special-category mentions of the texts in `wanted` (the words it split the text into answer
    the lexicon's word test; found nothing: the empty tuple, no object kept per text), and the English and
    Russian texts that hold no subject (en_subject / ru_subject.may_hold_subject: their subject pass is
    skipped)."""

    __slots__ = ("detector", "found", "no_subject", "wanted")

    def __init__(self, detector, wanted: set):
        self.detector, self.wanted, self.found, self.no_subject = detector, wanted, {}, set()

    def each(self, text: str, ctx) -> None:
        if text in self.wanted:
            self.found[text] = self.detector.find(text, ctx.folded_words) or ()
        if ctx.lang == "ru" and not may_hold_subject(ctx.words) \
                or ctx.lang == "en" and not may_hold_en_subject(ctx):
            self.no_subject.add((text, ctx.lang))  # the same text in a record of another language is scanned apart
