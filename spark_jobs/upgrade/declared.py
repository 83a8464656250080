"""The job as declared now: its spec (``$STATEKEEPER_SPECS`` or include/jobs) and its JobDef."""

from __future__ import annotations

from typing import Any

from spark_jobs.upgrade import schemas
from spark_jobs.upgrade.facts import Facts


def fingerprint(spec: Any) -> dict[str, Any]:
    """What the binding records of ``spec`` (the runner's fingerprint: one definition)."""
    from spark_jobs.jobs.runner import fingerprint as runner_fingerprint

    return runner_fingerprint(spec)


def state_schema(spec: Any, job: Any) -> Any:
    """The state row ``job`` stores under ``spec``: the batched executor keeps one row per hash
    bucket of the key (spark_jobs.jobs.keyed), its keys' states in it; else the job's own row."""
    from spark_jobs.jobs import keyed

    batched = spec.executor == "batched" and issubclass(job.params, keyed.BatchedParams)
    return keyed.STATE_SCHEMA if batched else job.state_schema


def read_declared(spec: Any) -> Facts:
    from spark_jobs.jobs import definition

    job = definition(spec.name)
    state = state_schema(spec, job)
    return Facts(
        fingerprint=fingerprint(spec),
        state_key=list(job.state_key) or None,
        # transformWithState declares one schema per state variable; Spark stores them
        # elsewhere (compared through the binding's state_format and time_mode only)
        state_value=schemas.ddl(state) if isinstance(state, str) else None,
        output=schemas.ddl(job.schema),
        state_schema=job.declaration().get("state_schema"),
    )
