"""The ids of a job's own DAGs, named once: the DAG factory builds them, the health app
authorises a job's rows against them. (``backfill``, ``data_quality`` and
``checkpoint_maintenance`` serve every job, so reading them grants no job in particular.)"""

from __future__ import annotations

from spark_jobs.contract.spec import JobSpec


def catchup(job: str) -> str:
    return f"catchup_{job}"


def supervise(job: str) -> str:
    return f"supervise_{job}"


def of_job(spec: JobSpec) -> list[str]:
    """Every job has its catch-up DAG; a continuous job also its supervisor."""
    ids = [catchup(spec.name)]
    if spec.mode == "continuous":
        ids.append(supervise(spec.name))
    return ids
