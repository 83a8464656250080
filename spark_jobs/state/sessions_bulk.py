"""Sessionization for a whole bucket of users in one call (the batched executor).

The result is exactly that of :func:`spark_jobs.state.sessions.update` called once per user the
way Spark calls it: for every user with new events, and for every user whose timeout
(earliest ``session_end + gap`` of its open sessions) is before the watermark. Users neither
touched nor due keep their sessions as they are.

Vectorised with numpy: sessions are the runs of (previous open sessions + new events) sorted by
start, a run breaking where a start is more than ``gap`` after the running maximum end; the
aggregates are segment reductions; ``last_pages`` is the last ``max_pages`` page views of a run
in (time, event_id, page) order, as the per-user merge keeps them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd

from spark_jobs.state.sessions import (
    BUCKET_COLUMNS,
    CHECKOUT,
    PAGE_VIEW,
    PURCHASE,
    session_id,
)

_I64 = np.int64


@dataclass
class Events:
    """New events of many users, one array per field (any order)."""

    key: np.ndarray  # object: user_id
    t: np.ndarray  # int64 epoch ms
    eid: np.ndarray  # object: event_id
    etype: np.ndarray  # object: event_type
    page: np.ndarray  # object: page or None
    dur: np.ndarray  # int64: duration_sec, 0 when missing

    def __len__(self) -> int:
        return len(self.t)

    @classmethod
    def empty(cls) -> Events:
        o, i = np.empty(0, dtype=object), np.empty(0, dtype=_I64)
        return cls(o, i, o, o, o, i)


@dataclass
class Sessions:
    """Sessions of many users, one row per session; page views flattened with offsets."""

    key: np.ndarray  # object
    start: np.ndarray
    end: np.ndarray
    events: np.ndarray
    page_views: np.ndarray
    duration: np.ndarray
    purchased: np.ndarray  # bool
    checkout: np.ndarray  # bool
    page_off: np.ndarray  # int64, len + 1 offsets into the page_* arrays
    page_t: np.ndarray
    page_eid: np.ndarray  # object
    page_page: np.ndarray  # object

    def __len__(self) -> int:
        return len(self.start)

    @classmethod
    def empty(cls) -> Sessions:
        o, i, b = np.empty(0, dtype=object), np.empty(0, dtype=_I64), np.empty(0, dtype=bool)
        return cls(o, i, i, i, i, i, b, b, np.zeros(1, dtype=_I64), i, o, o)

    def take(self, idx: np.ndarray) -> Sessions:
        """The rows ``idx`` (indices or a boolean mask), pages included."""
        idx = np.flatnonzero(idx) if idx.dtype == bool else idx.astype(_I64)
        lens = self.page_off[idx + 1] - self.page_off[idx]
        off = np.zeros(len(idx) + 1, dtype=_I64)
        np.cumsum(lens, out=off[1:])
        pidx = np.repeat(self.page_off[idx] - off[:-1], lens) + np.arange(off[-1], dtype=_I64)
        return Sessions(
            self.key[idx],
            self.start[idx],
            self.end[idx],
            self.events[idx],
            self.page_views[idx],
            self.duration[idx],
            self.purchased[idx],
            self.checkout[idx],
            off,
            self.page_t[pidx],
            self.page_eid[pidx],
            self.page_page[pidx],
        )

    @staticmethod
    def concat(a: Sessions, b: Sessions) -> Sessions:
        if not len(a):
            return b
        if not len(b):
            return a
        cols = {}
        for f in fields(Sessions):
            x, y = getattr(a, f.name), getattr(b, f.name)
            cols[f.name] = (
                np.concatenate([x, y[1:] + x[-1]])
                if f.name == "page_off"
                else np.concatenate([x, y])
            )
        return Sessions(**cols)

    def pages(self) -> list[list[str]]:
        """``last_pages`` of every row, oldest first."""
        p, o = self.page_page, self.page_off.tolist()
        return [p[o[i] : o[i + 1]].tolist() for i in range(len(self))]

    def key_count(self) -> int:
        return len(pd.unique(self.key)) if len(self) else 0

    # -- the bucket's state columns (BUCKET_COLUMNS) ------------------------------------------
    def columns(self) -> dict[str, np.ndarray]:
        cols = {f.name: getattr(self, f.name) for f in fields(Sessions) if f.name != "page_off"}
        cols["page_len"] = np.diff(self.page_off)
        return cols

    @classmethod
    def from_columns(cls, cols: Mapping[str, np.ndarray] | None) -> Sessions:
        if not cols or not len(cols["start"]):
            return cls.empty()
        off = np.zeros(len(cols["page_len"]) + 1, dtype=_I64)
        np.cumsum(cols["page_len"], out=off[1:])
        return cls(page_off=off, **{n: v for n, v in cols.items() if n != "page_len"})


def from_bucket_blob(old: dict[str, Any]) -> dict[str, Any] | None:
    """``upgrade migrate``'s rule for a bucket stored as ``keys int, blob binary`` (the binary
    columnar blob of earlier releases, :mod:`spark_jobs.state.columnar`) -> the typed bucket row
    (``keys`` and :data:`BUCKET_COLUMNS` as lists); None (drop the bucket) when it holds none."""
    from spark_jobs.state import buckets, columnar

    blob = old.get("blob")
    if blob is None or not len(blob):
        return None
    sessions = Sessions.from_columns(columnar.decode(blob))
    if not len(sessions):
        return None
    cols = sessions.columns()
    return dict(
        zip(
            ["keys", *BUCKET_COLUMNS],
            buckets.row(BUCKET_COLUMNS, cols, sessions.key_count()),
            strict=True,
        )
    )


def due_or_touched(
    state_key: np.ndarray, state_deadline: np.ndarray, event_key: np.ndarray, watermark_ms: int
) -> np.ndarray:
    """Per state row: True when Spark would call its user this batch (new events, or a per-user
    timeout, the earliest deadline of the user's rows, before the watermark)."""
    if not len(state_key):
        return np.zeros(0, dtype=bool)
    codes, uniq = pd.factorize(np.concatenate([state_key, event_key]))
    hit = np.zeros(len(uniq), dtype=bool)
    hit[codes[len(state_key) :]] = True
    s_codes = codes[: len(state_key)]
    hit[s_codes[state_deadline < watermark_ms]] = True
    return hit[s_codes]


def _segment_cummax(values: np.ndarray, segment: np.ndarray) -> np.ndarray:
    """Running maximum of ``values`` restarting at each new (sorted, contiguous) ``segment``."""
    seg = np.cumsum(np.r_[True, segment[1:] != segment[:-1]]) - 1
    low = int(values.min())
    span = int(values.max()) - low + 1
    if span * (int(seg[-1]) + 1) < 2**62:  # always, for times of one batch: no sort needed
        # shifting each segment above every earlier one keeps maxima apart
        shift = seg * span
        return np.maximum.accumulate(values - low + shift) - shift + low
    uniq, rank = np.unique(values, return_inverse=True)  # ranks are < len(values)
    shift = seg * len(values)
    return uniq[np.maximum.accumulate(rank.astype(_I64) + shift) - shift]


def _by_key_then_start(code: np.ndarray, start: np.ndarray) -> np.ndarray:
    """The order of rows by (key code, start). Rows tied on both fall in one session whatever
    their order (each starts no later than the running maximum end), and every aggregate is
    order-free, so ties need no further key: one sort of a combined key, not three."""
    low = int(start.min())
    span = int(start.max()) - low + 1
    if span * (int(code.max()) + 1) < 2**62:  # always, for times of one batch
        return np.argsort(code * span + (start - low), kind="stable")
    return np.lexsort((start, code))


def _last_pages(
    gid: np.ndarray, t: np.ndarray, eid: np.ndarray, page: np.ndarray, groups: int, k: int
):
    """(offsets, t, eid, page) of the last ``k`` page views per group in (t, eid, page) order."""
    off = np.zeros(groups + 1, dtype=_I64)
    if k <= 0 or not len(gid):
        e = np.empty(0, dtype=object)
        return off, np.empty(0, dtype=_I64), e, e
    order = np.lexsort((t, gid))
    sg, st = gid[order], t[order]
    if ((sg[1:] == sg[:-1]) & (st[1:] == st[:-1])).any():  # same time in a session: rare, exact
        eid_rank = np.unique(eid, return_inverse=True)[1]
        page_rank = np.unique(page, return_inverse=True)[1]
        order = np.lexsort((page_rank, eid_rank, t, gid))
        sg = gid[order]
    counts = np.bincount(sg, minlength=groups)
    ends = np.cumsum(counts)
    keep = order[(ends[sg] - np.arange(len(sg)) - 1) < k]
    np.cumsum(np.minimum(counts, k), out=off[1:])
    return off, t[keep], eid[keep], page[keep]


def update_bucket(
    events: Events, state: Sessions, watermark_ms: int, gap_ms: int, max_pages: int
) -> tuple[Sessions, Sessions, int | None]:
    """One call for a bucket of users: returns (closed sessions to emit, open sessions to keep,
    the bucket's timeout = earliest deadline of any kept user, or None = remove the state)."""
    touched = due_or_touched(state.key, state.end + gap_ms, events.key, watermark_ms)
    kept = state.take(~touched)
    work = state.take(touched)
    n_w, n_e = len(work), len(events)
    if n_w + n_e == 0:
        return Sessions.empty(), kept, _timeout(kept, gap_ms)

    is_pv = events.etype == PAGE_VIEW
    key = np.concatenate([work.key, events.key])
    code = pd.factorize(key)[0]
    start = np.concatenate([work.start, events.t])
    end = np.concatenate([work.end, events.t])
    order = _by_key_then_start(code, start)
    sc, ss, se = code[order], start[order], end[order]
    prev_max = np.empty_like(se)
    prev_max[0] = ss[0]
    prev_max[1:] = _segment_cummax(se, sc)[:-1]
    new = np.ones(len(sc), dtype=bool)
    new[1:] = (sc[1:] != sc[:-1]) | (ss[1:] - prev_max[1:] > gap_ms)
    heads = np.flatnonzero(new)
    groups = len(heads)
    gid_sorted = np.cumsum(new) - 1
    gid = np.empty(len(order), dtype=_I64)
    gid[order] = gid_sorted

    def total(a: np.ndarray, b: np.ndarray, op=np.add) -> np.ndarray:
        return op.reduceat(np.concatenate([a, b])[order], heads)

    ones = np.ones(n_e, dtype=_I64)
    merged_events = total(work.events, ones)
    merged_pv = total(work.page_views, is_pv.astype(_I64))
    merged_dur = total(work.duration, events.dur.astype(_I64))
    merged_pur = total(work.purchased, events.etype == PURCHASE, np.logical_or)
    merged_chk = total(work.checkout, events.etype == CHECKOUT, np.logical_or)
    g_end = np.maximum.reduceat(se, heads)

    # page views: the kept ones of earlier sessions, then the new page views with a page
    w_lens = np.diff(work.page_off)
    new_pages = (
        np.flatnonzero(is_pv & pd.notna(events.page)) if max_pages > 0 else np.empty(0, dtype=_I64)
    )
    p_item = np.concatenate([np.repeat(np.arange(n_w, dtype=_I64), w_lens), n_w + new_pages])
    p_off, p_t, p_eid, p_page = _last_pages(
        gid[p_item],
        np.concatenate([work.page_t, events.t[new_pages]]),
        np.concatenate([work.page_eid, events.eid[new_pages]]),
        np.concatenate([work.page_page, events.page[new_pages]]),
        groups,
        max_pages,
    )
    merged = Sessions(
        key[order][heads],
        ss[heads],
        g_end,
        merged_events,
        merged_pv,
        merged_dur,
        merged_pur,
        merged_chk,
        p_off,
        p_t,
        p_eid,
        p_page,
    )
    closing = g_end + gap_ms < watermark_ms
    still = Sessions.concat(kept, merged.take(~closing))
    return merged.take(closing), still, _timeout(still, gap_ms)


def _timeout(sessions: Sessions, gap_ms: int) -> int | None:
    return int((sessions.end + gap_ms).min()) if len(sessions) else None


def output_columns(closed: Sessions) -> dict[str, list]:
    """The output rows of closed sessions, column by column (times in epoch ms)."""
    keys = closed.key.tolist()
    starts = closed.start.tolist()
    return {
        "user_id": keys,
        "session_id": [session_id(k, s) for k, s in zip(keys, starts, strict=True)],
        "session_start": starts,
        "session_end": closed.end.tolist(),
        "events": closed.events.tolist(),
        "page_views": closed.page_views.tolist(),
        "total_duration_sec": closed.duration.tolist(),
        "last_pages": closed.pages(),
        "purchased": closed.purchased.tolist(),
        "checkout_viewed": closed.checkout.tolist(),
    }
