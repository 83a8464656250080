"""Brute-force login detection per user.

Failures count up; a LOGIN_SUCCESS resets the count, and so does a gap of more than
``failure_gap`` (event time) since the last counted failure. The ``threshold``-th failure emits
one alert and resets. The event-time timeout at last failure + gap drops the state of a user who
went quiet (a later failure would have reset it anyway), so state stays bounded.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

FAILED = "LOGIN_FAILED"
SUCCESS = "LOGIN_SUCCESS"

# An event as the logic sees it: (time_ms, event_id, event_type, ip)
Event = tuple[int, str, str, str]


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
