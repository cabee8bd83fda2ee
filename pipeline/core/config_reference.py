"""docs/configuration.md, generated from the config model (PrepareConfig): each section, each field with its
type, default, bounds and description. `make docs` writes it; tests/core/test_docs.py fails when it is stale, so the
reference cannot drift from the code. Edit a field's description in pipeline/core/config.py, not the page."""
from __future__ import annotations

import json
import re
import sys
import types
import typing
from pathlib import Path

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from pipeline.core.config import PrepareConfig, Section

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"

# How the file is read and merged: behaviour of load_config/merge_config/contradictions, stated once, here.
INTRO = """\
# Configuration reference

<!-- Generated from pipeline/core/config.py by `make docs` (pipeline/core/config_reference.py); do not edit by hand:
tests/core/test_docs.py fails when this page differs from the model. -->

One pydantic model, `pipeline.core.config.PrepareConfig`, is the CLI's `--config` file (JSON or YAML), the Prefect
deployment's parameter `params` (validated by the server) and `schemas/config.schema.json` (generated from it
by `make schemas`; a test keeps them in sync). This page is generated from the same model.

- Every step is on by default and can be turned off (`"pii": {"enabled": false}` or `--no-pii`).
- Flags that stand for a config field (`--model`, `--epochs`, `--coverage`, `--workers`, `--no-pii`, ...)
  override the `--config` file key by key, and only when given; `prepare run --help` names each flag's key and
  default. Inputs may come from the file's `inputs` instead of the command line.
- Unknown keys (a typo names the close match), values out of range (integers are at most 2^53, floats finite)
  and YAML anchors or aliases (`&a`/`*a`: a 1 KB file of nested aliases expands to gigabytes) are refused in
  one line naming the key. A config file is at most 1 MB.
- Settings that another setting turns off are refused when the config is read, naming both keys (or the
  flag): `pii.kvkk: strict` or `pii.special: drop|quarantine` with PII off, `lengths.overflow` other than
  `keep` with lengths off, `validation_inputs` with dedup off (or with both `dedup.exact` and `dedup.near`
  off), `formats.mapping` with a fixed `formats.format`, quality `strip`/`drop`/`cap` actions with quality
  off, and `filters.languages` or `filters.lang_mismatch: drop` with `filters.detect_language: false`.
- A deployment run's `params` may name only some fields: they are merged over the served ones field by field,
  section by section; a list or a mapping (`formats.mapping`) is replaced whole (see [prefect.md](prefect.md)).

Example (YAML):

```yaml
inputs: [data/crm]
out: runs/crm-v1
s3: s3://bucket/datasets/crm-v1
pii: {operator: pseudonym, kvkk: strict}
lengths: {coverage: 0.995}
estimate: {model: llama-3.1-8b, method: qlora, epochs: 2}
```
"""

# Where each section's behaviour is explained in prose (the reference says what a field is, not how it acts).
SECTION_DOCS = {"read": "formats.md", "formats": "formats.md", "quality": "stages.md#quality-checks",
                "dedup": "stages.md#dedup", "pii": "pii.md",
                "lengths": "stages.md#token-lengths", "filters": "stages.md#languages", "split": "stages.md#languages",
                "write": "run-directory.md", "estimate": "estimator.md"}


def render() -> str:
    """The whole page: the top-level fields, then one table per section in the model's order."""
    sections = {name: f.annotation for name, f in PrepareConfig.model_fields.items() if _is_section(f)}
    top = [name for name in PrepareConfig.model_fields if name not in sections]
    parts = [INTRO, "## Top level\n", _table(PrepareConfig, top, "")]
    for name, model in sections.items():
        parts.append(f"## `{name}`\n")
        doc = model.__dict__.get("__doc__")  # a section's own docstring, not Section's
        if doc:
            parts.append(" ".join(doc.split()) + "\n")
        if name in SECTION_DOCS:
            parts.append(f"More: [{SECTION_DOCS[name].split('#')[0]}]({SECTION_DOCS[name]}).\n")
        parts.append(_table(model, list(model.model_fields), f"{name}."))
    return "\n".join(parts)


def _is_section(field: FieldInfo) -> bool:
    return isinstance(field.annotation, type) and issubclass(field.annotation, Section)


def _table(model: type[BaseModel], names: list[str], prefix: str) -> str:
    defaults = model().model_dump(mode="json")
    rows = ["| key | type | default | description |", "|---|---|---|---|"]
    for name in names:
        field = model.model_fields[name]
        cells = [f"`{prefix}{name}`", _type_name(field.annotation) + _bounds(field),
                 _default(name, defaults[name]), field.description or ""]
        rows.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(rows) + "\n"


def _type_name(annotation) -> str:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return " \\| ".join(f"`{json.dumps(a)}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join("null" if a is type(None) else _type_name(a) for a in args)
    if origin is list:
        return f"list of {_type_name(args[0])}"
    if origin is dict:
        return f"mapping of {_type_name(args[0])} to {_type_name(args[1])}"
    return {str: "string", int: "integer", float: "number", bool: "boolean"}.get(annotation, str(annotation))


def _bounds(field: FieldInfo) -> str:
    signs = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<", "max_length": "length <=", "pattern": "matching"}
    found = []
    for item in field.metadata:
        for attr, sign in signs.items():
            value = getattr(item, attr, None)
            if value is not None:
                found.append(f"{sign} `{value}`" if attr == "pattern" else f"{sign} {value:,}")
    return f", {', '.join(found)}" if found else ""


def _default(name: str, value) -> str:
    text = f"`{json.dumps(value, ensure_ascii=False)}`"
    if name.endswith("_bytes") and isinstance(value, int) and value % 1024 == 0:
        return f"{text} ({_binary_size(value)})"  # 8388608 reads better as 8 MiB
    return text


def _binary_size(value: int) -> str:
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value //= 1024
        if value < 1024 or value % 1024:
            return f"{value:,} {unit}"
    return f"{value:,} PiB"


def _cell(text: str) -> str:
    """A markdown table cell: a | would end it (escaped unless _type_name escaped it), a < would open an HTML tag
    (write.split_by_kind's <split>/chat/)."""
    text = re.sub(r"<(?=[A-Za-z/!?])", "&lt;", text.replace("\n", " "))
    return text.replace("\\|", "\0").replace("|", "\\|").replace("\0", "\\|")


def main() -> int:
    DOC_PATH.parent.mkdir(exist_ok=True)
    DOC_PATH.write_text(render(), encoding="utf-8")
    print(f"wrote {DOC_PATH}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
