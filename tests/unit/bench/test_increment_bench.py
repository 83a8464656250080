"""The hourly catch-up bench's second day: the first day's events a day later, nothing else."""

from __future__ import annotations

import json

import pytest

from bench import bench_increment

pytestmark = pytest.mark.unit


def test_the_next_day_holds_the_same_events_a_day_later(tmp_path):
    first = [
        {"event_id": "a", "user_id": "u1", "event_time": "2026-03-15T23:59:59.123Z", "x": 1},
        {"event_id": "b", "user_id": "u2", "event_time": "2026-03-15T12:00:00.000Z", "x": None},
    ]
    src, dest = tmp_path / "day-1.json", tmp_path / "day-2.json"
    bad = ['{"event_id": "c", "event_time": 17}', "not json", '{"event_id": "d"}']
    src.write_text("\n".join([*(json.dumps(e) for e in first), *bad]) + "\n")
    bench_increment._later(src, dest)
    lines = dest.read_text().splitlines()
    assert lines[2:] == bad  # the bad lines, as bad the next day
    later = [json.loads(line) for line in lines[:2]]
    assert [e["event_time"] for e in later] == [
        "2026-03-16T23:59:59.123Z",
        "2026-03-16T12:00:00.000Z",
    ]
    assert [{**e, "event_time": None} for e in later] == [{**e, "event_time": None} for e in first]


def test_the_line_names_both_sides_and_the_ratio():
    got = bench_increment.line(
        {
            "events": 2000,
            "keys": 100,
            "run_seconds": [11.6, 11.7],
            "builtin_seconds": [12.7, 12.8],
            "ratio_vs_builtin": 1.09,
        }
    )
    assert "2,000 new events" in got and "run [11.6, 11.7] s" in got
    assert got.endswith("vs built-in 1.09x")
