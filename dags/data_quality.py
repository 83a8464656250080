"""### Data quality

Runs `python -m spark_jobs quality JOB` (Great Expectations suites under `include/expectations`)
for the selected jobs' tables: daily, and on demand from the UI. A `fail` finding fails that job's
task; `warn` findings are recorded in the results table and pass.
"""

from statekeeper.care_dags import quality_dag  # builds an airflow.sdk DAG from the job specs

dag = quality_dag(doc_md=__doc__)
