"""A second release of ``user_counts`` for the upgrade tests (``STATEKEEPER_JOB_MODULES``):
it also counts page views, a field its state row gains and a column its table gains.
``page_views_from_totals`` is the ``--with`` rule that gives keys already in state theirs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from spark_jobs.io import key_metrics, watermarks
from spark_jobs.io.tables import column_names
from spark_jobs.jobs import user_counts as v1

SCHEMA = v1.SCHEMA + ", page_views bigint"
COLUMNS = column_names(SCHEMA)
STATE_SCHEMA = v1.STATE_SCHEMA + ", page_views long"


def page_views_from_totals(old: dict[str, Any]) -> dict[str, Any]:
    """v1 counted two kinds: every event not a purchase was a page view."""
    return {**old, "page_views": old["total_events"] - old["purchases"]}


def update_totals(key: tuple, pdfs: Iterator[Any], state: Any) -> Iterator[Any]:
    from spark_jobs.jobs.pandas_io import concat, emit, to_ms

    new_key = not state.exists
    prev = tuple(state.get) if state.exists else (0, 0, 0, 0)
    total, purchases, last, views = prev
    df = concat(pdfs)
    if df is not None:
        for t, etype in zip(to_ms(df["event_time"]).tolist(), df["event_type"], strict=True):
            total, last = total + 1, max(last, t)
            purchases += etype == "purchase"
            views += etype == "page_view"
    state.update((total, purchases, last, views))
    row = {
        "user_id": key[0],
        "total_events": total - prev[0],  # this batch's increments (the upsert sink adds them)
        "purchases": purchases - prev[1],
        "last_event_time": last,
        "page_views": views,  # the running count: the table keeps the greatest (additive max)
    }
    for out in emit([row], COLUMNS, ("last_event_time",)):
        yield key_metrics.with_null_metrics(out)
    yield key_metrics.frame(COLUMNS, int(new_key), 1, 0, 0)


def build(spark: Any, spec: Any, events: dict[str, Any]) -> Any:
    # the runner sets the watermark below its shuffle (JobDef.watermarks, kept from v1)
    stream = watermarks.on(events["clickstream"], "event_time", spec.watermark_seconds)
    return (
        stream.select("user_id", "event_time", "event_type")
        .groupBy("user_id")
        .applyInPandasWithState(
            update_totals, key_metrics.output_schema(SCHEMA), STATE_SCHEMA, "update", "NoTimeout"
        )
    )


JOB = replace(
    v1.JOB,
    schema=SCHEMA,
    build=build,
    state_schema=STATE_SCHEMA,
    additive={**v1.JOB.additive, "page_views": "max"},
)
