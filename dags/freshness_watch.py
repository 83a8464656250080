"""### Freshness watch (event time)

Every five minutes, for each job whose spec sets `freshness` limits (`max_watermark_lag`: now
minus the watermark; `max_input_lag`: the age of the oldest landing file not read yet): when a
limit is first exceeded, ONE alert goes to the notifiers configured in `statekeeper.alerts`; when
no limit is exceeded any more, ONE "recovered". A breach that lasts is not announced again. The
same figures are the health API's `watermark_lag_seconds` and `input_lag` (docs/health.md).
"""

from datetime import timedelta

from airflow.sdk import DAG, Param

from statekeeper.alerts import FreshnessCheckOperator
from statekeeper.factory import START, default_args

with DAG(
    dag_id="freshness_watch",
    description="One alert per freshness breach (event time), one when it clears",
    doc_md=__doc__,
    schedule=timedelta(minutes=5),
    start_date=START,
    catchup=False,
    max_active_runs=1,
    default_args=default_args("platform", retries=1),
    tags=["statekeeper", "freshness", "alerts"],
    params={
        "jobs": Param(
            [],
            type="array",
            items={"type": "string"},
            description="Jobs to check; empty: every job whose spec sets freshness limits.",
        ),
    },
) as dag:
    FreshnessCheckOperator(task_id="check_freshness")
