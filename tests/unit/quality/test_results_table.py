"""The results table stays cheap to read however many runs it holds: each run appends one small
file and every run reads the table whole, so past ``COMPACT_AT_FILES`` files they are merged,
with nothing lost and the newest run still the newest data commit (the health page reads it)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from deltalake import DeltaTable

from spark_jobs.contract import paths
from spark_jobs.quality import results
from statekeeper.health_report import _last_quality

pytestmark = pytest.mark.unit


def _run(i: int, status: str) -> list[results.ResultRow]:
    when = datetime(2026, 3, 1, 10) + timedelta(hours=i)
    return [
        results.ResultRow(
            run_id=f"run-{i:03d}",
            run_time=when,
            job="sessions",
            table_uri="/t",
            suite="sessions",
            version_from=i,
            version_to=i,
            mode="incremental",
            check=f"check {c}",
            expectation="expect_x",
            column_name=None,
            severity="fail",
            success=status == "pass",
            status=status,
            observed="1",
            unexpected_count=None,
            element_count=None,
            rows=10 + i,
            details="",
        )
        for c in range(3)
    ]


def test_many_runs_are_merged_into_few_files_and_read_back_whole(tmp_path):
    output = str(tmp_path / "sessions")
    runs = results.COMPACT_AT_FILES + 2
    for i in range(runs):
        results.append(output, _run(i, "fail" if i == runs - 2 else "pass"))
    uri = paths.results_uri(output)
    # merged once past the bound, then one file per later run
    assert len(DeltaTable(uri).file_uris()) == 2
    rows = DeltaTable(uri).to_pyarrow_table(columns=["run_id", "check"]).to_pylist()
    assert sorted((r["run_id"], r["check"]) for r in rows) == sorted(
        (f"run-{i:03d}", f"check {c}") for i in range(runs) for c in range(3)
    )
    history = results.History(uri)
    assert history.last_version("/t", "sessions") == runs - 1
    assert history.trailing_rows("/t", "sessions", 2) == [10 + runs - 1, 10 + runs - 2]
    newest = _last_quality(uri)
    assert newest["quality_checks"] == 3 and newest["quality_verdict"] == "pass"
