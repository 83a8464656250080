"""Ordered mode (no JVM): the bucket executor's step, driven the way Spark drives it, gives the
contract's rule applied to every admitted event in event-time order, whatever the split into
batches; the hold is bounded and the key counts add up."""

from __future__ import annotations

import random
import zlib

import numpy as np
import pytest

from spark_jobs.state import buckets, fraud, fraud_bulk, ordered
from spark_jobs.state import service_health as health

pytestmark = pytest.mark.unit

MIN = 60_000
GAP = 10 * MIN
DELAY = 10 * MIN
COLS = fraud.BUCKET_COLUMNS  # the bucket's typed state row: failure runs and held events


def _events(rng: random.Random, n: int = 600, users: int = 12) -> list[tuple]:
    """Auth events (user, t, event_id, type, ip) over ~6 hours, many ties and bursts."""
    out = []
    for i in range(n):
        t = 1_000 * MIN + rng.randrange(0, 360 * MIN) // 5000 * 5000
        kind = fraud.FAILED if rng.random() < 0.85 else fraud.SUCCESS
        out.append((f"u{rng.randrange(users)}", t, f"e{i:05d}", kind, f"10.0.0.{rng.randrange(3)}"))
    return out


def _arrivals(rng: random.Random, events: list[tuple], parts: int) -> list[list[tuple]]:
    """``events`` split into ``parts`` batches in rough time order, overlapping by less than the
    watermark delay, shuffled inside each batch."""
    ordered_ = sorted(events, key=lambda e: e[1] + rng.randrange(0, DELAY // 2))
    cuts = sorted(rng.sample(range(1, len(ordered_)), parts - 1)) if parts > 1 else []
    out = [ordered_[a:b] for a, b in zip([0, *cuts], [*cuts, len(ordered_)], strict=True)]
    for b in out:
        rng.shuffle(b)
    return out


def _run_buckets(batches: list[list[tuple]], n_buckets: int) -> tuple[list[dict], list, list]:
    """Drive :func:`ordered.bucket_step` as Spark does: per batch, late rows (``t <=`` the
    previous watermark) dropped, buckets with rows or a timeout before the watermark called;
    then no-data batches while the watermark moves. Returns (rows, admitted events, counts)."""
    step = fraud_bulk.ordered_step(GAP, 5)
    state: dict[int, tuple[tuple, int, int | None]] = {}
    rows: list[dict] = []
    admitted: list[tuple] = []
    counts: list[ordered.KeyCounts] = []
    wm_late, wm, max_t = 0, 0, 0
    for evs in [*batches, [], []]:
        evs = [e for e in evs if e[1] > wm_late]
        admitted += evs
        by_bucket: dict[int, list] = {}
        for e in evs:
            by_bucket.setdefault(zlib.crc32(e[0].encode()) % n_buckets, []).append(e)
        due = [
            b
            for b, (_, _, to) in state.items()
            if b not in by_bucket and to is not None and to < wm
        ]
        for b in [*by_bucket, *due]:
            prev = buckets.read(COLS, state[b][0]) if b in state else None
            e = by_bucket.get(b, [])
            new = {
                "key": np.array([x[0] for x in e], dtype=object),
                "t": np.array([x[1] for x in e], dtype=np.int64),
                "eid": np.array([x[2] for x in e], dtype=object),
                "etype": np.array([x[3] for x in e], dtype=object),
                "ip": np.array([x[4] for x in e], dtype=object),
            }
            got, cols, keys, timeout, c = ordered.bucket_step(step, prev, new, wm)
            rows += got
            counts.append(c)
            if cols is None:
                state.pop(b, None)
            else:
                assert timeout is None or timeout >= wm, (
                    "Spark refuses a timeout behind the watermark"
                )
                state[b] = (buckets.row(COLS, cols, keys), keys, timeout)
        max_t = max([max_t, *(e[1] for e in evs)])
        wm_late = wm
        wm = max(wm, max_t - DELAY) if evs else max(wm, max_t + 10 * GAP)  # the end: flush
    return rows, admitted, counts


def _reference(admitted: list[tuple]) -> list[dict]:
    """The contract's rule: every admitted event of a user, in (time, event_id) order."""
    by_user: dict[str, list] = {}
    for u, *e in admitted:
        by_user.setdefault(u, []).append(tuple(e))
    rows = []
    for u, evs in by_user.items():
        rows += fraud.update(u, sorted(evs, key=lambda e: (e[0], e[1])), None, GAP, 5)[0]
    return rows


def _norm(rows: list[dict]) -> list[tuple]:
    return sorted(
        (
            r["user_id"],
            r["alert_time"],
            r["first_failure_time"],
            r["failed_attempts"],
            r["distinct_ips"],
        )
        for r in rows
    )


@pytest.mark.parametrize("seed", range(8))
def test_alerts_follow_event_time_whatever_the_batches(seed):
    rng = random.Random(seed)
    events = _events(rng)
    results = []
    for parts, n_buckets in ((1, 1), (3, 4), (5, 1), (9, 16)):
        got, admitted, _ = _run_buckets(_arrivals(rng, events, parts), n_buckets)
        assert len(admitted) == len(events), "overlaps under the delay: nothing is late"
        assert _norm(got) == _norm(_reference(admitted))
        results.append(_norm(got))
    assert results[0] and all(r == results[0] for r in results)


def test_late_events_are_the_only_difference():
    """Events older than the watermark when they arrive are dropped (Spark's rule); the rest
    is still applied in event-time order."""
    rng = random.Random(7)
    events = _events(rng)
    batches = _arrivals(rng, events, 4)
    batches[-1] += [("u0", 1000, "late-1", fraud.FAILED, "9.9.9.9")]  # hours behind
    got, admitted, _ = _run_buckets(batches, 4)
    assert all(e[2] != "late-1" for e in admitted)
    assert _norm(got) == _norm(_reference(admitted))


def test_hold_is_bounded_and_counts_add_up():
    rng = random.Random(3)
    events = _events(rng, n=300, users=6)
    rows, _, counts = _run_buckets(_arrivals(rng, events, 6), 2)
    held_after = sum(c.after - c.before for c in counts)
    assert held_after == 0, "after the flush no key is held"
    assert sum(c.expired + c.removed for c in counts) == sum(
        max(0, c.before - c.after) for c in counts
    )
    assert any(c.expired for c in counts) and any(c.updated for c in counts)


def _per_key(held: ordered.Held) -> dict[object, list[tuple]]:
    """Each key's released rows (t, eid, x) in the order released; a key whose rows are not
    together fails."""
    c, keys = held.cols, held.cols["key"].tolist()
    runs = [k for i, k in enumerate(keys) if i == 0 or k != keys[i - 1]]
    assert len(runs) == len(set(runs)), "a key's rows are not together"
    rows = zip(keys, c["t"].tolist(), c["eid"].tolist(), c["x"].tolist(), strict=True)
    out: dict[object, list[tuple]] = {}
    for key, t, eid, x in rows:
        out.setdefault(key, []).append((t, eid, x))
    return out


def test_release_groups_by_key_in_time_then_event_id_order():
    h = ordered.Held.empty(("x",)).add(
        {
            "key": np.array(["b", "a", "a", "a"], dtype=object),
            "t": np.array([5, 9, 5, 5], dtype=np.int64),
            "eid": np.array(["z", "q", "y", "x"], dtype=object),
            "x": np.array([1, 2, 3, 4], dtype=object),
        }
    )
    out, kept = h.release(6)
    assert _per_key(out) == {"a": [(5, "x", 4), (5, "y", 3)], "b": [(5, "z", 1)]}
    assert kept.cols["eid"].tolist() == ["q"] and kept.earliest() == 9


@pytest.mark.parametrize("ties", [False, True])
def test_release_matches_sorting_each_keys_events(ties: bool):
    """Random events, with and without events of a key at the same time (the event ids then
    decide): each key's released rows are its due rows sorted by (time, event id)."""
    rng = random.Random(7)
    n = 3000
    times = [rng.randrange(0, 200 if ties else 10**9) for _ in range(n)]
    rows = [
        (f"u{rng.randrange(300)}", t, f"e{rng.randrange(10**6):06d}", i)
        for i, t in enumerate(times)
    ]
    cols = dict(zip(("key", "t", "eid", "x"), zip(*rows, strict=True), strict=True))
    h = ordered.Held.empty(("x",)).add(
        {k: np.array(v, dtype=np.int64 if k == "t" else object) for k, v in cols.items()}
    )
    wm = sorted(times)[n // 2]
    out, kept = h.release(wm)
    want: dict[object, list[tuple]] = {}
    for key, t, eid, x in sorted(rows, key=lambda r: (r[1], r[2])):
        if t <= wm:
            want.setdefault(key, []).append((t, eid, x))
    assert _per_key(out) == want
    assert sorted(kept.cols["x"].tolist()) == sorted(x for _, t, _, x in rows if t > wm)
    assert ordered.release_rows([(9, "q")], [(5, "y"), (5, "x")], 5) == (
        [(5, "x"), (5, "y")],
        [(9, "q")],
    )


def test_service_silence_is_judged_on_ordered_logs():
    """A log of a later batch that is older than the last one seen: ordered, the silence
    before it is still found; the stale alert waits for the watermark."""
    alerts, h, deadline = health.advance("api", None, [0, 12 * MIN], 12 * MIN, 5 * MIN)
    assert [(a["status"], a["alert_time"]) for a in alerts] == [
        ("stale", 5 * MIN),
        ("ok", 12 * MIN),
    ]
    assert h.status == "ok" and deadline == 17 * MIN
    alerts, h, deadline = health.advance("api", h, [], 17 * MIN, 5 * MIN)
    assert [(a["status"], a["alert_time"]) for a in alerts] == [("stale", 17 * MIN)]
    assert deadline is None
