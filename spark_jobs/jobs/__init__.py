"""One module per job: ``build(spark, spec, events)`` turns the typed event streams into the
output stream; ``SINK`` says how it is written (``append`` or ``upsert``)."""

from __future__ import annotations

import importlib
from types import ModuleType

JOB_MODULES = {
    "sessions": "spark_jobs.jobs.sessions",
    "fraud_alerts": "spark_jobs.jobs.fraud_alerts",
    "service_health": "spark_jobs.jobs.service_health",
    "user_counts": "spark_jobs.jobs.user_counts",
    "windowed_counts": "spark_jobs.jobs.windowed_counts",
    "dedup_events": "spark_jobs.jobs.dedup_events",
    "order_payments": "spark_jobs.jobs.order_payments",
}


def job_module(name: str) -> ModuleType:
    from spark_jobs.contract.errors import UserError

    if name not in JOB_MODULES:
        raise UserError(
            f"job {name!r} has a spec but no implementation; jobs: {', '.join(JOB_MODULES)}"
        )
    return importlib.import_module(JOB_MODULES[name])
