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


def ordered_step(gap_ms: int, threshold: int) -> ordered.Step:
    """fraud_alerts for the ordered bucket executor: released events, in event-time order, go
    through :func:`update_bucket`; a user past its deadline with nothing released expires."""

    def step(
        released: ordered.Held, bucket: Bucket, watermark_ms: int
    ) -> tuple[list[dict], Bucket, int | None, set]:
        c = released.cols
        events: dict[str, list] = {
            str(k): list(
                zip(
                    c["t"][s].tolist(),
                    c["eid"][s].tolist(),
                    c["etype"][s].tolist(),
                    c["ip"][s].tolist(),
                    strict=True,
                )
            )
            for k, s in released.by_key().items()
        }
        expired = {u for u, (_, d) in bucket.users.items() if d < watermark_ms and u not in events}
        rows, new, _ = update_bucket(events, bucket, watermark_ms, gap_ms, threshold)
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
