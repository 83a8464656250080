"""### Catch-up run of `user_counts`

Processes everything new in the landing folder with an `availableNow` trigger, then stops
(a run with nothing new finishes quickly and leaves the table unchanged).

1. **validate_checkpoint**: `python -m spark_jobs checkpoint validate`; errors stop the run.
2. **catch_up**: spark-submit of `python -m spark_jobs run user_counts --trigger available-now`
   through the `spark_default` connection (waits, in the triggerer, while another driver holds
   the checkpoint: never two drivers on one checkpoint).
3. **quality_check**: the table's data-quality suite; a `fail` finding fails the run.
4. **publish_asset**: signals the Airflow Asset of the Delta table.

Params `input`, `output`, `checkpoint` override the spec's paths (empty = the spec's).
"""

from statekeeper.factory import catchup_dag  # builds an airflow.sdk DAG from the job spec

dag = catchup_dag("user_counts", doc_md=__doc__)
