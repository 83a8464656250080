"""### Checkpoint maintenance

Daily, for every job whose spec has `snapshots.every`: `python -m spark_jobs checkpoint validate`
(errors fail the job's branch), `checkpoint snapshot` (an incremental, consistent copy as of the
last committed batch, taken live while a driver holds the checkpoint, as the continuous job's
always does) and `checkpoint prune` (keeps the spec's count and recovery
window; `dry_run` only says what would go).
"""

from statekeeper.care_dags import maintenance_dag  # builds an airflow.sdk DAG from the job specs

dag = maintenance_dag(doc_md=__doc__)
