"""Key-level state metrics (docs/contracts.md §4): keys held, changed, removed by the logic, removed
by the timeout, counted in user keys rather than Spark's state rows.

Spark's ``numRowsTotal`` counts state rows: hash buckets for the batched executor (256 whatever
the number of users), and for transformWithState every value, list element and timer. The
stateful functions know the truth, so each call emits one *metric row* beside its output rows:
the data columns null, the column ``_keys`` set to what the call did. The sink sums a batch's
metric rows, drops them from the table write, and the progress log gets
``"keys": {"total", "updated", "removed", "expired"}`` for the batch.

A call knows how many keys it held before and after, not the whole store, so a metric row
carries ``held`` as a change; the running total is the previous batch's total plus the batch's
changes (the first batch of a checkpoint starts at 0).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

COLUMN = "_keys"
FIELDS = ("held", "updated", "removed", "expired")
DDL = f"struct<{','.join(f'{f}:bigint' for f in FIELDS)}>"


def output_schema(schema: str) -> str:
    """A job's output columns (DDL) plus the metric column, for the stateful operator."""
    return f"{schema}, {COLUMN} {DDL}"


def counts(held: int, updated: int, removed: int, expired: int) -> dict[str, int]:
    """A metric row's ``_keys`` value."""
    return {"held": held, "updated": updated, "removed": removed, "expired": expired}


def frame(columns: Sequence[str], held: int, updated: int, removed: int, expired: int) -> Any:
    """One metric row beside output ``columns``: data columns null, ``_keys`` the counts."""
    import pandas as pd

    row: dict[str, Any] = dict.fromkeys(columns)
    row[COLUMN] = counts(held, updated, removed, expired)
    return pd.DataFrame([row], columns=[*columns, COLUMN])


def with_null_metrics(df: Any) -> Any:
    """Data rows as the operator emits them: the metric column present and null."""
    df[COLUMN] = None
    return df


def total(previous: int, batch: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """A batch's ``keys`` record from its metric rows and the previous batch's total."""
    sums = dict.fromkeys(FIELDS, 0)
    for m in batch:
        for f in FIELDS:
            sums[f] += int(m.get(f) or 0)
    return {
        "total": previous + sums["held"],
        "updated": sums["updated"],
        "removed": sums["removed"],
        "expired": sums["expired"],
    }


def data_rows(stream: Any) -> Any:
    """The operator's output without its metric rows and column: what the table gets."""
    from pyspark.sql import functions as F

    return stream.where(F.col(COLUMN).isNull()).drop(COLUMN)
