"""The ``backfill`` DAG: plan -> staged run on an isolated checkpoint -> validate -> publish,
then the re-completion events of the partitions the publish changed. The plan itself is
:mod:`statekeeper.backfill`.
"""

from __future__ import annotations

from airflow.sdk import DAG, Param

from spark_jobs.contract import paths
from statekeeper.backfill import BackfillPlanOperator
from statekeeper.completeness import CompletenessEventsOperator
from statekeeper.factory import START, default_args, jinja
from statekeeper.operators import QualityCheckOperator
from statekeeper.submit import SparkJobRunOperator, SparkJobsSubmitOperator


def _plan(key: str) -> str:
    """The plan task's value of ``key`` (templated)."""
    return jinja(f"ti.xcom_pull(task_ids='plan')['{key}']")


def _params(jobs: list[str]) -> dict[str, Param]:
    """The backfill form: which job, which input, how it meets the live rows, where to."""
    return {
        "job": Param(
            jobs[0] if jobs else "",
            type="string",
            enum=jobs,
            description="The job to backfill (its spec in include/jobs/).",
        ),
        "input": Param(
            "",
            type="string",
            minLength=1,
            description="Folder of JSON-lines events to re-process (for multi-input jobs: one sub-folder per kind), or kafka://HOST:PORT/TOPIC on the Kafka cluster the job's spec names (read from its earliest offsets). Folders must be under a landing root (.data/landing or $STATEKEEPER_LANDING_ROOTS).",
        ),
        "mode": Param(
            "append",
            type="string",
            enum=["replace", "append"],
            description="append: the folder holds events the live runs never processed; new rows are added, counts and totals of known keys add up. replace: the folder holds all events of the users/services/event types it covers; their live rows in its time range are replaced, others untouched (refused for user_counts: lifetime totals).",
        ),
        "dry_run": Param(
            False,
            type="boolean",
            description="Run and validate on the staged table, but do not make the result visible.",
        ),
        "output": Param(
            None,
            type=["null", "string"],
            description="Live table to publish into instead of the spec's output. Must be under a tables root.",
        ),
    }


def backfill_dag(doc_md: str | None = None) -> DAG:
    """``backfill``: plan -> staged run on an isolated checkpoint -> validate -> publish."""
    from spark_jobs.contract.spec import list_jobs

    jobs = list_jobs()
    with DAG(
        dag_id="backfill",
        description="Re-process a folder of events into a job's table, idempotently",
        doc_md=doc_md,
        schedule=None,
        start_date=START,
        catchup=False,
        max_active_runs=1,
        default_args=default_args("platform", retries=1),
        tags=["statekeeper", "backfill"],
        params=_params(jobs),
    ) as dag:
        planned = BackfillPlanOperator(
            task_id="plan",
            retries=0,
            doc_md="Checks the params (job, input folder, mode) and names the isolated checkpoint and staged table. Bad params fail here, before anything is submitted.",
        )
        staged = SparkJobRunOperator(
            task_id="run_staged",
            name="statekeeper-backfill",
            job="{{ params.job }}",
            overrides={
                "input": _plan("input"),
                "output": _plan("staged_table"),
                "checkpoint": _plan("staged_checkpoint"),
            },
            trigger="available-now",
            doc_md="The job on its own checkpoint and a staged table: the live checkpoint is never touched.",
        )
        check = QualityCheckOperator(
            task_id="validate_staged",
            job="{{ params.job }}",
            # the staged run's checkpoint: its progress log says how many records the backfill
            # read (the quarantine allowance) and its watermark (the freshness floor)
            overrides={"output": _plan("staged_table"), "checkpoint": _plan("staged_checkpoint")},
            doc_md="The job's quality suite on the staged table; a `fail` finding stops the backfill.",
        )
        publish = SparkJobsSubmitOperator(
            task_id="publish",
            name="statekeeper-publish",
            command=["publish"],
            job="{{ params.job }}",
            overrides={
                "staged": _plan("staged_table"),
                "staged_checkpoint": _plan("staged_checkpoint"),
                "output": _plan("live_table"),
                "mode": "{{ params.mode }}",
                "key": _plan("key"),
            },
            skip_reason=jinja(
                "'dry run: staged table left at ' ~ ti.xcom_pull(task_ids='plan')['staged_table'] if params.dry_run else ''"
            ),
            report_table=_plan("live_table"),
            doc_md="Makes the staged rows visible in the live table in one Delta commit, holding the live job's lock; `append` is refused when the backfill read a file the live job already read. The key goes to the table's `_statekeeper/backfills/` ledger, so a key already published is a no-op.",
        )
        planned >> staged >> check >> publish
        for job in jobs:  # the asset of each job is its own outlet; the others are skipped
            recomplete = CompletenessEventsOperator(
                task_id=f"emit_recompletions_{job}",
                job=job,
                ledger=paths.RECOMPLETIONS_FILE,
                overrides={"output": "{{ params.output or '' }}"},
                skip_reason=jinja(f"'' if params.job == '{job}' else 'not this job'"),
                doc_md="Re-completion events (extra recompletion=true) for the complete partitions the publish changed.",
            )
            publish >> recomplete
    return dag
