"""Runs ``dag.test()`` for the JSON list of runs on stdin, then what the scheduler does with
partitioned asset events (pending partitions become DAG runs:
``SchedulerJobRunner._create_dagruns_for_partitioned_asset_dags``) and runs each DAG run it
created, as ``dag.test()`` runs tasks. Prints one ``RESULT {...}`` line: the runs, the asset's
events, and the partition-driven DAG runs (used by test_completeness_dags)."""

from __future__ import annotations

import json
import sys


def _run(dag, run_pk: int) -> str:  # type: ignore[no-untyped-def]
    """Run a queued DAG run's tasks in this process (dag.test's loop, without its new run)."""
    from airflow import settings
    from airflow.models.dagrun import DagRun
    from airflow.sdk.definitions.dag import _run_task
    from airflow.serialization.serialized_objects import DagSerialization
    from airflow.utils.state import DagRunState, TaskInstanceState

    session = settings.Session()  # a task run ends the last one: each run looks its run up
    dr = session.get(DagRun, run_pk)
    dr.dag = DagSerialization.deserialize_dag(DagSerialization.serialize_dag(dag))
    dr.state = DagRunState.RUNNING
    session.commit()
    while dr.state == DagRunState.RUNNING:
        session.expire_all()
        schedulable, _ = dr.update_state(session=session)
        for ti in schedulable:
            ti.try_number += 1
            ti.state = TaskInstanceState.SCHEDULED
        session.commit()
        for ti in dr.get_task_instances(session=session):
            if ti.state == TaskInstanceState.SCHEDULED:
                _run_task(ti=ti, task=dag.task_dict[ti.task_id])
    return str(dr.state)


def main() -> int:
    job = json.loads(sys.stdin.read())
    from airflow import settings
    from airflow.dag_processing.dagbag import DagBag
    from airflow.jobs.job import Job
    from airflow.jobs.scheduler_job_runner import SchedulerJobRunner
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.models.dagrun import DagRun
    from sqlalchemy import select

    bag = DagBag(dag_folder=None)
    out: dict = {"runs": []}
    for spec in job["runs"]:
        dag = bag.get_dag(spec["dag_id"])
        dr = dag.test(
            run_conf=spec.get("conf") or {}, mark_success_pattern=spec.get("mark_success")
        )
        tis = {ti.task_id: str(ti.state) for ti in dr.get_task_instances()}
        out["runs"].append({"dag_id": spec["dag_id"], "state": str(dr.state), "tasks": tis})
    consumer = bag.get_dag(job["consumer"])
    session = settings.Session()
    SchedulerJobRunner(job=Job())._create_dagruns_for_partitioned_asset_dags(session)
    session.commit()
    queued = session.scalars(
        select(DagRun).where(DagRun.dag_id == consumer.dag_id, DagRun.state == "queued")
    ).all()
    for pk in sorted(d.id for d in queued):
        _run(consumer, pk)
    session = settings.Session()
    runs = session.scalars(
        select(DagRun).where(DagRun.dag_id == consumer.dag_id).order_by(DagRun.id)
    ).all()
    out["consumer_runs"] = [{"key": r.partition_key, "state": str(r.state)} for r in runs]
    events = session.scalars(
        select(AssetEvent)
        .join(AssetModel, AssetModel.id == AssetEvent.asset_id)
        .where(AssetModel.name == job["asset"])
        .order_by(AssetEvent.id)
    ).all()
    out["events"] = [{"key": e.partition_key, "extra": e.extra} for e in events]
    print("RESULT " + json.dumps(out, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
