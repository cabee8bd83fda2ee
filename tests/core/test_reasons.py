"""The reason codes: one registry (pipeline/core/reasons.py), the stats refuse anything else, the table in
docs/run-directory.md is the registry, and every code the pipeline's source passes to the stats is registered
(and vice versa)."""
import ast
import re
from pathlib import Path

import pytest
from conftest import ROOT

from pipeline.core import reasons
from pipeline.core.stats import StageStats

PIPELINE = ROOT / "pipeline"


def test_stats_refuse_a_reason_that_is_not_registered():
    st = StageStats("read")
    st.drop("empty_line", 3)
    st.quarantine("too_deep")
    assert st.to_dict()["dropped"] == {"empty_line": 3} and st.to_dict()["quarantined"] == {"too_deep": 1}
    with pytest.raises(ValueError, match="unknown drop reason 'too_deep'"):
        st.drop("too_deep")  # a quarantine code is not a drop code
    with pytest.raises(ValueError, match="unknown quarantine reason 'no_such_reason'"):
        st.quarantine("no_such_reason")


def test_the_docs_table_is_the_registry():
    rows = re.findall(r"^\| `([a-z_]+)` \| (quarantined|dropped) \| (.+?) \|$",
                      (ROOT / "docs" / "run-directory.md").read_text(encoding="utf-8"), re.M)
    table = {code: (kind, meaning) for code, kind, meaning in rows}
    assert len(table) == len(rows), "a reason is in docs/run-directory.md twice"
    registry = {**{c: ("quarantined", m) for c, m in reasons.QUARANTINE.items()},
                **{c: ("dropped", m) for c, m in reasons.DROP.items()}}
    assert table == registry
    assert not set(reasons.QUARANTINE) & set(reasons.DROP)


# calls whose string arguments at these positions are reason codes
REASON_ARGS = {"Invalid": [0], "Dropped": [0], "drop": [0], "quarantine": [0], "_quarantine": [2], "RawRow": [2],
               "_json_object": [1], "_json_clean": [1], "reject": [1]}


def _strings(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.IfExp):
        yield from _strings(node.body)
        yield from _strings(node.orelse)


def _used_codes() -> dict[str, str]:
    used = {}
    for path in PIPELINE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            for i in REASON_ARGS.get(name, []):
                if i < len(node.args):
                    for code in _strings(node.args[i]):
                        used.setdefault(code, f"{path.relative_to(ROOT)}:{node.lineno}")
    return used


def test_every_reason_in_the_code_is_registered_and_every_registered_one_is_used():
    from pipeline.data.dedup.params import REASONS as DEDUP_REASONS

    used = _used_codes()
    registered = {**reasons.QUARANTINE, **reasons.DROP}
    assert {c: where for c, where in used.items() if c not in registered} == {}
    assert set(DEDUP_REASONS) <= set(reasons.DROP)
    # the source names each registered code somewhere outside the registry (a code nothing emits is stale)
    source = "".join(p.read_text(encoding="utf-8") for p in PIPELINE.rglob("*.py") if p.name != "reasons.py")
    assert [c for c in registered if f'"{c}"' not in source] == []
    assert len(used) >= 30
