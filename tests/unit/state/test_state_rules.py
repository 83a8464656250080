"""The built-in ``upgrade migrate`` rules of sessions and fraud_alerts: state stored by earlier
releases (one JSON blob per user, spark_jobs.state.codec) becomes exactly the typed row the
per-key executors write now for the same events, and the job continues from it unchanged."""

from __future__ import annotations

import pytest

from spark_jobs.jobs import fraud_alerts, sessions
from spark_jobs.jobs.declaration import StateRule
from spark_jobs.state import codec, ordered
from spark_jobs.state import fraud as fraud_logic
from spark_jobs.state import sessions as session_logic

pytestmark = pytest.mark.unit

MIN = 60_000
GAP = 30 * MIN


def _rule(job, old_schema: str) -> StateRule:
    (rule,) = [r for r in job.state_rules if r.from_schema == old_schema]
    return rule


def _clicks(user: str, start: int) -> list[tuple]:
    return [
        (start, f"{user}-a", "page_view", "/home", 5),
        (start + 2 * MIN, f"{user}-b", "page_view", "/cart", None),
        (start + 3 * MIN, f"{user}-c", "purchase", None, 7),
        (start + 90 * MIN, f"{user}-d", "page_view", "/again", 1),  # a second open session
    ]


def test_sessions_json_state_becomes_the_typed_row():
    rule = _rule(sessions.JOB, "sessions binary")
    _, still, _ = session_logic.update("u1", _clicks("u1", 0), [], 0, GAP, 2)
    assert len(still) == 2 and still[0].pages
    # what the per-key executor stored until now, and what it stores now
    old = {"sessions": codec.encode([s.to_tuple() for s in still])}
    typed = rule.convert(old)
    assert typed == session_logic.state_row(still)
    assert typed["sessions"][0]["pages"] == [
        {"t": 0, "eid": "u1-a", "page": "/home"},
        {"t": 2 * MIN, "eid": "u1-b", "page": "/cart"},
    ]
    # the job continues from the converted row as it would have from its own
    later = [(95 * MIN, "u1-e", "checkout", None, 2)]
    wm = 200 * MIN
    assert session_logic.update(
        "u1", later, session_logic.from_state_row(typed), wm, GAP, 2
    ) == session_logic.update("u1", later, still, wm, GAP, 2)
    assert rule.convert({"sessions": codec.encode([])}) is None  # nothing open: key dropped


def test_fraud_json_state_becomes_the_typed_row():
    rule = _rule(fraud_alerts.JOB, "failures binary")
    events = [
        (1_000, "e1", "LOGIN_FAILED", "10.0.0.1"),
        (2_000, "e2", "LOGIN_FAILED", "10.0.0.2"),
        (9_000, "e3", "LOGIN_FAILED", "10.0.0.1"),  # past the watermark: still held
    ]
    due, held = ordered.release_rows([], events, 5_000)
    _, st, _ = fraud_logic.update("u1", due, None, 10 * MIN, 5)
    assert st is not None and st.count == 2 and held
    old = {"failures": codec.encode((st.to_tuple(), held))}
    typed = rule.convert(old)
    assert typed == fraud_logic.state_row(st, held)
    assert typed["run"] == {
        "count": 2,
        "first": 1_000,
        "last": 2_000,
        "ips": ["10.0.0.1", "10.0.0.2"],
    }
    assert typed["held"] == [{"t": 9_000, "eid": "e3", "etype": "LOGIN_FAILED", "ip": "10.0.0.1"}]
    assert fraud_logic.from_state_row(typed) == (st, held)
    # held events only (no run yet) and nothing at all
    only_held = rule.convert({"failures": codec.encode((None, held))})
    assert only_held == {"run": None, "held": typed["held"]}
    assert rule.convert({"failures": codec.encode((None, []))}) is None


def _typed(columns, row: tuple) -> dict:
    """A bucket state row as the rules give it: a dict of ``keys`` and the columns' lists."""
    return dict(zip(["keys", *columns], row, strict=True))


def test_sessions_bucket_blob_becomes_the_typed_bucket_row():
    import numpy as np

    from spark_jobs.state import buckets, columnar, sessions_bulk

    rule = _rule(sessions.JOB, buckets.BLOB_SCHEMA)
    rows = [("u1", *e) for e in _clicks("u1", 0)] + [("u2", *e) for e in _clicks("u2", 7 * MIN)]
    rows.append(("u3", 9, "x", "checkout", None, None))
    key, t, eid, etype, page, dur = zip(*rows, strict=True)
    obj = lambda v: np.array(v, dtype=object)  # noqa: E731
    events = sessions_bulk.Events(
        obj(key), np.array(t), obj(eid), obj(etype), obj(page), np.array([d or 0 for d in dur])
    )
    _, still, _ = sessions_bulk.update_bucket(events, sessions_bulk.Sessions.empty(), 0, GAP, 2)
    assert still.key_count() == 3 and len(still) == 5
    # an earlier release stored exactly these columns as one blob; this one stores the arrays
    old = {"keys": 3, "blob": columnar.encode(still.columns(), 3)}
    cols = session_logic.BUCKET_COLUMNS
    assert rule.convert(old) == _typed(cols, buckets.row(cols, still.columns(), 3))
    assert rule.convert({"keys": 0, "blob": b""}) is None


def test_fraud_bucket_blob_becomes_the_typed_bucket_row():
    import numpy as np

    from spark_jobs.state import buckets, columnar, fraud_bulk

    rule = _rule(fraud_alerts.JOB, buckets.BLOB_SCHEMA)
    ev = [
        ("u1", 1_000, "e1", "LOGIN_FAILED", "10.0.0.1"),
        ("u1", 2_000, "e2", "LOGIN_FAILED", "10.0.0.2"),
        ("u2", 3_000, "e3", "LOGIN_FAILED", "10.0.0.3"),
        ("u3", 9_000, "e4", "LOGIN_FAILED", "10.0.0.4"),  # past the watermark: held
    ]
    new = {
        n: np.array(c, dtype=np.int64 if n == "t" else object)
        for n, c in zip(("key", "t", "eid", "etype", "ip"), zip(*ev, strict=True), strict=True)
    }
    step = fraud_bulk.ordered_step(10 * MIN, 5)
    _, cols, keys, _, _ = ordered.bucket_step(step, None, new, 5_000)
    assert keys == 3 and len(cols["key"]) == 2 and len(cols["held_t"]) == 1
    # an earlier release named the held events' columns held.*
    old_cols = {n.replace(buckets.HELD, "held.", 1): v for n, v in cols.items()}
    old = {"keys": keys, "blob": columnar.encode(old_cols, keys)}
    typed = rule.convert(old)
    bucket_cols = fraud_logic.BUCKET_COLUMNS
    assert typed == _typed(bucket_cols, buckets.row(bucket_cols, cols, keys))
    assert typed["held_key"] == ["u3"] and sorted(typed["key"]) == ["u1", "u2"]
    # the job continues from the converted bucket as from its own: u3's held failure released
    later = {n: v[:0] for n, v in new.items()}
    again = buckets.read(bucket_cols, tuple(typed.values()))

    def step_on(prev):
        rows, c, n, timeout, _ = ordered.bucket_step(step, prev, later, 10_000)
        return rows, buckets.row(bucket_cols, c, n), timeout

    assert step_on(again) == step_on(cols)
    assert step_on(again)[1][bucket_cols_index(bucket_cols, "held_t")] == []


def bucket_cols_index(columns, name: str) -> int:
    """The position of column ``name`` in a bucket state row (after ``keys``)."""
    return 1 + list(columns).index(name)
