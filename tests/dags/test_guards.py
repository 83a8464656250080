"""The guards of the Airflow side, on real operators ``execute``d in this process (no DAG run):
the two-driver guard resolves paths with the job's own resolver, and path params outside the
configured roots are refused before anything is submitted."""

from __future__ import annotations

import os
import time

import pytest
from added_roots import ROOTS_ADDED
from airflow_env import airflow_env

pytestmark = pytest.mark.dags


@pytest.fixture
def data(airflow_home, tmp_path, monkeypatch):
    """This process as an Airflow worker on the test's home, with the data folder relocated the
    way docker-compose does it ($STATEKEEPER_DATA)."""
    for k, v in airflow_env(airflow_home, tmp_path / "data").items():
        if k != "PATH" and os.environ.get(k) != v:
            monkeypatch.setenv(k, v)
    for k in ROOTS_ADDED:  # only the data folder's roots: these tests are of the rule itself
        monkeypatch.delenv(k, raising=False)
    return tmp_path / "data"


def test_guard_and_job_resolve_a_relative_data_checkpoint_to_the_same_folder(data):
    """The compose path case: with $STATEKEEPER_DATA set, a relative ``.data/...`` checkpoint
    param is one folder for the two-driver guard and for the job the operator would submit."""
    from airflow.sdk.exceptions import TaskDeferred

    from spark_jobs.cli import build_parser
    from spark_jobs.contract.lock import JobLock
    from statekeeper.submit import SparkJobRunOperator

    folder = str(data / "checkpoints" / "replay")  # under $STATEKEEPER_DATA, not the checkout
    op = SparkJobRunOperator(
        task_id="t", job="sessions", overrides={"checkpoint": ".data/checkpoints/replay"}
    )
    # A driver holds that folder: the guard must see it and wait instead of submitting; the
    # deferral carries the run the operator resolved, to be submitted unchanged once it is free.
    with JobLock(folder, job="sessions"), pytest.raises(TaskDeferred) as deferred:
        op.execute({"params": {"checkpoint": ".data/checkpoints/replay"}})
    trigger = deferred.value.trigger
    args = trigger.echo["arguments"]
    assert trigger.checkpoint == folder
    assert args[args.index("--checkpoint") + 1] == folder
    assert trigger.echo["checkpoint"] == folder
    # and what the driver's compiler is chosen from when it is submitted (a catch-up run)
    assert trigger.echo["available_now"] is True
    assert trigger.echo["inputs"] == [args[args.index("--input") + 1].split("=", 1)[1]]
    # What the job's own command line makes of those arguments: the same folder.
    parsed = build_parser().parse_args(args)
    assert parsed.checkpoint == folder and parsed.job == "sessions"
    assert parsed.output == str(data / "tables" / "sessions")  # the spec's .data/ output too


@pytest.mark.parametrize(
    ("params", "refused"),
    [
        ({"checkpoint": "../../.."}, "param checkpoint: ../../.. is outside the checkpoints roots"),
        ({"checkpoint": ".data/checkpoints"}, "is a checkpoints root itself"),  # the root itself
        ({"input": "/etc"}, "param input: /etc is outside the landing roots"),
        ({"output": ".data/landing/clickstream"}, "param output: .data/landing/clickstream is"),
        ({"output": ".data/tables/../../../x"}, "outside the tables roots"),
        ({"tables_root": "/"}, "param tables_root: / is outside the tables roots"),
    ],
)
def test_path_params_outside_their_roots_are_refused_before_anything_runs(data, params, refused):
    from statekeeper.backfill import BackfillPlanOperator
    from statekeeper.operators import QualityCheckOperator
    from statekeeper.params import ParamOutsideRoots
    from statekeeper.submit import SparkJobRunOperator, SparkJobsSubmitOperator
    from statekeeper.supervisor import StreamingSupervisorOperator

    ops = [
        SparkJobsSubmitOperator(task_id="submit", command=["publish"], job="sessions"),
        SparkJobRunOperator(task_id="run", job="sessions"),
        QualityCheckOperator(task_id="quality", job="sessions"),
        BackfillPlanOperator(task_id="plan"),
        StreamingSupervisorOperator(task_id="supervise", job="service_health", action="stop"),
    ]
    for op in ops:
        with pytest.raises(ParamOutsideRoots, match="nothing was submitted") as err:
            op.execute({"params": {**params, "job": "sessions", "mode": "append"}})
        assert refused in str(err.value), op.task_id
    assert not data.exists()  # nothing was written anywhere


def test_path_params_inside_the_roots_pass_on_to_the_guard(data, monkeypatch):
    from airflow.sdk.exceptions import TaskDeferred

    from spark_jobs.contract.lock import JobLock
    from statekeeper.submit import SparkJobRunOperator

    elsewhere = data.parent / "mounted"  # an extra root, e.g. a volume, added by configuration
    monkeypatch.setenv("STATEKEEPER_TABLE_ROOTS", str(elsewhere))
    params = {
        "input": ".data/landing",
        "output": str(elsewhere / "sessions"),
        "checkpoint": str(data / "checkpoints" / "sessions_replay"),
    }
    op = SparkJobRunOperator(task_id="t", job="sessions", overrides=params)  # as rendered
    with JobLock(params["checkpoint"], job="sessions"), pytest.raises(TaskDeferred) as deferred:
        op.execute({"params": params})
    args = deferred.value.trigger.echo["arguments"]
    assert args[args.index("--output") + 1] == params["output"]
    assert f"clickstream={data / 'landing'}" in args  # the one input, resolved under the data


def test_restart_budget_outlives_task_runs_and_ends_in_a_failed_task(data):
    from airflow.sdk.exceptions import AirflowFailException, TaskDeferred

    from statekeeper.supervisor import RestartBudgetSpent, StreamingSupervisorOperator

    ckpt = data / "checkpoints" / "service_health"

    def next_run() -> StreamingSupervisorOperator:  # each scheduled run: a new task, a new count
        return StreamingSupervisorOperator(
            task_id="supervise",
            job="service_health",
            trigger="processing-time:5s",
            overrides={"checkpoint": str(ckpt)},
            restart_backoff=60,
            max_restarts=2,
            restart_window=3600,
        )

    def died() -> dict:
        run = {"watch_until": time.time() + 600, "restarts": 0, "launched": [], "events": []}
        return {"status": "unhealthy", "health": {"verdict": "dead"}, "echo": {"run": run}}

    for _ in range(2):  # within the budget: back off, then relaunch
        with pytest.raises(TaskDeferred) as deferred:
            next_run().resume_watch({}, died())
        assert type(deferred.value.trigger).__name__ == "BackoffTrigger"
    with pytest.raises(RestartBudgetSpent, match="restarted 3 times in the last 60 min"):
        next_run().resume_watch({}, died())
    with pytest.raises(RestartBudgetSpent):  # the next scheduled run launches nothing either
        next_run().execute({"params": {}})
    assert issubclass(RestartBudgetSpent, AirflowFailException)  # failed, not retried: alerts
    assert not (ckpt / "_statekeeper" / "driver.log").exists()  # nothing was ever launched


def test_a_failed_submit_fails_the_task_with_the_runners_one_line_reason(data):
    """Our own spark-submit process: its exit code fails the task and the runner's
    ``statekeeper:`` line, read from the output we keep, is the task's error."""
    from airflow.sdk.exceptions import AirflowException

    from statekeeper.submit import SparkJobsSubmitOperator

    op = SparkJobsSubmitOperator(task_id="t", command=["run"], job="no_such_job")
    with pytest.raises(AirflowException) as err:
        op.execute({"params": {}})
    assert str(err.value).startswith("spark_jobs run no_such_job failed (exit 2): statekeeper: ")
    assert "unknown job 'no_such_job'" in str(err.value)


def test_a_kafka_input_param_may_name_another_topic_of_the_jobs_cluster_never_another(
    data, tmp_path, monkeypatch
):
    """Anyone who may trigger a DAG types its input: a broker of their own would get the spec's
    kafka_options (credentials). Every task that runs or plans the job refuses it, before
    anything is submitted or dialled; another topic on the spec's own cluster is fine."""
    import yaml
    from airflow.sdk.exceptions import TaskDeferred

    from spark_jobs.contract.lock import JobLock
    from spark_jobs.contract.paths import specs_dir
    from statekeeper.backfill import BackfillPlanOperator
    from statekeeper.operators import PublishAssetOperator
    from statekeeper.params import ParamOutsideRoots
    from statekeeper.submit import SparkJobRunOperator
    from statekeeper.supervisor import StreamingSupervisorOperator

    specs = tmp_path / "specs"  # every real spec; sessions reads a secured cluster
    specs.mkdir()
    for f in specs_dir().glob("*.yaml"):
        raw = yaml.safe_load(f.read_text())
        if raw["name"] == "sessions":
            raw["inputs"] = {"clickstream": "kafka://b-1.example:9096/clickstream"}
            raw["kafka_options"] = {"sasl.jaas.config": "${NOT_FOR_YOU}"}
        (specs / f.name).write_text(yaml.safe_dump(raw))
    monkeypatch.setenv("STATEKEEPER_SPECS", str(specs))
    ckpt = str(data / "checkpoints" / "sessions_replay")

    def ops(uri: str) -> list:
        overrides = {"input": uri, "checkpoint": ckpt}
        return [
            SparkJobRunOperator(task_id="run", job="sessions", overrides=overrides),
            BackfillPlanOperator(task_id="plan"),
            StreamingSupervisorOperator(task_id="supervise", job="sessions", action="stop"),
            PublishAssetOperator(task_id="publish", job="sessions", overrides=overrides),
        ]

    theirs = "kafka://evil.example:9096/clickstream"
    params = {"input": theirs, "checkpoint": ckpt, "job": "sessions", "mode": "append"}
    with JobLock(ckpt, job="sessions"):  # were it let through, the run would wait, not submit
        for op in ops(theirs):
            with pytest.raises(ParamOutsideRoots, match="nothing was submitted") as err:
                op.execute({"params": params})
            why = str(err.value)
            assert why.startswith("param input: input kafka://evil.example:9096"), op.task_id
            assert "never another cluster" in why and "\n" not in why

        ours = "kafka://b-1.example:9096/clickstream-replay"
        with pytest.raises(TaskDeferred) as deferred:
            ops(ours)[0].execute({"params": {**params, "input": ours}})
    assert f"clickstream={ours}" in deferred.value.trigger.echo["arguments"]
