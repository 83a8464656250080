"""No import cycles in ``spark_jobs``: neither between its folders (``spark_jobs/<folder>``) nor
between two of its modules. Every import counts, a function's own included: a cycle hidden in a
function still means neither side can be understood, tested or moved without the other.

And one boundary (docs/architecture.md): the Airflow side (``plugins/``, ``dags/``) imports of
``spark_jobs`` only the contract and the read-only checkpoint inspection, directly and through
what those import; the contract imports nothing else of ``spark_jobs``."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "spark_jobs"
AIRFLOW_SIDE = (ROOT / "plugins", ROOT / "dags")
CONTRACT = "spark_jobs.contract"
# Reads a checkpoint's files, writes nothing, needs no Spark: the health page and the backfill
# plan run it in-process (docs/architecture.md says why); its closure is held like the contract's.
INSPECTION = (
    "spark_jobs.checkpoints.validate",
    "spark_jobs.checkpoints.findings",
    "spark_jobs.checkpoints.unread",
    "spark_jobs.checkpoints.landing_changes",
    "spark_jobs.checkpoints.landing_codecs",
    "spark_jobs.checkpoints.source_files",
    "spark_jobs.checkpoints.layout",
    "spark_jobs.checkpoints.files",
    "spark_jobs.checkpoints.first_batch",
    "spark_jobs.checkpoints.manifests",
    "spark_jobs.checkpoints.recovery",
)


def _modules(package: Path) -> dict[str, Path]:
    out = {}
    for f in package.rglob("*.py"):
        parts = f.relative_to(package.parent).with_suffix("").parts
        out[".".join(p for p in parts if p != "__init__")] = f
    return out


def imports_of(path: Path, mods: dict[str, Path]) -> set[str]:
    """The modules of ``mods`` that the file imports anywhere in its code (``from a import b``
    counts as importing ``a.b`` when that is a module, else ``a``)."""
    out: set[str] = set()
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
        out.update(t for t in targets if t in mods)
    return out


def module_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its code."""
    mods = _modules(package)
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in mods.items():
        for t in imports_of(path, mods):
            # a module's own package (its __init__) is not an import of the module's making
            if t != name and not name.startswith(t + "."):
                graph[name].add(t)
    return graph


def reached(graph: dict[str, set[str]], start: dict[str, str]) -> dict[str, list[str]]:
    """Every module reached from ``start`` (module -> who imports it) through ``graph`` -> the
    chain of imports that reaches it, importer first."""
    chains = {m: [who, m] for m, who in start.items()}
    todo = sorted(start)
    while todo:
        mod = todo.pop()
        for nxt in sorted(graph.get(mod, ())):
            if nxt not in chains:
                chains[nxt] = [*chains[mod], nxt]
                todo.append(nxt)
    return chains


def allowed(module: str) -> bool:
    return module == CONTRACT or module.startswith(CONTRACT + ".") or module in INSPECTION


def boundary_breaches(roots: tuple[Path, ...] = AIRFLOW_SIDE, package: Path = PACKAGE) -> list[str]:
    """Each import chain by which an Airflow-side file crosses into a part of ``spark_jobs``
    beyond the contract and the inspection, ``file -> module -> ...`` (up to the crossing)."""
    mods = _modules(package)
    start = {
        t: str(f.relative_to(package.parent))
        for root in roots
        for f in sorted(root.rglob("*.py"))
        for t in imports_of(f, mods)
    }
    chains = reached(module_graph(package), start)
    return sorted(
        " -> ".join(chain)
        for m, chain in chains.items()
        if not allowed(m) and (len(chain) == 2 or allowed(chain[-2]))
    )


def folder_graph(graph: dict[str, set[str]], package: Path = PACKAGE) -> dict[str, set[str]]:
    """``spark_jobs/<folder>`` -> the other folders its modules import (top-level modules such
    as ``cli`` are entry points, not folders; a folder whose code is all in its ``__init__.py``
    is a folder)."""
    folders = {name for name, path in _modules(package).items() if path.name == "__init__.py"}

    def folder(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if len(parts) > 2 or (len(parts) == 2 and module in folders) else None

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
    assert "spark_jobs.checkpoints.manifests" in graph["spark_jobs.checkpoints.recovery"]
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
    assert find_cycle(folder_graph(graph, pkg)) == ["a", "b", "a"]


def test_the_check_sees_a_cycle_through_a_folder_whose_code_is_its_init(tmp_path):
    """``spark_jobs/b/__init__.py`` holding all of ``b`` is still the folder ``b``: ``a``
    importing it while it imports ``a`` is a cycle between folders (not between modules)."""
    pkg = tmp_path / "spark_jobs"
    for folder in ("a", "b"):
        (pkg / folder).mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a" / "__init__.py").write_text("def g():\n    pass\n")
    (pkg / "a" / "x.py").write_text("from spark_jobs import b\n")
    (pkg / "b" / "__init__.py").write_text("def f():\n    from spark_jobs.a import g\n")
    graph = module_graph(pkg)
    assert find_cycle(graph) is None
    assert find_cycle(folder_graph(graph, pkg)) == ["a", "b", "a"]


def test_the_airflow_side_imports_only_the_contract_and_the_inspection():
    """plugins/ and dags/ run the rest of spark_jobs through its command line: directly and
    through everything they import, they reach the contract and the read-only inspection only."""
    breaches = boundary_breaches()
    assert not breaches, "the Airflow side reaches past the contract:\n" + "\n".join(breaches)


def test_the_contract_imports_nothing_else_of_spark_jobs():
    graph = module_graph()
    contract = {m: m for m in graph if m.startswith(CONTRACT + ".")}
    assert contract, "no contract modules found"
    beyond = sorted(
        " -> ".join(chain)
        for m, chain in reached(graph, contract).items()
        if not m.startswith(CONTRACT)
    )
    assert not beyond, "the contract imports other parts of spark_jobs:\n" + "\n".join(beyond)


def test_the_boundary_check_sees_an_import_hidden_two_steps_away(tmp_path):
    """The checker itself: a plugin importing the contract, which imports (in a function) a
    module outside it, is a breach; importing the contract alone is not."""
    pkg = tmp_path / "spark_jobs"
    for folder in ("contract", "runtime"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "contract" / "a.py").write_text("def f():\n    from spark_jobs.runtime import b\n")
    (pkg / "contract" / "c.py").write_text("X = 1\n")
    (pkg / "runtime" / "b.py").write_text("")
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "ok.py").write_text("from spark_jobs.contract.c import X\n")
    assert boundary_breaches((plugins,), pkg) == []
    (plugins / "bad.py").write_text("from spark_jobs.contract import a\n")
    assert boundary_breaches((plugins,), pkg) == [
        "plugins/bad.py -> spark_jobs.contract.a -> spark_jobs.runtime.b"
    ]
