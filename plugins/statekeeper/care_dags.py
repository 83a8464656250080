"""Builders of the DAGs that look after the jobs' checkpoints and tables: ``checkpoint_maintenance``
(validate, snapshot, prune), ``data_quality`` (the quality suites) and ``table_maintenance_<job>``
(compaction and a restore-safe VACUUM), each task a ``python -m spark_jobs`` command.

Parse-time work is reading YAML specs: no connection, Variable, pyspark or pandas.
"""

from __future__ import annotations

from airflow.sdk import DAG, Param

from statekeeper.factory import START, default_args, jinja
from statekeeper.operators import (
    CheckpointValidateOperator,
    QualityCheckOperator,
    SparkJobsCliOperator,
)


def maintenance_dag(doc_md: str | None = None) -> DAG:
    """``checkpoint_maintenance``: per job with snapshots: validate -> snapshot -> prune."""
    from spark_jobs.contract.spec import load_all

    specs = [s for s in load_all() if s.snapshots.every is not None]
    with DAG(
        dag_id="checkpoint_maintenance",
        description="Validate, snapshot and prune the jobs' checkpoints",
        doc_md=doc_md,
        schedule="@daily",
        start_date=START,
        catchup=False,
        max_active_runs=1,
        default_args=default_args("platform", retries=1),
        tags=["statekeeper", "checkpoints", "maintenance"],
        params={
            "dry_run": Param(
                False,
                type="boolean",
                description="prune says what it would delete, deleting nothing.",
            ),
        },
    ) as dag:
        for spec in specs:
            v = CheckpointValidateOperator(
                task_id=f"validate_{spec.name}", job=spec.name, retries=0
            )
            snap = SparkJobsCliOperator(
                task_id=f"snapshot_{spec.name}", command=["checkpoint", "snapshot"], job=spec.name
            )
            prune = SparkJobsCliOperator(
                task_id=f"prune_{spec.name}",
                command=["checkpoint", "prune"],
                job=spec.name,
                flags=["{{ '--dry-run' if params.dry_run else '' }}"],
            )
            v >> snap >> prune
    return dag


def quality_dag(doc_md: str | None = None) -> DAG:
    """``data_quality``: every job's quality suite on its table (daily and on demand)."""
    from spark_jobs.contract.spec import load_all

    specs = load_all()
    with DAG(
        dag_id="data_quality",
        description="Great Expectations suites on every output table",
        doc_md=doc_md,
        schedule="@daily",
        start_date=START,
        catchup=False,
        max_active_runs=1,
        default_args=default_args("platform", retries=1),
        tags=["statekeeper", "quality"],
        params={
            "jobs": Param(
                [s.name for s in specs],
                type="array",
                items={"type": "string", "enum": [s.name for s in specs]},
                description="The jobs whose tables to check.",
            ),
            "tables_root": Param(
                None,
                type=["null", "string"],
                description="Read every table as <tables_root>/<job> instead of the spec's output. Must be (under) a tables root.",
            ),
        },
    ) as dag:
        for spec in specs:
            QualityCheckOperator(
                task_id=f"quality_{spec.name}",
                job=spec.name,
                overrides={
                    "output": jinja(
                        f"(params.tables_root ~ '/{spec.name}') if params.tables_root else ''"
                    )
                },
                skip_reason=jinja(f"'' if '{spec.name}' in params.jobs else 'not in params.jobs'"),
            )
    return dag


def table_maintenance_dag(job: str, doc_md: str | None = None) -> DAG:
    """``table_maintenance_<job>`` on the spec's ``tables.schedule``: compaction and a
    restore-safe VACUUM of the job's output and quarantine, through the command line."""
    from spark_jobs.contract.spec import load_spec

    spec = load_spec(job)
    with DAG(
        dag_id=f"table_maintenance_{spec.name}",
        description=f"Compact and vacuum the Delta tables of {spec.name}",
        doc_md=doc_md,
        schedule=spec.tables.schedule,
        start_date=START,
        catchup=False,
        max_active_runs=1,
        default_args=default_args(spec.owner, retries=1),
        tags=["statekeeper", "tables", "maintenance", *spec.tags],
        params={
            "dry_run": Param(
                False,
                type="boolean",
                description="Only report what maintenance would compact and delete.",
            ),
        },
    ) as dag:
        SparkJobsCliOperator(
            task_id="maintain",
            command=["table", "maintain"],
            job=spec.name,
            flags=["--json", "{{ '--dry-run' if params.dry_run else '' }}"],
            doc_md="`python -m spark_jobs table maintain JOB --json`; safe beside the running job.",
        )
    return dag
