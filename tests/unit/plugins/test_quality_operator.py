"""The quality DAG's task for one job: a job that has not committed a batch has no table yet and
is skipped without calling the CLI; a table missing after committed batches fails the task with
the command's own reason. (The whole DAG on real tables: tests/dags.)"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "plugins"))

pytestmark = pytest.mark.unit


@pytest.fixture
def op(tmp_path, monkeypatch):
    from statekeeper.operators import QualityCheckOperator

    specs = tmp_path / "specs"
    specs.mkdir()
    shipped = (ROOT / "include" / "jobs" / "user_counts.yaml").read_text()
    for key, folder in (
        ("clickstream", "landing"),
        ("output", "tables"),
        ("checkpoint", "checkpoints"),
    ):
        shipped = re.sub(rf"(?m)^(\s*{key}): .*$", rf"\1: {tmp_path}/{folder}/user_counts", shipped)
    (specs / "user_counts.yaml").write_text(shipped)
    monkeypatch.setenv("STATEKEEPER_SPECS", str(specs))
    return QualityCheckOperator(task_id="quality_user_counts", job="user_counts", overrides={})


def test_a_job_that_never_committed_is_skipped_and_a_lost_table_fails(op, tmp_path):
    from airflow.sdk.exceptions import AirflowException, AirflowSkipException

    checkpoint = tmp_path / "checkpoints" / "user_counts"
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "offsets" / "0").write_text("v1\n{}\n")  # started, never committed
    with pytest.raises(AirflowSkipException) as skipped:
        op.execute({"params": {}})
    assert str(skipped.value) == (
        f"no Delta table at {tmp_path}/tables/user_counts yet and no batch committed in {checkpoint}: "
        "the job has not run, nothing to check"
    )
    assert op._hook is None  # the CLI was not run

    (checkpoint / "commits").mkdir()
    (checkpoint / "commits" / "0").write_text('v1\n{"nextBatchWatermarkMs":0}\n')
    with pytest.raises(AirflowException) as failed:
        op.execute({"params": {}})
    assert not isinstance(failed.value, AirflowSkipException)
    assert f"no Delta table at {tmp_path}/tables/user_counts" in str(failed.value)
    assert str(failed.value).endswith("(exit 2)")


def test_the_catch_up_checks_the_table_and_progress_of_its_own_run():
    """A catch-up triggered with the ``output`` and ``checkpoint`` params checks that run's
    table against that run's progress log, not the spec's checkpoint's."""
    from statekeeper import factory

    dag = factory.catchup_dag("user_counts")
    run, check = dag.get_task("catch_up"), dag.get_task("quality_check")
    assert check.overrides == {k: run.overrides[k] for k in ("output", "checkpoint")}
    assert "params.checkpoint" in check.overrides["checkpoint"]


def test_a_backfill_validates_its_staged_table_against_its_own_run():
    """The staged table's checks read the staged run's progress log (records read for the
    quarantine allowance, the watermark for the freshness floor), not the live job's: the
    live checkpoint's records made any staged quarantine rate pass."""
    from statekeeper.backfill_dag import backfill_dag

    dag = backfill_dag()
    run, check = dag.get_task("run_staged"), dag.get_task("validate_staged")
    assert check.overrides["output"] == run.overrides["output"]
    assert check.overrides["checkpoint"] == run.overrides["checkpoint"]
    assert "staged_checkpoint" in check.overrides["checkpoint"]
