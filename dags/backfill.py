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
   one Delta commit tagged with the key: `replace` swaps the live rows of the staged time range
   (an upsert for update-mode jobs), `append` adds the rows whose key is not there yet.
   With `dry_run` this step is skipped and the staged table is left for inspection.
"""

from statekeeper.factory import backfill_dag  # builds an airflow.sdk DAG

dag = backfill_dag(doc_md=__doc__)
