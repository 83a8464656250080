"""The README and docs/ say only what is true of this repository: every file they name exists,
every ``python -m spark_jobs`` command and option they show is one the parser takes, every
``make`` target they name is in the Makefile, and nothing points outside the repository."""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP = ("spark_jobs/", "plugins/", "dags/", "include/", "tests/", "docs/", "bench/", "scripts/")
# Words in a path that stand for a value the reader fills in (a job, a checkpoint, a batch).
PLACEHOLDER = re.compile(r"[<>{}]|\bJOB\b|\bKIND\b|\bN\b|\bNAME\b|\.\.\.|\bX\b|\bV\b")


# What a run writes (git-ignored): the docs name it as an output, not as a file of the repository.
GENERATED = tuple(
    line.strip()
    for line in (ROOT / ".gitignore").read_text().splitlines()
    if line.strip().endswith("/") and "/" in line.strip()[:-1]
)


def _texts() -> list[tuple[Path, str]]:
    return [(p, p.read_text(encoding="utf-8")) for p in DOCS]


def _named_paths(text: str) -> set[str]:
    found = set()
    for tok in re.findall(r"`([^`\s]+)`", text):
        tok = tok.rstrip(".,:;)")
        tok = re.sub(r"(\.py|\.md|\.yaml|\.txt|\.json|\.toml):\S*$", r"\1", tok)
        if tok.startswith(GENERATED):
            continue
        if tok.startswith(TOP) and not PLACEHOLDER.search(tok) and "://" not in tok:
            found.add(tok.split("::")[0])
    return found


# The working agreement and notes the project was made from live outside the repository, where no
# user of it can follow them: docs/contracts.md and docs/architecture.md say it in the project's
# own words. ARCHITECTURE.md in capitals is the outside file; docs/architecture.md is ours.
OUTSIDE = re.compile(
    r"\.\./shared\S*|\bshared/(?:CONTRACTS|ARCHITECTURE|STYLE|seeds|hooks)\S*"
    r"|\bCONTRACTS\b(?:\.md)?|\bARCHITECTURE\.md\b|\bSTYLE\.md\b"
)
TEXT_SUFFIXES = (".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".cfg", ".ini", ".sh", ".json")


def _tracked_texts() -> list[tuple[Path, str]]:
    """Every file git tracks that is text a reader opens (code, docs, specs, set-up), this test
    excepted: it names the outside files to find them."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    paths = [ROOT / name for name in listed if name]
    return [
        (p, p.read_text(encoding="utf-8", errors="replace"))
        for p in paths
        if (p.suffix in TEXT_SUFFIXES or p.name in ("Makefile", "Dockerfile"))
        and p.resolve() != Path(__file__).resolve()
        and p.is_file()
    ]


def test_docs_point_nowhere_outside_the_repository():
    bad = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p, t in _texts() for m in OUTSIDE.finditer(t)]
    assert not bad, bad


def test_code_and_tests_point_nowhere_outside_the_repository():
    """Docstrings and comments cite docs/contracts.md, not the agreement it was written from."""
    texts = _tracked_texts()
    assert any(p.name == "cli.py" for p, _ in texts), "git ls-files listed none of the code"
    bad = [
        f"{p.relative_to(ROOT)}:{t.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
        for p, t in texts
        for m in OUTSIDE.finditer(t)
    ]
    assert not bad, bad


def test_every_file_the_docs_name_exists():
    missing = []
    for p, text in _texts():
        for name in sorted(_named_paths(text)):
            path = name.rstrip("/")
            if "*" in path:
                if not list(ROOT.glob(path)):
                    missing.append(f"{p.relative_to(ROOT)}: {name}")
            elif not (ROOT / path).exists():
                # a dotted module named as a path (spark_jobs/io/events.shared): its file
                module = ROOT / (path.rsplit(".", 1)[0] + ".py") if "." in path else None
                if module is None or not module.exists():
                    missing.append(f"{p.relative_to(ROOT)}: {name}")
    assert not missing, missing


def _parser() -> argparse.ArgumentParser:
    from spark_jobs.cli import build_parser

    return build_parser()


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _commands(text: str) -> list[str]:
    """Every ``python -m spark_jobs ...`` line, in code blocks and inline code."""
    lines = []
    for m in re.finditer(r"python -m spark_jobs([^\n`#]*)", text):
        lines.append(m.group(1).strip())
    return lines


def _check(words: list[str], parser: argparse.ArgumentParser, where: str) -> list[str]:
    """The subcommand path and the long options in ``words`` against the parser."""
    errors = []
    node = parser
    for w in words:
        subs = _subparsers(node)
        if subs and not w.startswith("-"):
            alternatives = [a for a in re.split(r"[|()\[\]]", w) if a]
            known = [a for a in alternatives if a in subs]
            if known:
                node = subs[known[0]]
                continue
            if all(a.isupper() or a in {"...", "JOB"} for a in alternatives):
                break
            errors.append(f"{where}: unknown command word {w!r}")
            break
    options = {o for a in node._actions for o in a.option_strings}
    for w in words:
        for opt in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", w):
            if opt not in options:
                errors.append(f"{where}: {opt} is not an option of {node.prog!r}")
    return errors


def test_every_command_the_docs_show_parses():
    parser = _parser()
    errors = []
    for p, text in _texts():
        for line in _commands(text):
            try:
                words = shlex.split(
                    line.replace("|", " | ").replace("[", " [ ").replace("]", " ] ")
                )
            except ValueError:
                words = line.split()
            words = [w for w in words if w not in {"|", "[", "]"}]
            errors += _check(words, parser, f"{p.relative_to(ROOT)}: {line[:60]}")
    assert not errors, errors


def test_every_make_target_the_docs_name_exists():
    targets = set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.M))
    missing = [
        f"{p.relative_to(ROOT)}: make {t}"
        for p, text in _texts()
        for t in re.findall(r"`make ([a-z][a-z-]*)", text)
        if t not in targets
    ]
    assert not missing, missing


def test_the_claims_checker_catches_a_false_claim():
    """The checks above can fail: a made-up file, command and option are each caught."""
    assert "spark_jobs/no_such_module.py" in _named_paths("see `spark_jobs/no_such_module.py`")
    assert not (ROOT / "spark_jobs/no_such_module.py").exists()
    assert _check(["frobnicate"], _parser(), "x")
    assert _check(["run", "sessions", "--no-such-option"], _parser(), "x")
    assert not _check(["run", "sessions", "--output", "URI"], _parser(), "x")
