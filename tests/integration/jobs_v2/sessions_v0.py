"""``sessions`` as the release before typed state kept it, for the upgrade tests
(``STATEKEEPER_JOB_MODULES``): the batched executor's bucket as ``keys int, blob binary``, the
blob the columnar encoding of the same columns. Only declared, never run: ``to_blob`` is the
``--with`` rule that writes a live checkpoint's state in that old form, so a test can then
migrate it forward with the job's own rule, as an upgraded deployment does."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from spark_jobs.jobs import sessions as current
from spark_jobs.state import buckets, columnar
from spark_jobs.state.sessions import BUCKET_COLUMNS


def to_blob(row: dict[str, Any]) -> dict[str, Any]:
    cols = buckets.read(BUCKET_COLUMNS, (row["keys"], *(row[c] for c in BUCKET_COLUMNS)))
    return {"keys": row["keys"], "blob": columnar.encode(cols, int(row["keys"]))}


def explodes(row: dict[str, Any]) -> dict[str, Any]:
    """A rule with a bug: ``upgrade migrate --with`` must refuse it in one line, changing nothing."""
    raise ValueError(f"cannot convert a bucket of {row['keys']} keys")


JOB = replace(current.JOB, bucket_state_schema=buckets.BLOB_SCHEMA, state_rules=())
