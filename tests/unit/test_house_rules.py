"""The house stays easy to live in: no module of the project over 400 lines, no function over
80, and one formatter (``ruff format``) with a handful of ``# fmt: skip`` at most. Each limit
names what breaks it, so the fix is where the message points."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ("spark_jobs", "plugins", "dags", "bench", "scripts", "include")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80
MAX_FMT_SKIPS = 5  # tables that read as tables (e.g. the duration units)

pytestmark = pytest.mark.unit


def _python(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (ROOT / f).rglob("*.py"))


def test_no_module_over_400_lines_and_no_function_over_80():
    files = _python(*SOURCE)
    assert len(files) > 100  # the walk found the project
    long_modules, long_functions = [], []
    for path in files:
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(ROOT)
        if text.count("\n") > MAX_MODULE_LINES:
            long_modules.append(f"{rel} ({text.count(chr(10))} lines)")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long_functions.append(f"{rel}:{node.lineno} {node.name} ({length} lines)")
    assert not long_modules, f"modules over {MAX_MODULE_LINES} lines: {long_modules}"
    assert not long_functions, f"functions over {MAX_FUNCTION_LINES} lines: {long_functions}"


def test_one_formatter_with_a_handful_of_skips():
    skips = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in _python(*SOURCE, "tests")
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if line.rstrip().endswith("# fmt: skip")
    ]
    assert len(skips) <= MAX_FMT_SKIPS, f"{len(skips)} '# fmt: skip' (ruff format decides): {skips}"


# The unit tests mirror the source, so a module's tests are found where the module is:
# tests/unit/<package>/ holds the tests of spark_jobs/<package>/ (tests/unit/ itself stands for
# spark_jobs/: spark_jobs/cli.py's would be tests/unit/test_cli.py); these folders stand for the
# other sources. The tier folders stay: CI and the Makefile select tiers by marker and folder.
UNIT = ROOT / "tests" / "unit"
MIRRORS = {"plugins": "statekeeper", "bench": "bench", "scripts": "scripts"}  # folder -> package
# Tests of the house as a whole rather than of one package: the only ones at the top.
CROSS_CUTTING = {
    "test_house_rules.py": "these rules, over every source file",
    "test_import_graph.py": "the import graph of every folder and the Airflow side's boundary",
    "test_doc_claims.py": "every command and file name that README and docs name",
    "test_events_docs.py": "the queries docs/events.md shows",
    "test_compose.py": "docker-compose.yaml and the files it mounts",
}


def _package_of(folder: tuple[str, ...]) -> tuple[str, Path]:
    """The package a folder of tests/unit mirrors: its import name and its source folder."""
    if folder and folder[0] in MIRRORS:
        name = MIRRORS[folder[0]]
        source = ROOT / "plugins" / name if folder[0] == "plugins" else ROOT / name
        return ".".join((name, *folder[1:])), source.joinpath(*folder[1:])
    return ".".join(("spark_jobs", *folder)), ROOT.joinpath("spark_jobs", *folder)


def _tests_it(tree: ast.Module, package: str) -> bool:
    """The module imports ``package`` (or something in it), or runs ``python -m spark_jobs``:
    a test may drive a package through the command line, as a user does."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.update([node.module, *(f"{node.module}.{a.name}" for a in node.names)])
    if any(n == package or n.startswith(package + ".") for n in names):
        return True
    consts = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
    return package.startswith("spark_jobs") and {"-m", "spark_jobs"} <= consts


def misplaced_unit_tests(unit: Path = UNIT) -> list[str]:
    """Each unit test module that is neither under the folder of the package it tests nor named
    in CROSS_CUTTING, with what is wrong."""
    wrong = []
    for path in sorted(unit.rglob("test_*.py")):
        rel = path.relative_to(unit)
        folder = rel.parts[:-1]
        if not folder:
            module = ROOT / "spark_jobs" / (path.stem.removeprefix("test_") + ".py")
            if path.name not in CROSS_CUTTING and not module.is_file():
                wrong.append(f"{rel}: move it to the folder of the package it tests")
            continue
        package, source = _package_of(folder)
        if not source.is_dir():
            wrong.append(f"{rel}: {source.relative_to(ROOT)}/ is no source package")
        elif not _tests_it(ast.parse(path.read_text(encoding="utf-8")), package):
            wrong.append(f"{rel}: imports nothing of {package}, the package its folder mirrors")
    return wrong


def test_unit_tests_mirror_the_source_packages():
    assert len(list(UNIT.rglob("test_*.py"))) > 40  # the walk found the tests
    assert all((UNIT / name).is_file() for name in CROSS_CUTTING), "a cross-cutting test is gone"
    wrong = misplaced_unit_tests()
    assert not wrong, f"unit tests out of the source's layout: {wrong}"


def test_a_test_out_of_place_is_named_with_the_fix(tmp_path):
    for rel, text in {
        "state/test_fraud.py": "from spark_jobs.state import fraud\n",  # in place
        "state/test_binding.py": "from spark_jobs.contract import binding\n",
        "plugins/test_hooks.py": "from statekeeper import hooks\n",  # in place
        "nowhere/test_x.py": "import spark_jobs\n",
        "test_loose.py": "",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert misplaced_unit_tests(tmp_path) == [
        "nowhere/test_x.py: spark_jobs/nowhere/ is no source package",
        "state/test_binding.py: imports nothing of spark_jobs.state, the package its folder mirrors",
        "test_loose.py: move it to the folder of the package it tests",
    ]
