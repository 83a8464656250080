"""### Table maintenance of `{job}`

On the job spec's `tables.schedule` (default daily): `python -m spark_jobs table maintain JOB`
for the job's output and quarantine Delta tables: the declared table settings, bin-packing
compaction (OPTIMIZE; Z-order where the job declares `cluster_by`), then a VACUUM whose retention
is never shorter than the oldest kept checkpoint snapshot needs (so `checkpoint restore` and
`rollback` still time-travel the tables), Delta's minimum, or the spec's `tables.retention`.
Safe beside the running job: commits that lose a race are retried on both sides.
Param `dry_run` only reports. See docs/tables.md.

One DAG per job spec (`table_maintenance_<job>`), all built by this file.
"""

from statekeeper.care_dags import table_maintenance_dag
from statekeeper.factory import per_job_dags  # airflow.sdk DAGs

globals().update(per_job_dags("table_maintenance", table_maintenance_dag, __doc__))
