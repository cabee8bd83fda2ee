"""The layering of pipeline/ (its docstring): each wing imports only the wings below it, no module import
cycles, no private name imported from another module, no Prefect or flows/ in the library.

Every import counts, including those inside functions: a lazy import hides a dependency, it does not remove it.
"""
from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pipeline"

# wing -> the wings it may import (itself included)
ALLOWED = {
    "core": {"core"},
    "data": {"core", "data"},
    "plan": {"core", "plan"},
    "report": {"core", "data", "plan", "report"},
    "train": {"core", "plan", "train"},
    "runner": {"core", "data", "plan", "report", "train", "runner"},
    "cli": {"core", "data", "plan", "report", "train", "runner", "cli"},
}
FORBIDDEN_TOP = ("prefect", "flows", "prefect_dask")


def module_files(root: Path) -> dict[str, Path]:
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = ["pipeline", *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, str | None, int]]:
    """(imported module, imported name or None, line) for every import statement of the file."""
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = module.split(".")[: None if is_package else -1]
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.append((sub, None, node.lineno) if sub in modules else (target, alias.name, node.lineno))
    return found


def wing(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def violations(root: Path = PACKAGE) -> list[str]:
    modules = module_files(root)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    problems = []
    for module, path in modules.items():
        where = f"{path.relative_to(root.parent)}"
        for target, name, line in imports_of(module, path, modules):
            if target.split(".")[0] in FORBIDDEN_TOP:
                problems.append(f"{where}:{line}: the library imports {target}")
            if not target.startswith("pipeline.") or target not in modules:
                continue
            graph[module].add(target)
            src, dst = wing(module), wing(target)
            if src in ALLOWED and dst not in ALLOWED[src]:
                problems.append(f"{where}:{line}: {src} imports {dst} ({target})")
            if name and name.startswith("_") and not name.startswith("__") and target != module:
                problems.append(f"{where}:{line}: private name {name} imported from {target}")
    problems += [f"import cycle: {' -> '.join(cycle)}" for cycle in cycles(graph)]
    return problems


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_module_belongs_to_a_wing():
    loose = [m for m in module_files(PACKAGE) if m != "pipeline" and wing(m) not in ALLOWED]
    assert loose == [], f"modules outside the wings of pipeline/__init__.py: {loose}"


def test_the_package_keeps_its_layers():
    assert violations() == []


@pytest.fixture
def package_copy(tmp_path) -> Path:
    root = tmp_path / "pipeline"
    shutil.copytree(PACKAGE, root, ignore=shutil.ignore_patterns("resources", "__pycache__"))
    return root


@pytest.mark.parametrize("file, line, expected", [
    ("core/stats.py", "from pipeline.report.build import build_report", "core imports report"),
    ("data/split.py", "from pipeline.plan.gpus import load_catalog", "data imports plan"),
    ("data/pii/step.py", "    from pipeline.runner.rundir import MARKER", "data imports runner"),
    ("plan/gpus.py", "from pipeline.core.s3 import _client_config", "private name _client_config"),
    ("core/records.py", "import prefect", "the library imports prefect"),
    ("core/numfmt.py", "from pipeline.core.markdown import table", "import cycle: pipeline.core.markdown -> "
                                                                      "pipeline.core.numfmt"),
])
def test_a_planted_violation_is_found(package_copy, file, line, expected):
    path = package_copy / file
    if line.startswith("    "):  # an import inside a function counts the same
        line = "def _planted():\n" + line + "\n"
    path.write_text(path.read_text() + "\n" + line + "\n")
    found = violations(package_copy)
    assert any(expected in problem for problem in found), found
