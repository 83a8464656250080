"""Brute-force detection logic (no JVM)."""

import pytest

from spark_jobs.state import fraud as f

pytestmark = pytest.mark.unit

MIN = 60_000
GAP = 10 * MIN
THRESHOLD = 5  # the logic takes it from the job's params; the tests below count to 5


def fail(minute, ip="1.1.1.1", eid=None):
    return (minute * MIN, eid or f"f{minute}", f.FAILED, ip)


def ok(minute):
    return (minute * MIN, f"s{minute}", f.SUCCESS, "1.1.1.1")


def test_fifth_failure_alerts_once_and_resets():
    events = [fail(i, ip=f"10.0.0.{i % 2}") for i in range(7)]
    alerts, st, timeout = f.update("u", events, None, GAP, THRESHOLD)
    assert len(alerts) == 1
    a = alerts[0]
    assert (a["alert_time"], a["first_failure_time"], a["failed_attempts"], a["distinct_ips"]) == (
        4 * MIN,
        0,
        5,
        2,
    )
    assert st.count == 2 and timeout == 6 * MIN + GAP


def test_success_resets_the_count():
    events = [fail(0), fail(1), fail(2), fail(3), ok(4), fail(5), fail(6)]
    alerts, st, _ = f.update("u", events, None, GAP, THRESHOLD)
    assert alerts == [] and st.count == 2


def test_gap_over_ten_minutes_resets_and_exactly_ten_does_not():
    alerts, st, _ = f.update(
        "u", [fail(0), fail(1), fail(2), fail(3), fail(14)], None, GAP, THRESHOLD
    )
    assert alerts == [] and st.count == 1 and st.first == 14 * MIN
    alerts, _, _ = f.update(
        "u", [fail(0), fail(1), fail(2), fail(3), fail(13)], None, GAP, THRESHOLD
    )
    assert len(alerts) == 1


def test_out_of_order_within_a_batch_is_ordered_by_event_time():
    events = [fail(4), ok(0), fail(1), fail(2), fail(3), fail(5)]
    alerts, _, _ = f.update("u", events, None, GAP, THRESHOLD)
    assert len(alerts) == 1 and alerts[0]["first_failure_time"] == 1 * MIN


def test_state_carries_across_calls_and_expire_removes_it():
    _, st, _ = f.update("u", [fail(0), fail(1)], None, GAP, THRESHOLD)
    st = f.Failures.from_tuple(st.to_tuple())
    alerts, st2, _ = f.update("u", [fail(2), fail(3), fail(4)], st, GAP, THRESHOLD)
    assert len(alerts) == 1 and st2 is None  # reset to nothing: remove the state
    assert f.expire(st) == ([], None, None)
