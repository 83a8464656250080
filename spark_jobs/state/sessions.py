"""Sessionization: a user's session is a maximal run of events each at most ``gap`` after the
previous one (event time). A session closes once the watermark passes ``session_end + gap``:
every later event is at or after the watermark, so none can join it any more.

State per user: the open sessions (usually one; several when a batch holds events far apart
before the watermark has caught up), each with its aggregates: a typed row of
:data:`STATE_SCHEMA`, read with :func:`from_state_row` and written with :func:`state_row`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

PAGE_VIEW = "page_view"
PURCHASE = "purchase"
CHECKOUT = "checkout"

# The per-key executor's state row: a user's open sessions, the last page views of each inside it.
STATE_SCHEMA = (
    "sessions array<struct<start:bigint,end:bigint,events:bigint,page_views:bigint,"
    "total_duration:bigint,pages:array<struct<t:bigint,eid:string,page:string>>,"
    "purchased:boolean,checkout_viewed:boolean>>"
)
# The batched executor's bucket columns (spark_jobs.state.buckets, spark_jobs.state.sessions_bulk):
# one entry per open session (a user may have several), then the sessions' last page views
# flattened, ``page_len`` of them per session.
BUCKET_COLUMNS = {
    "key": "string",
    "start": "bigint",
    "end": "bigint",
    "events": "bigint",
    "page_views": "bigint",
    "duration": "bigint",
    "purchased": "boolean",
    "checkout": "boolean",
    "page_len": "bigint",
    "page_t": "bigint",
    "page_eid": "string",
    "page_page": "string",
}


@dataclass
class Session:
    start: int
    end: int
    events: int = 0
    page_views: int = 0
    total_duration: int = 0
    pages: list[tuple[int, str, str]] | None = None  # (time, event_id, page), oldest first, capped
    purchased: bool = False
    checkout_viewed: bool = False

    def to_tuple(self) -> tuple:
        return (
            self.start,
            self.end,
            self.events,
            self.page_views,
            self.total_duration,
            list(self.pages or ()),
            self.purchased,
            self.checkout_viewed,
        )

    @classmethod
    def from_tuple(cls, t: tuple) -> Session:
        return cls(t[0], t[1], t[2], t[3], t[4], [tuple(p) for p in t[5]], t[6], t[7])

    def to_row(self) -> dict[str, Any]:
        """One element of the state row's ``sessions`` array (:data:`STATE_SCHEMA`)."""
        return {
            "start": self.start,
            "end": self.end,
            "events": self.events,
            "page_views": self.page_views,
            "total_duration": self.total_duration,
            "pages": [{"t": t, "eid": e, "page": p} for t, e, p in self.pages or ()],
            "purchased": self.purchased,
            "checkout_viewed": self.checkout_viewed,
        }

    @classmethod
    def from_row(cls, r: Any) -> Session:
        """A ``sessions`` element as Spark hands it back (a Row) or as :meth:`to_row` wrote it."""
        return cls(
            r["start"],
            r["end"],
            r["events"],
            r["page_views"],
            r["total_duration"],
            [(p["t"], p["eid"], p["page"]) for p in r["pages"] or ()],
            r["purchased"],
            r["checkout_viewed"],
        )


def state_row(sessions: list[Session]) -> dict[str, Any]:
    """A user's state row (:data:`STATE_SCHEMA`) holding ``sessions``."""
    return {"sessions": [s.to_row() for s in sessions]}


def from_state_row(row: Any) -> list[Session]:
    """The open sessions of a state row (Spark's Row, a tuple or :func:`state_row`'s dict)."""
    items = row["sessions"] if isinstance(row, dict) else row[0]
    return [Session.from_row(r) for r in items or ()]


def from_json_state(old: dict[str, Any]) -> dict[str, Any] | None:
    """``upgrade migrate``'s rule for state stored as ``sessions binary`` (the JSON codec of
    earlier releases) -> :data:`STATE_SCHEMA`; None (drop the key) when it holds no session."""
    from spark_jobs.state import codec

    held = codec.decode(old["sessions"]) or []
    return state_row([Session.from_tuple(t) for t in held]) if held else None


# An event as the logic sees it: (time_ms, event_id, event_type, page, duration_sec)
Event = tuple[int, str, str, "str | None", "int | None"]


def session_id(user_id: str, start_ms: int) -> str:
    """Deterministic, unique per (user, session_start)."""
    return hashlib.sha1(f"{user_id}|{start_ms}".encode()).hexdigest()[:20]


def _from_event(e: Event, max_pages: int) -> Session:
    t, eid, etype, page, dur = e
    pv = etype == PAGE_VIEW
    return Session(
        start=t,
        end=t,
        events=1,
        page_views=int(pv),
        total_duration=int(dur or 0),
        pages=[(t, eid, page)] if pv and page is not None and max_pages > 0 else [],
        purchased=etype == PURCHASE,
        checkout_viewed=etype == CHECKOUT,
    )


def _merge(a: Session, b: Session, max_pages: int) -> Session:
    pages = sorted((a.pages or []) + (b.pages or []))
    return Session(
        start=min(a.start, b.start),
        end=max(a.end, b.end),
        events=a.events + b.events,
        page_views=a.page_views + b.page_views,
        total_duration=a.total_duration + b.total_duration,
        pages=pages[-max_pages:] if max_pages > 0 else [],
        purchased=a.purchased or b.purchased,
        checkout_viewed=a.checkout_viewed or b.checkout_viewed,
    )


def add_events(
    open_sessions: list[Session], events: Iterable[Event], gap_ms: int, max_pages: int
) -> list[Session]:
    """Merge new events (any order) into the open sessions; returns sessions sorted by start."""
    items = list(open_sessions) + [
        _from_event(e, max_pages) for e in sorted(events, key=lambda e: (e[0], e[1]))
    ]
    items.sort(key=lambda s: (s.start, s.end))
    merged: list[Session] = []
    for s in items:
        if merged and s.start - merged[-1].end <= gap_ms:
            merged[-1] = _merge(merged[-1], s, max_pages)
        else:
            merged.append(s)
    return merged


def close_expired(
    sessions: list[Session], watermark_ms: int, gap_ms: int
) -> tuple[list[Session], list[Session]]:
    """(closed, still open): a session closes when the watermark has passed end + gap."""
    closed = [s for s in sessions if s.end + gap_ms < watermark_ms]
    still = [s for s in sessions if s.end + gap_ms >= watermark_ms]
    return closed, still


def next_timeout(sessions: list[Session], gap_ms: int) -> int | None:
    """The event-time timeout: when the earliest open session can close."""
    return min((s.end + gap_ms for s in sessions), default=None)


def output_row(user_id: str, s: Session) -> dict:
    return {
        "user_id": user_id,
        "session_id": session_id(user_id, s.start),
        "session_start": s.start,
        "session_end": s.end,
        "events": s.events,
        "page_views": s.page_views,
        "total_duration_sec": s.total_duration,
        "last_pages": [p for _, _, p in (s.pages or [])],
        "purchased": s.purchased,
        "checkout_viewed": s.checkout_viewed,
    }


def update(
    user_id: str,
    events: Iterable[Event],
    state: list[Session],
    watermark_ms: int,
    gap_ms: int,
    max_pages: int,
) -> tuple[list[dict], list[Session], int | None]:
    """One call for one user: new events (maybe none, on a timeout) and the open sessions.

    Returns (rows of closed sessions, open sessions to keep, timeout or None = remove state).
    """
    sessions = add_events(state, events, gap_ms, max_pages)
    closed, still = close_expired(sessions, watermark_ms, gap_ms)
    return [output_row(user_id, s) for s in closed], still, next_timeout(still, gap_ms)
