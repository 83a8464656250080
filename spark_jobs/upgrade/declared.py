"""The job as declared now: its spec (``$STATEKEEPER_SPECS`` or include/jobs) and its JobDef."""

from __future__ import annotations

from typing import Any

from spark_jobs.jobs import definition, fingerprint  # the one fingerprint, run's and plan's
from spark_jobs.upgrade import schemas
from spark_jobs.upgrade.facts import Facts


def read_declared(spec: Any) -> Facts:
    job = definition(spec.name)
    # The batched executor keeps one state row per hash bucket of the key (spark_jobs.jobs.keyed),
    # its keys' states in it
    state = job.stored_state_schema(spec)
    return Facts(
        fingerprint=fingerprint(spec),
        state_key=list(job.state_key) or None,
        # transformWithState declares one schema per state variable; Spark stores them
        # elsewhere (compared through the binding's state_format and time_mode only)
        state_value=schemas.ddl(state) if isinstance(state, str) else None,
        output=schemas.ddl(job.schema),
        state_schema=job.declaration().get("state_schema"),
    )
