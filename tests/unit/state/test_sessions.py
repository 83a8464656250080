"""Sessionization logic, by hand-made events (no JVM)."""

import pytest

from spark_jobs.state import sessions as s

pytestmark = pytest.mark.unit

MIN = 60_000
GAP = 30 * MIN
PAGES = 10  # last_pages kept per session


def ev(minute, kind="page_view", page="/p", dur=10, eid=None):
    return (minute * MIN, eid or f"e{minute}", kind, page, dur)


def test_out_of_order_events_in_one_batch_form_one_session():
    events = [ev(10), ev(0), ev(25), ev(5)]
    rows, open_, timeout = s.update("u1", events, [], watermark_ms=0, gap_ms=GAP, max_pages=PAGES)
    assert rows == []
    assert [(o.start, o.end, o.events) for o in open_] == [(0, 25 * MIN, 4)]
    assert timeout == 25 * MIN + GAP


def test_a_batch_closes_one_session_and_opens_the_next():
    # open session 0..10; new events at 50 (gap 40 > 30: new session) and the watermark has passed 10+30
    state = s.add_events([], [ev(0), ev(10)], GAP, PAGES)
    rows, open_, timeout = s.update(
        "u1", [ev(50), ev(55)], state, watermark_ms=45 * MIN, gap_ms=GAP, max_pages=PAGES
    )
    assert [(r["session_start"], r["session_end"], r["events"]) for r in rows] == [(0, 10 * MIN, 2)]
    assert [(o.start, o.end) for o in open_] == [(50 * MIN, 55 * MIN)]
    assert timeout == 85 * MIN


def test_several_sessions_of_one_key_emitted_in_one_call():
    events = [ev(0), ev(5), ev(100), ev(200)]
    rows, open_, _ = s.update("u1", events, [], watermark_ms=300 * MIN, gap_ms=GAP, max_pages=PAGES)
    assert [r["session_start"] for r in rows] == [0, 100 * MIN, 200 * MIN]
    assert open_ == []


def test_gap_is_inclusive_and_close_needs_the_watermark_past_end_plus_gap():
    rows, open_, _ = s.update(
        "u1", [ev(0), ev(30)], [], watermark_ms=0, gap_ms=GAP, max_pages=PAGES
    )
    assert len(open_) == 1 and open_[0].events == 2  # exactly gap apart: same session
    rows, open_, timeout = s.update(
        "u1", [], open_, watermark_ms=60 * MIN, gap_ms=GAP, max_pages=PAGES
    )
    assert rows == [] and timeout == 60 * MIN  # watermark == end + gap: not passed yet
    rows, open_, timeout = s.update(
        "u1", [], open_, watermark_ms=60 * MIN + 1, gap_ms=GAP, max_pages=PAGES
    )
    assert len(rows) == 1 and open_ == [] and timeout is None  # None: remove() the state


def test_a_late_arriving_event_bridges_two_open_sessions():
    state = s.add_events([], [ev(0), ev(50)], GAP, PAGES)
    assert len(state) == 2
    _, open_, _ = s.update("u1", [ev(25)], state, watermark_ms=0, gap_ms=GAP, max_pages=PAGES)
    assert [(o.start, o.end, o.events) for o in open_] == [(0, 50 * MIN, 3)]


def test_aggregates_pages_and_flags():
    events = [
        ev(0, "page_view", "/a", 5),
        ev(1, "click", None, None),
        ev(2, "checkout", "/checkout", 7),
        ev(3, "purchase", None, 3),
        ev(4, "page_view", "/b", None),
    ] + [ev(5 + i, "page_view", f"/x{i}", 1) for i in range(12)]
    rows, _, _ = s.update("u1", events, [], watermark_ms=10**12, gap_ms=GAP, max_pages=PAGES)
    (r,) = rows
    assert r["events"] == 17 and r["page_views"] == 14
    assert r["total_duration_sec"] == 5 + 7 + 3 + 12
    assert r["purchased"] and r["checkout_viewed"]
    assert r["last_pages"] == [f"/x{i}" for i in range(2, 12)]  # the last 10, oldest first
    assert r["session_id"] == s.session_id("u1", 0)


def test_session_id_is_deterministic_and_unique_per_user_and_start():
    assert s.session_id("u1", 5) == s.session_id("u1", 5)
    assert len({s.session_id("u1", 5), s.session_id("u1", 6), s.session_id("u2", 5)}) == 3


def test_state_round_trips_through_the_codec():
    from spark_jobs.state import codec

    state = s.add_events([], [ev(0), ev(3)], GAP, PAGES)
    back = [
        s.Session.from_tuple(t) for t in codec.decode(codec.encode([x.to_tuple() for x in state]))
    ]
    assert back == state
    with pytest.raises(ValueError, match="version"):
        codec.decode(b"\x09junk")
