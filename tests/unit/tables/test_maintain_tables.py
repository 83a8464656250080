"""Which tables ``table maintain`` works on (``spark_jobs.tables.cli``): those the checkpoint writes
(its binding), else the spec's. The checkpoint's snapshots decide what VACUUM keeps, so an
``--output`` that is not a Delta table, or not the table a bound checkpoint writes, is refused in
one line, exit 2, before any Spark starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_jobs.cli import main
from spark_jobs.contract import binding
from spark_jobs.contract.errors import ExitCode

pytestmark = pytest.mark.unit

JOB = "windowed_counts"


@pytest.fixture
def where(monkeypatch, tmp_path):
    monkeypatch.setenv("STATEKEEPER_DATA", str(tmp_path / "data"))
    for var in ("CHECKPOINT", "SNAPSHOT", "TABLE"):
        monkeypatch.setenv(f"STATEKEEPER_{var}_ROOTS", str(tmp_path))
    return tmp_path


def _table(path: Path) -> str:
    (path / "_delta_log").mkdir(parents=True)
    return str(path)


def _maintain(ckpt: Path, *extra: str) -> int:
    return main(["table", "maintain", JOB, "--checkpoint", str(ckpt), "--dry-run", *extra])


def test_an_output_that_is_not_a_delta_table_is_refused(where, capsys):
    ckpt = where / "ck"
    ckpt.mkdir()
    assert _maintain(ckpt, "--output", str(where / "typo")) == ExitCode.USER_ERROR
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "is not a Delta table" in err and "typo" in err, err


def test_a_bound_checkpoint_refuses_another_output(where, capsys):
    ckpt, ours, theirs = where / "ck", _table(where / "ours"), _table(where / "theirs")
    binding.bind_tables(str(ckpt), {"output": ours, "quarantine": f"{ours}/_quarantine"})
    assert _maintain(ckpt, "--output", theirs) == ExitCode.USER_ERROR
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    assert f"is not the table checkpoint {ckpt} writes ({ours})" in err, err


def test_the_tables_are_the_bound_ones_else_the_specs():
    from spark_jobs.tables.cli import _tables

    assert _tables("/t/spec", "/c/never-run", None) == ("/t/spec", "/t/spec/_quarantine")


def test_a_bound_checkpoint_maintains_its_own_tables_not_the_specs(where):
    from spark_jobs.tables.cli import _tables

    ckpt, ours = where / "ck", _table(where / "ours")
    tables = {"output": ours, "quarantine": str(where / "q")}
    binding.bind_tables(str(ckpt), tables)
    assert _tables(str(where / "spec"), str(ckpt), None) == (ours, tables["quarantine"])
    # the same table, spelled as given, is accepted
    assert _tables(str(where / "spec"), str(ckpt), ours + "/") == (ours, tables["quarantine"])


def test_a_job_that_has_not_run_is_skipped_without_starting_spark(where, monkeypatch, capsys):
    import json

    from spark_jobs.runtime import session

    def no_spark(*args, **kwargs):
        raise AssertionError("a session started for tables that do not exist")

    monkeypatch.setattr(session, "build_session", no_spark)
    ckpt = where / "ck"
    assert main(["table", "maintain", JOB, "--checkpoint", str(ckpt), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [t["skipped"] for t in report["tables"]] == [
        "no table yet (the job has not written it)"
    ] * 2
