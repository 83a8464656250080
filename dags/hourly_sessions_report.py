"""### Hourly sessions report (a completeness consumer)

Runs once per **complete** hour of the `sessions` table: it is scheduled on the partitioned
asset `statekeeper.sessions.complete`, whose events say "no session ending in this hour can
still be written" (docs/completeness.md). The run's partition key is the hour
(`2026-03-15T10:00:00`); the task reads exactly the sessions that ended in it (deltalake, no
Spark) and writes one row per hour to the `reports/hourly_sessions` Delta table. A backfill that
re-completes the hour runs it again, and the hour's row is replaced.
"""

from airflow.sdk import DAG, Param, PartitionedAssetTimetable, task

from statekeeper.completeness import completeness_asset
from statekeeper.factory import START, default_args

REPORT = ".data/tables/reports/hourly_sessions"

with DAG(
    dag_id="hourly_sessions_report",
    description="One report row per complete event-time hour of the sessions table",
    doc_md=__doc__,
    schedule=PartitionedAssetTimetable(assets=completeness_asset("sessions")),
    start_date=START,
    catchup=False,
    max_active_runs=4,
    default_args=default_args("analytics"),
    tags=["statekeeper", "completeness", "sessions", "report"],
    params={
        "report_table": Param(
            REPORT,
            type="string",
            minLength=1,
            description="The Delta table the hourly rows go to (relative: under the data folder's tables). Must be under a tables root (.data/tables or $STATEKEEPER_TABLE_ROOTS).",
        ),
    },
) as dag:

    @task
    def report_hour(dag_run=None, params=None) -> dict:
        """Summarise the sessions that ended in the run's hour (its partition key)."""
        from airflow.sdk.exceptions import AirflowFailException

        from spark_jobs.contract import paths
        from spark_jobs.contract.spec import load_spec
        from statekeeper.reports import hourly_sessions

        why = paths.outside_roots(params["report_table"], "tables")
        if why:
            raise AirflowFailException(why)
        report = paths.resolve(params["report_table"])
        return hourly_sessions(dag_run.partition_key, load_spec("sessions").output, report)

    report_hour()
