"""### Catch-up run of `service_health`

Processes everything new in the landing folder with an `availableNow` trigger, then stops
(a run with nothing new finishes quickly and leaves the table unchanged).

1. **validate_checkpoint**: `python -m spark_jobs checkpoint validate`; errors stop the run.
2. **catch_up**: spark-submit of `python -m spark_jobs run service_health --trigger available-now`
   through the `spark_default` connection (waits, in the triggerer, while another driver holds
   the checkpoint: never two drivers on one checkpoint).
3. **quality_check**: the table's data-quality suite; a `fail` finding fails the run.
4. **publish_asset**: signals the Airflow Asset of the Delta table.

Params `input`, `output`, `checkpoint` override the spec's paths (empty = the spec's).
`service_health` is a *continuous* job (see `supervise_service_health`): this DAG has no
schedule; trigger it to replay landing data with an available-now run. While the supervisor's
driver holds the checkpoint this run waits for it instead of starting a second driver; give it
its own `checkpoint` and `output` params to replay on the side.
"""

from statekeeper.factory import catchup_dag  # builds an airflow.sdk DAG from the job spec

dag = catchup_dag("service_health", doc_md=__doc__)
