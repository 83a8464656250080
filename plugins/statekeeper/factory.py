"""DAG builders: the DAG files in ``dags/`` call these, one DAG per job spec where a file builds
the DAGs of every job (``dags/catchup.py``, ``dags/supervise.py``). The DAGs that look after
checkpoints and tables are built in :mod:`statekeeper.care_dags`.

Parse-time work is reading YAML specs: no connection, Variable, pyspark or pandas.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import DAG, Asset, Param
from airflow.sdk.exceptions import AirflowFailException

from statekeeper import dag_ids
from statekeeper.completeness import CompletenessEventsOperator
from statekeeper.operators import (
    CheckpointValidateOperator,
    PublishAssetOperator,
    QualityCheckOperator,
    UpgradePlanOperator,
)
from statekeeper.params import SUPERVISE_BOUNDS
from statekeeper.submit import SparkJobRunOperator
from statekeeper.supervisor import StreamingSupervisorOperator

START = datetime(2026, 1, 1, tzinfo=UTC)
# A stop needs no plan: it is how a changed continuous job is stopped for its migration.
STOP_SKIPS_PLAN = "{{ 'a stop needs no plan' if params.action == 'stop' else '' }}"


def default_args(owner: str, retries: int = 2) -> dict[str, Any]:
    return {
        "owner": owner,
        "retries": retries,
        "retry_delay": timedelta(minutes=1),
        "retry_exponential_backoff": True,
    }


def table_asset(spec: Any) -> Asset:
    """The Airflow Asset standing for a job's Delta table (consumers schedule on it).

    Named by the job, not by the table's path: the path depends on where the data lives
    ($STATEKEEPER_DATA, a mounted volume), and an Asset whose URI changes goes inactive. The
    path and the Delta version travel in each event's ``extra``.
    """
    return Asset(
        name=f"statekeeper.{spec.name}", uri=f"statekeeper://delta/{spec.name}", group="delta"
    )


def path_params() -> dict[str, Param]:
    return {
        "input": Param(
            None,
            type=["null", "string"],
            description="Landing folder or kafka://HOST:PORT/TOPIC to read instead of the spec's (a root with one folder per kind for multi-input jobs). Empty: the spec's. A folder must be under a landing root (.data/landing or $STATEKEEPER_LANDING_ROOTS); a topic must be on the Kafka cluster the spec names.",
        ),
        "output": Param(
            None,
            type=["null", "string"],
            description="Delta table to write instead of the spec's. Empty: the spec's. Must be under a tables root (.data/tables or $STATEKEEPER_TABLE_ROOTS).",
        ),
        "checkpoint": Param(
            None,
            type=["null", "string"],
            description="Checkpoint folder instead of the spec's. Empty: the spec's (the live checkpoint). Must be under a checkpoint root (.data/checkpoints or $STATEKEEPER_CHECKPOINT_ROOTS).",
        ),
    }


def path_overrides() -> dict[str, str]:
    """The ``input``/``output``/``checkpoint`` params as a run's overrides (empty: the spec's)."""
    return {k: jinja(f"params.{k} or ''") for k in ("input", "output", "checkpoint")}


def jinja(expr: str) -> str:
    """``{{ expr }}`` (kept out of f-strings, whose braces would need doubling)."""
    return "{{ " + expr + " }}"


# The catch-up DAG's run, and its plan: the plan must judge the job as that run runs it (a
# service_health checkpoint written by available-now runs holds event-time timers).
CATCH_UP_TRIGGER = "available-now"


def plan_task(job: str, trigger: str | None = None, **kwargs: Any) -> UpgradePlanOperator:
    """``upgrade_plan``: the job as declared now against its checkpoint, before a submit of a
    run with ``trigger`` (default: the spec's)."""
    return UpgradePlanOperator(
        task_id="upgrade_plan",
        job=job,
        overrides={k: jinja(f"params.{k} or ''") for k in ("checkpoint", "output")},
        trigger=trigger,
        doc_md="`upgrade plan JOB --json`: a changed job (spec or code) stops here with the plan's line and the command that applies it, before Spark starts (docs/upgrades.md).",
        retries=0,
        **kwargs,
    )


def catchup_dag(job: str, doc_md: str | None = None) -> DAG:
    """``catchup_<job>``: validate checkpoint -> upgrade plan -> run available-now -> quality ->
    publish Asset."""
    from spark_jobs.contract.spec import load_spec

    spec = load_spec(job)
    continuous = spec.mode == "continuous"
    doc = doc_md or ""
    doc += f"\n\n**Job `{job}`** ({spec.pattern}, {spec.mode}): {spec.description}\n\n"
    doc += f"- input: `{', '.join(spec.inputs.values())}`\n- output: `{spec.output}`\n"
    doc += f"- checkpoint: `{spec.checkpoint}`\n- spec: `include/jobs/{job}.yaml`\n"
    # One DAG emits a job's completeness: two emitters reading one cursor at once could both
    # emit the same keys. A continuous job's supervise_<job> emits it (a manual catch-up of it
    # adds to the same ledger, emitted after the next watch).
    doc += (
        f"\n**emit_completeness** (after catch_up): one event of the asset `statekeeper.{job}."
        f"complete` per {spec.completeness} event-time partition the run completed "
        "(docs/completeness.md).\n"
        if not continuous
        else f"\nCompleteness events of `{job}` are emitted by `supervise_{job}` only "
        "(docs/completeness.md).\n"
    )
    with DAG(
        dag_id=dag_ids.catchup(job),
        description=f"Catch-up (available-now) run of {job}, then quality, then its Asset",
        doc_md=doc,
        schedule=None if continuous else spec.schedule,
        start_date=START,
        catchup=False,
        max_active_runs=1,
        default_args=default_args(spec.owner),
        tags=["statekeeper", "catch-up", *spec.tags],
        params={
            **path_params(),
            "run_quality": Param(
                True, type="boolean", description="Run the data-quality suite after the job."
            ),
        },
        render_template_as_native_obj=False,
    ) as dag:
        validate = CheckpointValidateOperator(
            task_id="validate_checkpoint",
            job=job,
            overrides={"checkpoint": "{{ params.checkpoint or '' }}"},
            doc_md="Refuse to submit on a checkpoint with errors (exit 20); warnings (10) are logged.",
            retries=0,
        )
        run = SparkJobRunOperator(
            task_id="catch_up",
            name=f"statekeeper-{job}",
            job=job,
            overrides=path_overrides(),
            trigger=CATCH_UP_TRIGGER,
            execution_timeout=timedelta(hours=2),
            doc_md="spark-submit `python -m spark_jobs run JOB --trigger available-now` through `spark_default`.",
        )
        quality = QualityCheckOperator(
            task_id="quality_check",
            job=job,
            overrides={k: v for k, v in path_overrides().items() if k != "input"},
            skip_reason="{{ '' if params.run_quality else 'run_quality is off' }}",
            doc_md="Great Expectations suite of the run's table, with the run's checkpoint's progress log (records read, watermark); a `fail` finding fails the task.",
        )
        publish = PublishAssetOperator(
            task_id="publish_asset",
            job=job,
            overrides=path_overrides(),
            outlets=[table_asset(spec)],
            trigger_rule="none_failed",
            doc_md="Signals the table's Asset (with its Delta version) once the run and its checks passed.",
        )
        validate >> plan_task(job, trigger=CATCH_UP_TRIGGER) >> run >> quality >> publish
        if not continuous:
            run >> CompletenessEventsOperator(
                task_id="emit_completeness",
                job=job,
                overrides=path_overrides(),
                doc_md="One partitioned event of the job's completeness asset per event-time partition the run completed (docs/completeness.md).",
            )
    return dag


def supervise_params(spec: Any) -> dict[str, Param]:
    """The ``supervise_<job>`` Trigger form: the action, the query's trigger, the watch's bounds
    (``SUPERVISE_BOUNDS``) and the path overrides."""
    B = SUPERVISE_BOUNDS
    return {
        "action": Param(
            "supervise",
            type="string",
            enum=["supervise", "stop", "start"],
            description="supervise: start the driver if none runs, watch it, restart it when dead or stalled. stop: stop the running driver (e.g. before maintenance or an upgrade migrate; a stop skips the upgrade plan); the stop is kept, later runs launch nothing. start: lift a kept stop and supervise.",
        ),
        "trigger": Param(
            str(spec.trigger),
            type="string",
            pattern="^processing-time:",
            description="The query's processing-time trigger, e.g. processing-time:30s.",
        ),
        "watch_minutes": Param(
            10,
            type="number",
            exclusiveMinimum=0,
            maximum=B["watch_seconds"].maximum / 60,
            description=f"How long one run watches the driver; the next scheduled run takes over. At most a day ({B['watch_seconds'].why}).",
        ),
        "restart_backoff_seconds": Param(
            None,
            type=["null", "number"],
            **B["restart_backoff"].schema(),
            description=f"First wait before relaunching a dead driver (doubles per restart). Empty: the spec's supervise.restart_backoff. ({B['restart_backoff'].why})",
        ),
        "max_restarts": Param(
            spec.supervise.max_restarts,
            type="integer",
            **B["max_restarts"].schema(),
            description=f"Restarts allowed within the restart window (spec supervise.restart_window, counted across runs) before the task fails without retry and alerts. ({B['max_restarts'].why})",
        ),
        "poll_seconds": Param(
            10,
            type="number",
            **B["poll_seconds"].schema(),
            description=f"How often the trigger reads the lock and the progress log. ({B['poll_seconds'].why})",
        ),
        **path_params(),
    }


def supervisor_dag(job: str, doc_md: str | None = None) -> DAG:
    """``supervise_<job>``: one watch period per run, every ten minutes, never two at once."""
    from spark_jobs.contract.spec import load_spec

    spec = load_spec(job)
    with DAG(
        dag_id=dag_ids.supervise(job),
        description=f"Keeps one processing-time query of {job} alive and healthy",
        doc_md=(doc_md or "")
        + f"\n\n**Job `{job}`**: {spec.description}\n\n- checkpoint: `{spec.checkpoint}`\n"
        + f"\n**emit_completeness** (after each watch): the asset `statekeeper.{job}.complete`, one event per {spec.completeness} event-time partition the driver completed (docs/completeness.md).\n",
        schedule="*/10 * * * *",
        start_date=START,
        catchup=False,
        max_active_runs=1,
        default_args=default_args(spec.owner),
        tags=["statekeeper", "supervisor", "continuous", *spec.tags],
        params=supervise_params(spec),
    ) as dag:
        supervise = StreamingSupervisorOperator(
            task_id="supervise",
            job=job,
            action="{{ params.action }}",
            trigger="{{ params.trigger }}",
            overrides=path_overrides(),
            watch_seconds="{{ params.watch_minutes * 60 }}",
            restart_backoff=jinja("params.restart_backoff_seconds or ''"),
            max_restarts="{{ params.max_restarts }}",
            poll_seconds="{{ params.poll_seconds }}",
            doc_md="Attaches to the running driver or launches one; waits in DriverWatchTrigger.",
            trigger_rule="none_failed",  # a stop skips the plan, and must still reach the driver
        )
        plan_task(job, skip_reason=STOP_SKIPS_PLAN) >> supervise
        supervise >> CompletenessEventsOperator(
            task_id="emit_completeness",
            job=job,
            overrides=path_overrides(),
            trigger_rule="all_done",  # what the driver completed stays complete if it failed
            doc_md="Completeness events for what the driver's batches completed during the watch (docs/completeness.md).",
        )
    return dag


def per_job_dags(
    prefix: str,
    build: Any,
    doc_template: str,
    modes: tuple[str, ...] = ("catch-up", "continuous"),
    notes: dict[str, str] | None = None,
) -> dict[str, DAG]:
    """``<prefix>_<job>`` for every job spec whose mode is in ``modes``: ``build(job, doc_md=...)``
    with ``{job}`` filled in the template (plus ``notes[mode]``). A spec that does not load, or
    whose DAG cannot be built, becomes a DAG that says why (:func:`broken_spec_dag`): one bad
    spec must not make the whole file fail to import, which would hide every other job's DAG."""
    from spark_jobs.contract.spec import list_jobs, load_spec

    dags = {}
    for job in list_jobs():
        dag_id = f"{prefix}_{job}"
        try:
            mode = load_spec(job).mode
            if mode not in modes:
                continue
            doc = (doc_template + (notes or {}).get(mode, "")).replace("{job}", job)
            dags[dag_id] = build(job, doc_md=doc)
        except Exception as exc:  # any reason a DAG cannot be built is shown on its page
            reason = f"{exc}; {exc.__cause__}" if exc.__cause__ else str(exc)
            dags[dag_id] = broken_spec_dag(dag_id, " ".join(reason.split())[:500])
    return dags


def _refuse(reason: str) -> None:
    raise AirflowFailException(reason)


def broken_spec_dag(dag_id: str, reason: str) -> DAG:
    """Stands in for a DAG whose job spec does not load: the reason is on the DAG's page and in
    its one task's log, instead of the whole generated file failing to import (which would hide
    every other job's DAG)."""
    from airflow.providers.standard.operators.python import PythonOperator

    with DAG(
        dag_id=dag_id,
        description=f"Not built: {reason}"[:200],
        doc_md=f"### `{dag_id}` cannot be built\n\nfrom its job spec:\n\n> {reason}\n\n"
        "Fix the spec (`include/jobs/JOB.yaml`, or `$STATEKEEPER_SPECS`); the DAG is built "
        "again on the next parse. Running this DAG fails with the same reason.",
        schedule=None,
        start_date=START,
        catchup=False,
        default_args=default_args("statekeeper", retries=0),
        tags=["statekeeper", "broken-spec"],
    ) as dag:
        PythonOperator(task_id="spec_error", python_callable=_refuse, op_args=[reason])
    return dag
