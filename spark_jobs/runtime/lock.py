"""The checkpoint's one-writer lock now lives in the contract (:mod:`spark_jobs.contract.lock`),
which the Airflow side reads too; these names stay importable here for the Spark side's callers."""

from spark_jobs.contract.lock import JobLock, describe, holder, is_held, lock_path

__all__ = ["JobLock", "describe", "holder", "is_held", "lock_path"]
