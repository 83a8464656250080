"""The DAGs' ``upgrade_plan`` task on its own (no DAG run, no Spark): a checkpoint with no
committed batch is nothing to plan and the run goes on without calling the CLI; a verdict's exit
code fails the task without retry with the worst change's line and what applies it; any other
failure keeps the CLI's own reason. (A real DAG run: tests/dags/test_dag_upgrade_plan.py.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "plugins"))

pytestmark = pytest.mark.unit

LINE = "migrate      state_store: 'rocksdb' -> 'hdfs': every key's state must be copied"
STEP = "the state must be rewritten, which upgrade migrate does not do yet"


@pytest.fixture
def op(tmp_path, monkeypatch):
    from statekeeper.operators import UpgradePlanOperator

    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "keyed.yaml").write_text(
        f"name: keyed\ninputs: {{clickstream: {tmp_path}/landing}}\n"
        f"output: {tmp_path}/tables/keyed\ncheckpoint: {tmp_path}/checkpoints/keyed\n"
        "watermark: 10 minutes\n"
    )
    monkeypatch.setenv("STATEKEEPER_SPECS", str(specs))
    return UpgradePlanOperator(task_id="upgrade_plan", job="keyed", overrides={})


def test_no_committed_batch_is_nothing_to_plan(op, tmp_path):
    assert op.execute({"params": {}}) == {"exit_code": None, "planned": False}
    (tmp_path / "checkpoints" / "keyed" / "offsets").mkdir(parents=True)
    (tmp_path / "checkpoints" / "keyed" / "offsets" / "0").write_text("v1\n{}\n")
    assert op.execute({"params": {}})["planned"] is False  # started, never committed
    assert op._hook is None  # the CLI was not run


def test_a_verdict_fails_with_its_line_and_way_there_and_other_failures_keep_their_reason(op):
    from airflow.sdk.exceptions import AirflowException

    from statekeeper.hooks import CliResult
    from statekeeper.operators import UpgradeNeeded

    plan = {"worst": "migrate", "worst_line": LINE, "next_step": STEP, "exit_code": 32}
    with pytest.raises(UpgradeNeeded) as err:
        op.fail(CliResult(32, json.dumps(plan, indent=2), ""))
    msg = str(err.value)
    assert msg.startswith(f"upgrade plan keyed: {' '.join(LINE.split())}; {STEP} (exit 32)")
    assert "\n" not in msg and "not submitting" in msg

    with pytest.raises(AirflowException) as other:
        op.fail(CliResult(2, "", "statekeeper: checkpoint x has no _statekeeper/job.json\n"))
    assert not isinstance(other.value, UpgradeNeeded)
    assert "statekeeper: checkpoint x has no _statekeeper/job.json (exit 2)" in str(other.value)


def test_the_catch_up_plan_judges_the_job_as_its_run_runs_it():
    """A service_health checkpoint written by catch-up (available-now) runs holds event-time
    timers; planned with the spec's processing-time trigger, its second catch-up was stopped for
    a time-mode change nobody made. The plan takes the run's trigger; the supervisor's (the
    spec's own trigger) takes none."""
    from statekeeper import factory

    catchup = factory.catchup_dag("service_health")
    plan, run = catchup.get_task("upgrade_plan"), catchup.get_task("catch_up")
    assert plan.arguments()[-3:] == ["--json", "--trigger", run.trigger]
    assert run.trigger == "available-now"

    supervised = factory.supervisor_dag("service_health").get_task("upgrade_plan")
    assert "--trigger" not in supervised.arguments()
