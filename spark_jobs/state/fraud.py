"""Brute-force login detection per user.

Failures count up; a LOGIN_SUCCESS resets the count, and so does a gap of more than
``failure_gap`` (event time) since the last counted failure. The ``threshold``-th failure emits
one alert and resets. The event-time timeout at last failure + gap drops the state of a user who
went quiet (a later failure would have reset it anyway), so state stays bounded.

The per-key executor's state row (:data:`STATE_SCHEMA`): the failure run (null when none) and
the events held until the watermark passes them (:mod:`spark_jobs.state.ordered`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from spark_jobs.state import buckets

FAILED = "LOGIN_FAILED"
SUCCESS = "LOGIN_SUCCESS"

# An event as the logic sees it: (time_ms, event_id, event_type, ip)
Event = tuple[int, str, str, str]
EVENT_FIELDS = ("t", "eid", "etype", "ip")
PAYLOAD = {"etype": "string", "ip": "string"}  # an event's fields beside key, time and id

STATE_SCHEMA = (
    "run struct<count:bigint,first:bigint,last:bigint,ips:array<string>>, "
    "held array<struct<t:bigint,eid:string,etype:string,ip:string>>"
)
# The batched executor's bucket columns (spark_jobs.state.buckets, spark_jobs.state.fraud_bulk):
# one entry per user with a failure run, its distinct ips flattened (``ip_len`` per user), then
# the events held until the watermark passes them, one entry each.
BUCKET_COLUMNS = {
    "key": "string",
    "count": "bigint",
    "first": "bigint",
    "last": "bigint",
    "deadline": "bigint",
    "ip_len": "bigint",
    "ips": "string",
    **buckets.held_columns(PAYLOAD),
}


@dataclass
class Failures:
    count: int = 0
    first: int = 0
    last: int = 0
    ips: set[str] = field(default_factory=set)

    def to_tuple(self) -> tuple:
        return (self.count, self.first, self.last, sorted(self.ips))

    @classmethod
    def from_tuple(cls, t: tuple | None) -> Failures:
        if not t:
            return cls()
        return cls(t[0], t[1], t[2], set(t[3]))


def state_row(run: Failures | None, held: list[tuple]) -> dict[str, Any]:
    """A user's state row (:data:`STATE_SCHEMA`): its run and its held events."""
    return {
        "run": None
        if run is None
        else {"count": run.count, "first": run.first, "last": run.last, "ips": sorted(run.ips)},
        "held": [dict(zip(EVENT_FIELDS, e, strict=True)) for e in held],
    }


def from_state_row(row: Any) -> tuple[Failures | None, list[tuple]]:
    """(the run or None, the held events as tuples) of a state row: Spark's Row, a tuple or
    :func:`state_row`'s dict."""
    run, held = (row["run"], row["held"]) if isinstance(row, dict) else (row[0], row[1])
    st = None if run is None else Failures(run["count"], run["first"], run["last"], set(run["ips"]))
    return st, [tuple(h[f] for f in EVENT_FIELDS) for h in held or ()]


def from_json_state(old: dict[str, Any]) -> dict[str, Any] | None:
    """``upgrade migrate``'s rule for state stored as ``failures binary`` (the JSON codec of
    earlier releases: ``(run tuple or None, held events)``) -> :data:`STATE_SCHEMA`; None (drop
    the key) when it holds neither."""
    from spark_jobs.state import codec

    value = codec.decode(old["failures"])
    if not value:
        return None
    run, held = value
    if not run and not held:
        return None
    return state_row(Failures.from_tuple(run) if run else None, [tuple(h) for h in held])


def update(
    user_id: str,
    events: Iterable[Event],
    state: Failures | None,
    gap_ms: int,
    threshold: int,
) -> tuple[list[dict], Failures | None, int | None]:
    """Returns (alert rows, state to keep or None to remove, event-time timeout or None)."""
    st = state or Failures()
    alerts: list[dict] = []
    for t, _eid, etype, ip in sorted(events, key=lambda e: (e[0], e[1])):
        if etype == SUCCESS:
            st = Failures()
            continue
        if etype != FAILED:
            continue
        if st.count and t - st.last > gap_ms:
            st = Failures()
        if not st.count:
            st.first = t
        st.count += 1
        st.last = max(st.last, t)
        st.ips.add(ip)
        if st.count >= threshold:
            alerts.append(
                {
                    "user_id": user_id,
                    "alert_time": t,
                    "first_failure_time": st.first,
                    "failed_attempts": st.count,
                    "distinct_ips": len(st.ips),
                    "ips": sorted(st.ips),
                }
            )
            st = Failures()
    if not st.count:
        return alerts, None, None
    return alerts, st, st.last + gap_ms


def expire(state: Failures | None) -> tuple[list[dict], None, None]:
    """The timeout fired: the failure run is over; nothing to emit, drop the state."""
    return [], None, None
