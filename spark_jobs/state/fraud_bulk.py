"""Brute-force detection for a whole bucket of users in one call (the batched executor).

Drives :func:`spark_jobs.state.fraud.update` for exactly the users Spark would call one by one:
users with new events get their events (timeout clamped to just past the watermark, as the
per-key job does), users whose timeout is before the watermark are dropped (the per-key timeout
branch), everyone else is left alone. The logic is a short scan per user with resets, so the
win here is one Python call per bucket instead of one per user; grouping is vectorised.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from spark_jobs.state import fraud as logic
from spark_jobs.state import ordered
from spark_jobs.state.fraud import BUCKET_COLUMNS, PAYLOAD

_I64 = np.int64


@dataclass
class Bucket:
    """Per user: the failure run (count, first, last, ips) and its timeout (deadline)."""

    users: dict[str, tuple[logic.Failures, int]]

    @classmethod
    def from_columns(cls, c: Mapping[str, np.ndarray]) -> Bucket:
        """The users stored among a bucket's state columns (no ``key`` column: none)."""
        if "key" not in c:
            return cls({})
        off = np.zeros(len(c["ip_len"]) + 1, dtype=_I64)
        np.cumsum(c["ip_len"], out=off[1:])
        ips, o = c["ips"].tolist(), off.tolist()
        users = {}
        for i, (k, n, f, la, d) in enumerate(
            zip(
                c["key"].tolist(),
                c["count"].tolist(),
                c["first"].tolist(),
                c["last"].tolist(),
                c["deadline"].tolist(),
                strict=True,
            )
        ):
            users[k] = (logic.Failures(n, f, la, set(ips[o[i] : o[i + 1]])), d)
        return cls(users)

    def columns(self) -> dict[str, np.ndarray]:
        keys = list(self.users)
        runs = [self.users[k][0] for k in keys]
        ips = [sorted(r.ips) for r in runs]
        return {
            "key": np.array(keys, dtype=object),
            "count": np.array([r.count for r in runs], dtype=_I64),
            "first": np.array([r.first for r in runs], dtype=_I64),
            "last": np.array([r.last for r in runs], dtype=_I64),
            "deadline": np.array([self.users[k][1] for k in keys], dtype=_I64),
            "ip_len": np.array([len(x) for x in ips], dtype=_I64),
            "ips": np.array([ip for x in ips for ip in x], dtype=object),
        }

    def timeout(self) -> int | None:
        return min((d for _, d in self.users.values()), default=None)


def group_events(
    key: np.ndarray, t: np.ndarray, eid: np.ndarray, etype: np.ndarray, ip: np.ndarray
) -> dict[str, list]:
    """user -> its events as the logic takes them: (time_ms, event_id, event_type, ip)."""
    if not len(key):
        return {}
    codes, uniq = pd.factorize(key)
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    rows = list(
        zip(
            t[order].tolist(),
            eid[order].tolist(),
            etype[order].tolist(),
            ip[order].tolist(),
            strict=True,
        )
    )
    starts = [0, *bounds.tolist()]
    stops = [*bounds.tolist(), len(rows)]
    return {uniq[codes[order[a]]]: rows[a:b] for a, b in zip(starts, stops, strict=True)}


def update_bucket(
    events: dict[str, list], bucket: Bucket, watermark_ms: int, gap_ms: int, threshold: int
) -> tuple[list[dict], Bucket, int | None]:
    """Returns (alert rows, the bucket's new state, its timeout or None = remove)."""
    users = dict(bucket.users)
    alerts: list[dict] = []
    for user, (_, deadline) in bucket.users.items():
        if deadline < watermark_ms and user not in events:
            del users[user]  # the per-key timeout branch: the failure run is over
    for user, evs in events.items():
        prev = users.get(user)
        rows, st, timeout = logic.update(user, evs, prev[0] if prev else None, gap_ms, threshold)
        alerts.extend(rows)
        if st is None:
            users.pop(user, None)
        else:
            users[user] = (st, max(int(timeout or 0), watermark_ms + 1))
    new = Bucket(users)
    return alerts, new, new.timeout()


def _counts(
    fi: np.ndarray,
    fu: np.ndarray,
    ft: np.ndarray,
    ok_before: np.ndarray,
    p_count: np.ndarray,
    p_last: np.ndarray,
    gap_ms: int,
    threshold: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per failure (event index ``fi``, user ``fu``, time ``ft``, the latest success of its
    user before it ``ok_before``, its user's stored count and last failure): (its count, its
    place in its segment, the stored count its segment carries on)."""
    first_of_user = np.ones(len(fi), dtype=bool)
    first_of_user[1:] = fu[1:] != fu[:-1]
    # a failure opens a segment after a success since the previous failure, or a gap over
    prior_ok = ok_before >= 0
    prior_ok[1:] &= (ok_before[1:] > fi[:-1]) | first_of_user[1:]
    gap_before = np.zeros(len(fi), dtype=bool)
    gap_before[1:] = (ft[1:] - ft[:-1]) > gap_ms
    carried = first_of_user & ~prior_ok & (p_count > 0) & (ft - p_last <= gap_ms)
    seg_start = first_of_user | prior_ok | gap_before
    seg_id = np.cumsum(seg_start) - 1
    seg_first = np.flatnonzero(seg_start)
    pos = np.arange(len(fi)) - seg_first[seg_id]  # place in the segment
    k = np.where(carried[seg_first], p_count[seg_first], 0)[seg_id]  # stored count carried
    # an earlier release may have stored a count at or over a lowered threshold: its next
    # failure alerts at once and the count starts again from the one after
    over = k >= threshold
    count = np.where(
        over, np.where(pos == 0, k + 1, (pos - 1) % threshold + 1), (pos + k) % threshold + 1
    )
    return count, pos, k


def _runs(
    c: Mapping[str, np.ndarray], bucket: Bucket, watermark_ms: int, gap_ms: int, threshold: int
) -> tuple[list[dict], dict[str, tuple[logic.Failures | None, int]]]:
    """:func:`spark_jobs.state.fraud.update` for every user of ``c`` (released events grouped by
    user, in time and event_id order) at once, in numpy: returns (alert rows, user -> (run or None,
    deadline)) for exactly the users with released events.

    The count of a failure follows from where it stands: failures with no success between them
    and no gap over ``gap_ms`` form a segment (the first one of a user continues the stored run
    unless a success or the gap comes first), and the ``threshold``-th of a segment alerts and
    starts the count again, so a failure's count is its place in the segment modulo the
    threshold. Python runs once per alert and per user, not once per event."""
    key, t, etype, ip = c["key"], c["t"], c["etype"], c["ip"]
    n = len(key)
    new_user = np.ones(n, dtype=bool)
    new_user[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(new_user)
    users = key[starts].tolist()
    user_of = np.cumsum(new_user) - 1  # each event's user, as an index into ``users``
    prev = [bucket.users.get(u) for u in users]
    p_count = np.array([r[0].count if r else 0 for r in prev], dtype=_I64)
    p_last = np.array([r[0].last if r else 0 for r in prev], dtype=_I64)
    failed, success = etype == logic.FAILED, etype == logic.SUCCESS
    # the latest success up to each event of its user (-1: none yet), then only the failures
    last_ok = np.maximum.accumulate(np.where(success, np.arange(n), -1))
    last_ok = np.where(last_ok >= starts[user_of], last_ok, -1)
    fi = np.flatnonzero(failed)
    fu, ft = user_of[fi], t[fi]
    count, pos, k = _counts(fi, fu, ft, last_ok[fi], p_count[fu], p_last[fu], gap_ms, threshold)
    cycle_start = (count == 1) | (pos == 0)
    cyc_id = np.cumsum(cycle_start) - 1
    cyc_first = np.flatnonzero(cycle_start)
    cyc_carried = (pos == 0) & (k > 0)  # at a cycle's first failure: it continues a stored run
    ip_list = ip[fi].tolist()

    def run_of(last_i: int) -> logic.Failures:
        """The run of the cycle ending at failure ``last_i`` (stored run's first and ips when
        the cycle continues it)."""
        a = int(cyc_first[cyc_id[last_i]])
        ips = set(ip_list[a : last_i + 1])
        first = int(ft[a])
        if cyc_carried[a]:
            stored = prev[int(fu[a])][0]  # type: ignore[index]
            ips |= stored.ips
            first = stored.first
        return logic.Failures(int(count[last_i]), first, int(ft[last_i]), ips)

    rows = []
    for i in np.flatnonzero(count >= threshold).tolist():
        run = run_of(i)
        ips = sorted(run.ips)
        rows.append(
            {
                "user_id": users[int(fu[i])],
                "alert_time": run.last,
                "first_failure_time": run.first,
                "failed_attempts": run.count,
                "distinct_ips": len(ips),
                "ips": ips,
            }
        )
    # each user's run after its events: its last failure's cycle, unless that failure alerted
    # or a success came after it; no failure released: the stored run, unless a success came
    last_f = np.full(len(users), -1, dtype=_I64)
    last_f[fu] = np.arange(len(fi))  # later failures overwrite: the last one stays
    ends = np.append(starts[1:], n) - 1
    any_ok = last_ok[ends]
    out: dict[str, tuple[logic.Failures | None, int]] = {}
    for u, user in enumerate(users):
        j = int(last_f[u])
        if j >= 0:
            kept = None if count[j] >= threshold or any_ok[u] > fi[j] else run_of(j)
        else:
            kept = None if any_ok[u] >= 0 or prev[u] is None else prev[u][0]  # type: ignore[index]
        if kept is None or not kept.count:
            out[user] = (None, 0)
        else:
            out[user] = (kept, max(kept.last + gap_ms, watermark_ms + 1))
    return rows, out


def ordered_step(gap_ms: int, threshold: int) -> ordered.Step:
    """fraud_alerts for the ordered bucket executor: released events, in event-time order, go
    through :func:`_runs` (:func:`update_bucket`'s rule, vectorised); a user past its deadline
    with nothing released expires."""

    def step(
        released: ordered.Held, bucket: Bucket, watermark_ms: int
    ) -> tuple[list[dict], Bucket, int | None, set]:
        rows, runs = (
            _runs(released.cols, bucket, watermark_ms, gap_ms, threshold)
            if len(released)
            else ([], {})
        )
        expired = {u for u, (_, d) in bucket.users.items() if d < watermark_ms and u not in runs}
        users = {u: v for u, v in bucket.users.items() if u not in expired and u not in runs}
        users.update({u: (r, d) for u, (r, d) in runs.items() if r is not None})
        new = Bucket(users)
        # Released events can be older than the watermark by far: a run whose gap has already
        # passed is over now (every later failure would reset it), not one batch later.
        over = {u for u, (run, _) in new.users.items() if run.last + gap_ms < watermark_ms}
        users = {u: v for u, v in new.users.items() if u not in over}
        kept = Bucket(users)
        return rows, kept, kept.timeout(), expired | over

    return ordered.Step(
        payload=tuple(PAYLOAD),
        load=Bucket.from_columns,
        dump=Bucket.columns,
        keys=lambda b: set(b.users),
        step=step,
    )


def from_bucket_blob(old: dict[str, Any]) -> dict[str, Any] | None:
    """``upgrade migrate``'s rule for a bucket stored as ``keys int, blob binary`` (the binary
    columnar blob of earlier releases, :mod:`spark_jobs.state.columnar`: held events under
    ``held.*``) -> the typed bucket row (``keys`` and :data:`BUCKET_COLUMNS` as lists); None
    (drop the bucket) when it holds nothing."""
    from spark_jobs.state import buckets, columnar

    blob = old.get("blob")
    if blob is None or not len(blob):
        return None
    stored = {n.replace("held.", ordered.PREFIX, 1): v for n, v in columnar.decode(blob).items()}
    bucket = Bucket.from_columns(stored)
    held = ordered.Held.from_state(stored, tuple(PAYLOAD))
    keys = set(bucket.users) | held.keys()
    if not keys:
        return None
    cols = {**bucket.columns(), **held.to_state()}
    return dict(
        zip(["keys", *BUCKET_COLUMNS], buckets.row(BUCKET_COLUMNS, cols, len(keys)), strict=True)
    )
