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
