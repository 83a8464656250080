"""service_health and user_counts logic (no JVM)."""

import pytest

from spark_jobs.state import service_health as h
from spark_jobs.state import user_counts as uc

pytestmark = pytest.mark.unit

MIN = 60_000


def test_silence_makes_stale_once_and_next_log_makes_ok_once():
    alerts, health, timer = h.on_logs("svc", [3 * MIN, 1 * MIN], None, 5 * MIN)
    assert alerts == [] and health == h.Health(3 * MIN, h.OK) and timer == 8 * MIN
    alerts, health = h.on_timer("svc", health, timer)
    assert [(a["status"], a["alert_time"], a["last_seen"]) for a in alerts] == [
        ("stale", 8 * MIN, 3 * MIN)
    ]
    assert h.on_timer("svc", health, 9 * MIN) == ([], health)  # already stale: no second alert
    alerts, health, timer = h.on_logs("svc", [20 * MIN, 21 * MIN], health, 5 * MIN)
    assert [(a["status"], a["alert_time"]) for a in alerts] == [("ok", 20 * MIN)]
    assert health.status == h.OK and timer == 26 * MIN


def test_silence_inside_one_batch_is_seen_in_event_time_mode_only():
    alerts, health, _ = h.on_logs(
        "svc", [0, 2 * MIN, 12 * MIN, 13 * MIN], h.Health(0, h.OK), 5 * MIN
    )
    assert [(a["status"], a["alert_time"], a["last_seen"]) for a in alerts] == [
        ("stale", 7 * MIN, 2 * MIN),
        ("ok", 12 * MIN, 12 * MIN),
    ]
    assert health == h.Health(13 * MIN, h.OK)
    alerts, _, _ = h.on_logs("svc", [0, 12 * MIN], h.Health(0, h.OK), 5 * MIN, now_ms=20 * MIN)
    assert alerts == []


def test_processing_time_timer_follows_the_clock():
    _, _, timer = h.on_logs("svc", [1 * MIN], None, 5 * MIN, now_ms=100 * MIN)
    assert timer == 105 * MIN


def test_initial_state_arms_a_timer_only_for_ok_services():
    assert h.initial_timer(h.Health(10 * MIN, h.OK), 5 * MIN) == 15 * MIN
    assert h.initial_timer(h.Health(10 * MIN, h.STALE), 5 * MIN) is None


def test_user_counts_totals_accumulate():
    row, st = uc.update("u", [(5, "purchase"), (3, "page_view")], None)
    assert row == {"user_id": "u", "total_events": 2, "purchases": 1, "last_event_time": 5}
    row, st = uc.update("u", [(4, "purchase")], st)
    assert (row["total_events"], row["purchases"], row["last_event_time"]) == (3, 2, 5)
