"""A batch's event-time statistics (``eventTime`` max, min, avg of its progress record), taken
from the good events themselves when the watermark also sees bad lines.

The runner sets a job's watermark below the parsed lines' one shuffle
(:mod:`spark_jobs.io.watermarks`), so bad lines pass Spark's watermark node too, with their event
time nulled. That node counts a null as epoch 0: the watermark (from the max) is right, but the
min and avg Spark reports would not be. The good events' own figures are observed in the same
pass (``Dataset.observe``, metrics named ``METRIC_PREFIX<kind>``, by
:mod:`spark_jobs.io.batch_clock`) and put back here, before the record is logged, in Spark's
format: the record reads as if only good events had been counted, which is what Spark reports
when the watermark is set above the shuffle.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

METRIC_PREFIX = "_statekeeper_event_time_"
STATS = ("max", "min", "avg")


def spark_time(ms: int) -> str:
    """``ms`` (epoch milliseconds) as Spark writes an ``eventTime`` value: UTC, milliseconds, Z."""
    t = datetime.fromtimestamp(ms // 1000, UTC)
    return f"{t:%Y-%m-%dT%H:%M:%S}.{ms % 1000:03d}Z"


def restore(progress: dict[str, Any]) -> None:
    """Replace ``progress``'s event-time max, min and avg by the observed good events' (none
    when the batch had none, as Spark leaves them out), and drop the observed metrics that
    carried them. A record without them is left as it is; so is the event time of a query
    without a watermark (the parse observes every kind's lines, watermarked or not)."""
    observed = progress.get("observedMetrics") or {}
    mine = [observed.pop(k) for k in [k for k in observed if k.startswith(METRIC_PREFIX)]]
    if not mine:
        return
    if not observed:
        progress.pop("observedMetrics", None)
    if not progress.get("eventTime"):  # no watermark: Spark reports no event time, nor do we
        return
    event_time = progress["eventTime"]
    for stat in STATS:
        event_time.pop(stat, None)
    seen = [m for m in mine if int(m.get("count") or 0)]
    if not seen:
        return
    count = sum(int(m["count"]) for m in seen)
    # Spark's avg is a running mean cut to whole milliseconds; over several kinds, their
    # mean weighted by count
    total = sum(float(m["avg"]) * int(m["count"]) for m in seen)
    event_time["avg"] = spark_time(int(total / count))
    event_time["max"] = spark_time(max(int(m["max"]) for m in seen))
    event_time["min"] = spark_time(min(int(m["min"]) for m in seen))
