"""Statekeeper's Spark side: stateful streaming jobs, their checkpoints and their data quality.

Never imports Airflow. Entry point: ``python -m spark_jobs`` (see docs/contracts.md §1).
"""
