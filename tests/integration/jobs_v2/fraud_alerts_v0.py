"""``fraud_alerts`` as the release before typed state kept it, for the upgrade tests
(``STATEKEEPER_JOB_MODULES``): the batched executor's bucket as ``keys int, blob binary``, the
blob the columnar encoding of the same columns, the held events' under ``held.``. Only
declared, never run: ``to_blob`` is the ``--with`` rule that writes a live checkpoint's state
in that old form, so a test can migrate it forward with the job's own rule."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from spark_jobs.jobs import fraud_alerts as current
from spark_jobs.state import buckets, columnar
from spark_jobs.state.fraud import BUCKET_COLUMNS


def to_blob(row: dict[str, Any]) -> dict[str, Any]:
    cols = buckets.read(BUCKET_COLUMNS, (row["keys"], *(row[c] for c in BUCKET_COLUMNS)))
    old = {n.replace(buckets.HELD, "held.", 1): v for n, v in cols.items()}
    return {"keys": row["keys"], "blob": columnar.encode(old, int(row["keys"]))}


JOB = replace(current.JOB, bucket_state_schema=buckets.BLOB_SCHEMA, state_rules=())
