"""Running totals per user (mapGroupsWithState semantics: one output per user per update)."""

from __future__ import annotations

from collections.abc import Iterable

PURCHASE = "purchase"

# (total_events, purchases, last_event_time_ms)
Totals = tuple[int, int, int]
# An event as the logic sees it: (time_ms, event_type)
Event = tuple[int, str]


def update(user_id: str, events: Iterable[Event], state: Totals | None) -> tuple[dict, Totals]:
    total, purchases, last = state or (0, 0, 0)
    for t, etype in events:
        total += 1
        purchases += etype == PURCHASE
        last = max(last, t)
    row = {
        "user_id": user_id,
        "total_events": total,
        "purchases": purchases,
        "last_event_time": last,
    }
    return row, (total, purchases, last)
