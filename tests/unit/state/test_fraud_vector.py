"""The vectorised fraud step (``fraud_bulk._runs`` inside ``ordered_step``) against the per-user
rule it replaces (``fraud_bulk.update_bucket``, which runs ``fraud.update`` user by user): the
same alerts, runs, deadlines and expired users for random released events and stored runs, with
ties, other event types, long gaps and stored counts at or over a lowered threshold."""

from __future__ import annotations

import random

import numpy as np
import pytest

from spark_jobs.state import fraud, fraud_bulk, ordered

pytestmark = pytest.mark.unit

MIN = 60_000
GAP = 10 * MIN
TYPES = (fraud.FAILED,) * 6 + (fraud.SUCCESS, "PASSWORD_RESET")


def _released(rng: random.Random, users: int, n: int, start: int) -> ordered.Held:
    rows = [
        (
            f"u{rng.randrange(users)}",
            start + rng.randrange(0, 90 * MIN) // 20_000 * 20_000,  # ties
            f"e{rng.randrange(10**6):06d}",
            rng.choice(TYPES),
            f"10.0.0.{rng.randrange(4)}",
        )
        for _ in range(n)
    ]
    cols = dict(zip(("key", "t", "eid", "etype", "ip"), zip(*rows, strict=True), strict=True))
    held = ordered.Held(
        {k: np.array(v, dtype=np.int64 if k == "t" else object) for k, v in cols.items()}
    )
    return held.release(10**15)[0]  # as the executor releases


def _stored(rng: random.Random, users: int, start: int, threshold: int) -> fraud_bulk.Bucket:
    out = {}
    for u in rng.sample(range(users), users // 2):
        last = start - rng.randrange(0, 2 * GAP)
        count = rng.randint(1, threshold + 2)  # over the threshold: stored before it was lowered
        ips = {f"10.0.0.{rng.randrange(6)}" for _ in range(rng.randint(1, 3))}
        run = fraud.Failures(count, last - rng.randrange(0, GAP), last, ips)
        out[f"u{u}"] = (run, last + GAP + rng.choice((-GAP, 0, GAP)))
    return fraud_bulk.Bucket(out)


def _reference(released, bucket, wm, threshold):
    """The step as it was: events grouped per user, then ``update_bucket``."""
    c = released.cols
    events = {
        str(k): list(zip(c["t"][s].tolist(), c["eid"][s], c["etype"][s], c["ip"][s], strict=True))
        for k, s in released.by_key().items()
    }
    expired = {u for u, (_, d) in bucket.users.items() if d < wm and u not in events}
    rows, new, _ = fraud_bulk.update_bucket(events, bucket, wm, GAP, threshold)
    over = {u for u, (run, _) in new.users.items() if run.last + GAP < wm}
    return rows, {u: v for u, v in new.users.items() if u not in over}, expired | over


def _copy(bucket):
    return fraud_bulk.Bucket(
        {
            u: (fraud.Failures(*r.to_tuple()[:3], set(r.ips)), d)
            for u, (r, d) in bucket.users.items()
        }
    )


def _runs(users):
    return {u: (r.to_tuple(), d) for u, (r, d) in users.items()}


def _case(seed: int) -> tuple:
    """One random case: (released events, stored bucket, watermark, threshold)."""
    rng = random.Random(seed)
    users, start = rng.choice((1, 3, 12)), 1_000 * MIN
    threshold = rng.choice((2, 3, 5))
    released = _released(rng, users, rng.choice((1, 5, 60, 300)), start)
    bucket = _stored(rng, users, start, threshold)
    wm = start + rng.choice((0, 30 * MIN, 200 * MIN))
    return released, bucket, wm, threshold


@pytest.mark.parametrize("seed", range(40))
def test_vectorised_step_equals_the_per_user_rule(seed):
    released, bucket, wm, threshold = _case(seed)
    want_rows, want_users, want_gone = _reference(released, _copy(bucket), wm, threshold)
    step = fraud_bulk.ordered_step(GAP, threshold)
    rows, kept, timeout, gone = step.step(released, _copy(bucket), wm)
    key = lambda r: (r["user_id"], r["alert_time"])  # noqa: E731
    assert sorted(rows, key=key) == sorted(want_rows, key=key)
    assert _runs(kept.users) == _runs(want_users)
    assert gone == want_gone and timeout == fraud_bulk.Bucket(want_users).timeout()


def test_the_fixture_reaches_every_branch():
    """Alerts, carried runs, resets and runs kept all occur in the cases above."""
    rows = kept = 0
    for seed in range(40):
        released, bucket, wm, threshold = _case(seed)
        r, users_, _ = _reference(released, bucket, wm, threshold)
        rows += len(r)
        kept += len(users_)
    assert rows > 100 and kept > 20


@pytest.mark.parametrize("stored", [2, 3, 4])
def test_a_stored_count_at_or_over_a_lowered_threshold_alerts_on_the_next_failure(stored):
    run = fraud.Failures(stored, 0, 5 * MIN, {"10.0.0.9"})
    bucket = fraud_bulk.Bucket({"u": (run, 5 * MIN + GAP)})
    t = [6 * MIN, 7 * MIN, 8 * MIN, 9 * MIN]
    released = ordered.Held(
        {
            "key": np.array(["u"] * 4, dtype=object),
            "t": np.array(t, dtype=np.int64),
            "eid": np.array(["a", "b", "c", "d"], dtype=object),
            "etype": np.array([fraud.FAILED] * 4, dtype=object),
            "ip": np.array(["10.0.0.1"] * 4, dtype=object),
        }
    )
    rows, kept, _, _ = fraud_bulk.ordered_step(GAP, 3).step(released, _copy(bucket), 6 * MIN)
    want, want_users, _ = _reference(released, _copy(bucket), 6 * MIN, 3)
    assert [(r["alert_time"], r["failed_attempts"]) for r in rows] == [
        (r["alert_time"], r["failed_attempts"]) for r in want
    ]
    assert rows[0]["failed_attempts"] == max(stored + 1, 3) and _runs(kept.users) == _runs(
        want_users
    )
