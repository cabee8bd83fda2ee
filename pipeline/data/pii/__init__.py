"""Personal-data stripping (KVKK; Turkish, Russian and English identifiers, names and contacts).

Entry points for the runner:
    PiiStep(cfg: PiiConfig, salt: bytes).process(batch) -> kept, anonymized records (counts in .stats)
    strip_fields(meta_json, fields) -> (meta_json, removed field names)
    kvkk_summary(counters, cfg) -> the report's "pii" section; render_kvkk_markdown(that) -> report.md's
    PiiPolicyError: kvkk="strict" and detected personal data above strict_score would remain

Entity types (placeholders are "<TYPE>"): see ENTITY_TYPES. Engine: Presidio AnalyzerEngine with this
package's recognizers on the no-op NLP engine (no model download); natasha for Russian names.
"""
from pipeline.core.env import import_presidio as _import_presidio
from pipeline.core.env import set_defaults as _set_defaults

_set_defaults()  # before any presidio import: no network
_import_presidio()  # without the torch it never uses: seconds of every process

from pipeline.data.pii.fields import strip_fields  # noqa: E402
from pipeline.data.pii.step import PiiPolicyError, PiiStep, PiiStepError  # noqa: E402
from pipeline.data.pii.summary import kvkk_summary, render_kvkk_markdown  # noqa: E402
from pipeline.data.pii.text import ENTITY_TYPES  # noqa: E402

__all__ = ["PiiStep", "PiiPolicyError", "PiiStepError", "strip_fields", "kvkk_summary", "render_kvkk_markdown",
           "ENTITY_TYPES"]
