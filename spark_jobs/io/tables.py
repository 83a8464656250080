"""The output tables' schemas (CONTRACTS.md section 3) and the quarantine table's: one place.

The jobs produce exactly these columns; quality suites derive their schema checks from here.
"""

from __future__ import annotations

OUTPUTS: dict[str, str] = {
    "sessions": (
        "user_id string, session_id string, session_start timestamp, session_end timestamp, "
        "events bigint, page_views bigint, total_duration_sec bigint, last_pages array<string>, "
        "purchased boolean, checkout_viewed boolean"
    ),
    "fraud_alerts": (
        "user_id string, alert_time timestamp, first_failure_time timestamp, "
        "failed_attempts bigint, distinct_ips bigint, ips array<string>"
    ),
    "service_health": "service string, status string, alert_time timestamp, last_seen timestamp",
    "user_counts": "user_id string, total_events bigint, purchases bigint, last_event_time timestamp",
    "windowed_counts": "window_start timestamp, window_end timestamp, event_type string, count bigint",
    "dedup_events": (
        "event_id string, user_id string, event_type string, page string, duration_sec bigint, "
        "event_time timestamp"
    ),
    "order_payments": (
        "order_id string, user_id string, order_time timestamp, payment_id string, "
        "payment_time timestamp, amount decimal(18,2), payment_amount decimal(18,2), matched boolean"
    ),
}

# Keys that identify a row: unique in the table (quality checks, idempotent upserts).
KEYS: dict[str, tuple[str, ...]] = {
    "sessions": ("session_id",),
    "fraud_alerts": ("user_id", "alert_time"),
    "service_health": ("service", "alert_time", "status"),
    "user_counts": ("user_id",),
    "windowed_counts": ("window_start", "event_type"),
    "dedup_events": ("event_id",),
    "order_payments": ("order_id",),
}

# The event-time column that says how fresh each table is.
TIME_COLUMN: dict[str, str] = {
    "sessions": "session_end",
    "fraud_alerts": "alert_time",
    "service_health": "last_seen",
    "user_counts": "last_event_time",
    "windowed_counts": "window_end",
    "dedup_events": "event_time",
    "order_payments": "order_time",
}

# Columns that add up across rows of one key: the upsert sink merges user_counts' per-batch
# increments with them, and a backfill's append adds its rows to the live ones of the same key.
ADDITIVE: dict[str, dict[str, str]] = {
    "user_counts": {"total_events": "sum", "purchases": "sum", "last_event_time": "max"},
    "windowed_counts": {"count": "sum"},
}


def combined(job: str) -> dict[str, str]:
    """MERGE ``set`` expressions combining source ``s`` into target ``t`` by ``ADDITIVE[job]``."""
    how = {"sum": "t.`{c}` + s.`{c}`", "max": "greatest(t.`{c}`, s.`{c}`)"}
    return {c: how[op].format(c=c) for c, op in ADDITIVE[job].items()}


QUARANTINE = (
    "raw_line string, reason string, source_file string, quarantined_at timestamp, "
    "job string, kind string"
)


def columns(job: str) -> list[str]:
    return [c.strip().split(" ", 1)[0] for c in OUTPUTS[job].split(", ") if not c.startswith(" ")]
