"""A run whose driver JVM went away says which way it went: the crash report the JVM wrote since
the run began, or a kill, which leaves none (:func:`spark_jobs.jobs.run_failures.jvm_gone`)."""

import os
import time

import pytest

from spark_jobs.contract.spec import load_spec
from spark_jobs.jobs.run_failures import jvm_gone

pytestmark = pytest.mark.unit


def test_the_line_names_the_report_written_since_the_run_began_else_a_kill(tmp_path, monkeypatch):
    monkeypatch.setenv("STATEKEEPER_DATA", str(tmp_path))
    spec = load_spec("user_counts")
    reports = tmp_path / "jvm-crashes"
    reports.mkdir()
    older = reports / "hs_err_pid11.log"  # an earlier run's crash
    older.write_text("#")
    os.utime(older, (time.time() - 3600, time.time() - 3600))
    began = time.time() - 60

    killed = str(jvm_gone(spec, began))
    assert "it was killed (it wrote no crash report" in killed
    assert "hs_err" not in killed

    (reports / "hs_err_pid42.log").write_text("#")
    crashed = str(jvm_gone(spec, began))
    assert crashed.startswith(
        "job user_counts failed: its driver JVM went away mid-run: it crashed (its report: "
        f"{reports / 'hs_err_pid42.log'}). "
    )
    assert crashed.endswith("nothing is lost or doubled")
