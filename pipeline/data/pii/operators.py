"""What happens to a detected span: a typed placeholder, a mask, a salted pseudonym, or dropping the record.

Replacement goes through presidio-anonymizer's AnonymizerEngine with one custom operator per entity type,
so the text surgery (overlaps, offsets) is Presidio's. The pseudonym is an HMAC-SHA256 of the entity type
and the normalized value under the run's salt: the same value gives the same token in every batch and every
worker process that has the same salt, and nothing else does. The salt lives only in this object.
"""
from __future__ import annotations

import hashlib
import hmac
import re

from pipeline.data.pii import checks
from pipeline.data.pii.text import Hit, fold

OPERATORS = ("placeholder", "mask", "pseudonym", "drop")
PSEUDONYM_HEX = 10  # 40 bits: collisions stay unlikely up to ~10^5 distinct values per type

_SPACES = re.compile(r"\s+")
_ALNUM = re.compile(r"[^\W_]", re.UNICODE)


def normalize(entity: str, value: str, lang: str = "en") -> str:
    """The form a value is pseudonymized in, so that writing variants map to one token."""
    if entity == "PHONE":
        return checks.phone_e164(value, lang) or checks.digits(value)
    if entity in ("TCKN", "VKN", "INN", "SNILS", "OGRN", "OGRNIP", "CREDIT_CARD"):
        return checks.digits(value)
    if entity in ("IBAN", "PASSPORT", "LICENSE_PLATE"):
        return "".join(ch for ch in value.upper() if ch.isalnum())
    if entity == "EMAIL":
        return value.strip().lower()
    return _SPACES.sub(" ", fold(value).strip())


class Operators:
    def __init__(self, default: str, per_entity: dict[str, str], salt: bytes):
        if default not in OPERATORS:
            raise ValueError(f"unknown pii operator {default!r}")
        for ent, op in per_entity.items():
            if op not in OPERATORS:
                raise ValueError(f"unknown pii operator {op!r} for {ent}")
        self.default = default
        self.per_entity = dict(per_entity)
        self._salt = bytes(salt or b"")
        if not self._salt and self.uses("pseudonym"):
            raise ValueError("the pseudonym operator needs a salt (set the environment variable named by "
                             "pii.salt_env); without one pseudonyms could be reversed by brute force")
        self._engine = None

    def __repr__(self) -> str:  # never show the salt
        return f"Operators(default={self.default!r}, per_entity={self.per_entity!r})"

    def uses(self, op: str) -> bool:
        return self.default == op or op in self.per_entity.values()

    def op_for(self, entity: str) -> str:
        return self.per_entity.get(entity, self.default)

    def pseudonym(self, entity: str, value: str, lang: str = "en") -> str:
        msg = entity.encode() + b"\x00" + normalize(entity, value, lang).encode("utf-8", "surrogatepass")
        digest = hmac.new(self._salt, msg, hashlib.sha256).hexdigest()[:PSEUDONYM_HEX]
        return f"<{entity}_{digest}>"

    @staticmethod
    def mask(value: str) -> str:
        return _ALNUM.sub("*", value)

    def replacement(self, entity: str, value: str, lang: str = "en", canon=None) -> str:
        """`canon(value)`, when given, is the value a PERSON's pseudonym is made of: the fullest name of the
        person in the record, so that "Miller" and "John F. Miller" get one token."""
        op = self.op_for(entity)
        if op == "mask":
            return self.mask(value)
        if op == "pseudonym":
            return self.pseudonym(entity, canon(value) if canon is not None and entity == "PERSON" else value, lang)
        return f"<{entity}>"  # placeholder (and the text of a record that "drop" removes anyway)

    def _anonymizer(self):
        if self._engine is None:
            from presidio_anonymizer import AnonymizerEngine

            self._engine = AnonymizerEngine()
        return self._engine

    def apply(self, text: str, hits: list[Hit], lang: str = "en") -> str:
        """`text` with every span of `hits` (non-overlapping) replaced."""
        if not hits:
            return text
        from presidio_anonymizer.entities import OperatorConfig, RecognizerResult

        results = [RecognizerResult(h.entity, h.start, h.end, h.score) for h in hits]
        ops = {}
        for ent in {h.entity for h in hits}:
            ops[ent] = OperatorConfig("custom", {"lambda": self._lambda(ent, lang)})
        return self._anonymizer().anonymize(text=text, analyzer_results=results, operators=ops).text

    def _lambda(self, entity: str, lang: str):
        def replace(value: str) -> str:
            return self.replacement(entity, value, lang)
        return replace

    def splice(self, text: str, hits: list[Hit], lang: str = "en", canon=None) -> str:
        """The same result as apply() without the anonymizer engine (used for JSON leaves and keys)."""
        out = []
        pos = 0
        for h in sorted(hits, key=lambda h: h.start):
            out.append(text[pos:h.start])
            out.append(self.replacement(h.entity, text[h.start:h.end], lang, canon))
            pos = h.end
        out.append(text[pos:])
        return "".join(out)
