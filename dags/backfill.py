"""### Backfill

Re-process a folder of events into a job's table, from the UI (**Trigger** shows the form).

1. **plan**: checks the params (the job exists, the input folder exists and holds events, the mode)
   and names an *isolated* checkpoint and a *staged* table under `.data/backfill/JOB/KEY/`, where
   KEY hashes the job, the input files and the mode. Bad params fail here: nothing is submitted.
   A backfill whose key was already published is skipped: a second identical backfill changes
   nothing.
2. **run_staged**: the job with `--trigger available-now` on the isolated checkpoint into the
   staged table (the live checkpoint is never touched).
3. **validate_staged**: the job's data-quality suite on the staged table.
4. **publish**: `python -m spark_jobs publish` makes the staged rows visible in the live table in
   one Delta commit; the key goes to `_statekeeper/backfills/` of the live table, where log
   retention cannot remove it. `append`: events the live runs never saw (new keys inserted,
   counts and totals of known keys added). `replace`: the folder holds all events of the users
   (services, event types) it covers; only their live rows in its time range are replaced.
   `replace` on `user_counts` (lifetime totals) is refused in **plan**. See docs/airflow.md.
   With `dry_run` this step is skipped and the staged table is left for inspection.
"""

from statekeeper.backfill_dag import backfill_dag  # builds an airflow.sdk DAG

dag = backfill_dag(doc_md=__doc__)
