"""Statekeeper's Airflow parts: operators, triggers and hooks that drive ``python -m spark_jobs``.

Nothing here imports pyspark, pandas or great_expectations: the Spark side runs in its own process
(spark-submit or ``python -m spark_jobs``), and the DAG processor only parses these modules.
"""
