"""### Table maintenance of one job

On the job spec's `tables.schedule` (default daily): `python -m spark_jobs table maintain JOB`
for the job's output and quarantine Delta tables: the declared table settings, bin-packing
compaction (OPTIMIZE; Z-order where the job declares `cluster_by`), then a VACUUM whose retention
is never shorter than the oldest kept checkpoint snapshot needs (so `checkpoint restore` and
`rollback` still time-travel the tables), Delta's minimum, or the spec's `tables.retention`.
Safe beside the running job: commits that lose a race are retried on both sides.
Param `dry_run` only reports. See docs/tables.md.

One DAG per job (`table_maintenance_<job>`), all built here from the specs.
"""

from statekeeper.factory import table_maintenance_dags  # airflow.sdk DAGs from the job specs

for _dag in table_maintenance_dags(doc_md=__doc__):
    globals()[_dag.dag_id] = _dag
