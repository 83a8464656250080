"""### Catch-up run of `{job}`

Processes everything new in the landing folder with an `availableNow` trigger, then stops
(a run with nothing new finishes quickly and leaves the table unchanged).

1. **validate_checkpoint**: `python -m spark_jobs checkpoint validate`; errors stop the run.
2. **upgrade_plan**: `python -m spark_jobs upgrade plan {job} --json`; a changed job (spec or
   code) stops the run here, before Spark starts, with the plan's line and the command that
   applies the change (docs/upgrades.md). Nothing changed, or nothing committed yet: go on.
3. **catch_up**: spark-submit of `python -m spark_jobs run {job} --trigger available-now`
   through the `spark_default` connection (waits, in the triggerer, while another driver holds
   the checkpoint: never two drivers on one checkpoint).
4. **quality_check**: the table's data-quality suite; a `fail` finding fails the run.
5. **publish_asset**: signals the Airflow Asset of the Delta table.

Params `input`, `output`, `checkpoint` override the spec's paths (empty = the spec's).
"""

# One Airflow DAG per job spec (`include/jobs/JOB.yaml`, or $STATEKEEPER_SPECS): adding a job
# adds its catch-up DAG, `catchup_<job>`, with no file here. This docstring is each DAG's doc_md
# with the job's name filled in; the factory appends the job's description, paths and mode.
from statekeeper.factory import catchup_dag, per_job_dags

CONTINUOUS_NOTE = """
`{job}` is a *continuous* job (see `supervise_{job}`): this DAG has no schedule; trigger it to
replay landing data with an available-now run. While the supervisor's driver holds the
checkpoint this run waits for it instead of starting a second driver; give it its own
`checkpoint` and `output` params to replay on the side.
"""

globals().update(
    per_job_dags("catchup", catchup_dag, __doc__, notes={"continuous": CONTINUOUS_NOTE})
)
