"""No import cycles in ``spark_jobs``: neither between its folders (``spark_jobs/<folder>``) nor
between two of its modules. Every import counts, a function's own included: a cycle hidden in a
function still means neither side can be understood, tested or moved without the other."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[2] / "spark_jobs"


def _modules(package: Path) -> dict[str, Path]:
    out = {}
    for f in package.rglob("*.py"):
        parts = f.relative_to(package.parent).with_suffix("").parts
        out[".".join(p for p in parts if p != "__init__")] = f
    return out


def module_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its code (``from a import b`` counts
    as importing ``a.b`` when that is a module, else ``a``)."""
    mods = _modules(package)
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [
                    f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in mods else node.module
                    for a in node.names
                ]
            else:
                continue
            for t in targets:
                # a module's own package (its __init__) is not an import of the module's making
                if t in mods and t != name and not name.startswith(t + "."):
                    graph[name].add(t)
    return graph


def folder_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """``spark_jobs/<folder>`` -> the other folders its modules import (top-level modules such
    as ``cli`` are entry points, not folders)."""

    def folder(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if len(parts) > 2 else None

    out: dict[str, set[str]] = defaultdict(set)
    for src, targets in graph.items():
        for dst in targets:
            a, b = folder(src), folder(dst)
            if a and b and a != b:
                out[a].add(b)
    return out


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path ``[a, b, ..., a]``, or None when the graph is acyclic."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_spark_jobs_folders_import_each_other_without_a_cycle():
    cycle = find_cycle(folder_graph(module_graph()))
    assert cycle is None, "folders import each other: " + " -> ".join(cycle or [])


def test_spark_jobs_modules_import_each_other_without_a_cycle():
    graph = module_graph()
    assert "spark_jobs.checkpoints.manifests" in graph["spark_jobs.checkpoints.validate"]
    cycle = find_cycle(graph)
    assert cycle is None, "modules import each other: " + " -> ".join(cycle or [])


def test_the_check_sees_a_cycle_hidden_in_a_function(tmp_path):
    """The checker itself: a function-level import closing a cycle between two folders."""
    pkg = tmp_path / "spark_jobs"
    for folder in ("a", "b"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a" / "x.py").write_text("from spark_jobs.b import y\n")
    (pkg / "b" / "y.py").write_text("def f():\n    from spark_jobs.a.x import g\n")
    graph = module_graph(pkg)
    assert find_cycle(graph) == ["spark_jobs.a.x", "spark_jobs.b.y", "spark_jobs.a.x"]
    assert find_cycle(folder_graph(graph)) == ["a", "b", "a"]
