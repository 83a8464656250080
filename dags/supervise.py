"""### Supervisor of `{job}` (continuous)

Keeps exactly one processing-time query of the job alive. Each run watches the driver for
`watch_minutes` (the next scheduled run takes over), waiting in a deferrable trigger, not in a
worker slot.

- First `upgrade_plan` (`python -m spark_jobs upgrade plan {job} --json`): a changed job (spec
  or code) stops the run with the plan's line and the command that applies the change
  (docs/upgrades.md); nothing is launched. `action = stop` skips it.
- No driver holds the checkpoint: launch one (spark-submit in its own session, so it outlives
  the task) with the `spark_default` connection.
- A driver holds it (or one launched is still starting): attach, never launch a second one,
  also when this task is retried, killed or timed out.
- Health from `<checkpoint>/_statekeeper/progress.jsonl`: progress age, batch duration against
  the trigger interval, input against processing rate (backlog), state rows growing with none
  removed, late rows dropped. Dead or stalled: stop, back off (doubling), relaunch, at most
  `max_restarts` times per run; the other findings are logged as warnings.
- `action = stop` stops the driver (e.g. before checkpoint maintenance, a restore or an
  `upgrade migrate`).
"""

# One Airflow DAG per continuous job spec (`mode: continuous`): `supervise_<job>`, with no file
# here. This docstring is each DAG's doc_md with the job's name filled in.
from statekeeper.factory import per_job_dags, supervisor_dag

globals().update(per_job_dags("supervise", supervisor_dag, __doc__, modes=("continuous",)))
