"""Events held until the watermark has passed them, then released in event-time order.

Why: a micro-batch holds whatever arrived, in no order, and an event of a later batch may be
older than one already seen. Logic that acts per event (count failures, notice a silence) would
then depend on how the input was split into runs and batches. Spark drops every event at or
below the watermark of the batch before (``event_time <= watermark`` is late), and the
watermark never goes back, so once the watermark of a batch has reached an event's time, no
event that can still arrive is older than it. Releasing exactly the held events with
``t <= watermark``, in (time, event_id) order per key, therefore feeds each key's logic the events
the watermark admitted in event-time order, whatever the arrivals were. The price is latency:
an event acts once the watermark passes it, i.e. about the watermark delay after it happened.

Columnar and pure (numpy only): the executors keep the held events of many keys in one
:class:`Held` and store it beside the job's own state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from spark_jobs.state.buckets import HELD as PREFIX  # held events among a bucket's columns


@dataclass(frozen=True)
class Held:
    """Held events, one row each: ``key`` (object), ``t`` (int64 epoch ms), ``eid`` (object)
    and the job's own payload columns, all of one length, in no particular order."""

    cols: Mapping[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.cols["t"])

    @classmethod
    def empty(cls, payload: tuple[str, ...]) -> Held:
        cols = {"key": np.empty(0, dtype=object), "t": np.empty(0, dtype=np.int64)}
        cols["eid"] = np.empty(0, dtype=object)
        for name in payload:
            cols[name] = np.empty(0, dtype=object)
        return cls(cols)

    @classmethod
    def from_state(cls, state: Mapping[str, np.ndarray], payload: tuple[str, ...]) -> Held:
        """The held events stored among a bucket's state columns (none stored: empty)."""
        if PREFIX + "t" not in state:
            return cls.empty(payload)
        return cls({n: state[PREFIX + n] for n in ("key", "t", "eid", *payload)})

    def to_state(self) -> dict[str, np.ndarray]:
        return {PREFIX + n: np.asarray(v) for n, v in self.cols.items()}

    def add(self, new: Mapping[str, np.ndarray]) -> Held:
        if not len(new["t"]):
            return self
        if not len(self):
            return Held({n: np.asarray(new[n]) for n in self.cols})
        return Held({n: np.concatenate([v, np.asarray(new[n])]) for n, v in self.cols.items()})

    def keys(self) -> set:
        return set(self.cols["key"].tolist())

    def earliest(self) -> int | None:
        """The time of the oldest held event: when the watermark passes it, something is due."""
        return int(self.cols["t"].min()) if len(self) else None

    def release(self, watermark_ms: int) -> tuple[Held, Held]:
        """(events with ``t <= watermark``, grouped by key and in (time, event_id) order within
        a key; the rest, still held). The logic needs each key's events together and in order;
        the order of the keys themselves is the order they first appear."""
        t = self.cols["t"]
        due = t <= watermark_ms
        if not due.any():
            return Held.empty(self._payload()), self
        out = {n: v[due] for n, v in self.cols.items()}
        # Integer codes, so no Python strings are compared per pair: a key's code groups it (no
        # sorting of the keys' text), and the event ids are ranked only when two events of a
        # key share a time, which is rare (ranking them all was most of a release's time).
        key_code = pd.factorize(out["key"])[0]
        order = np.lexsort((out["t"], key_code))
        k, ts = key_code[order], out["t"][order]
        if ((k[1:] == k[:-1]) & (ts[1:] == ts[:-1])).any():
            eid_rank = pd.factorize(out["eid"], sort=True)[0]
            order = np.lexsort((eid_rank, out["t"], key_code))
        released = Held({n: v[order] for n, v in out.items()})
        kept = Held({n: v[~due] for n, v in self.cols.items()})
        return released, kept

    def _payload(self) -> tuple[str, ...]:
        return tuple(n for n in self.cols if n not in ("key", "t", "eid"))

    def by_key(self) -> dict[object, slice]:
        """Key -> the slice of its rows, for a Held grouped by key (as :meth:`release` returns)."""
        keys = self.cols["key"]
        if not len(keys):
            return {}
        bounds = np.flatnonzero(keys[1:] != keys[:-1]) + 1
        starts = [0, *bounds.tolist()]
        stops = [*bounds.tolist(), len(keys)]
        return {keys[a]: slice(a, b) for a, b in zip(starts, stops, strict=True)}


def release_rows(
    held: list[tuple], new: list[tuple], watermark_ms: int
) -> tuple[list[tuple], list[tuple]]:
    """The same rule for one key's events as plain tuples ``(t, event_id, ...)``: (due events in
    (time, event_id) order, events still held)."""
    rows = held + new
    due = sorted((r for r in rows if r[0] <= watermark_ms), key=lambda r: (r[0], r[1]))
    return due, [r for r in rows if r[0] > watermark_ms]


@dataclass(frozen=True)
class KeyCounts:
    """What one call did to the keys it holds: keys held before and after, keys whose state
    changed, removed by the logic, and removed by the event-time timeout."""

    before: int = 0
    after: int = 0
    updated: int = 0
    removed: int = 0
    expired: int = 0


@dataclass(frozen=True)
class Step:
    """A job's logic as the ordered bucket executor drives it (all pure, numpy/pandas only).

    ``load`` reads the job's state from a bucket's state columns, ``dump`` writes it back;
    ``keys`` names the keys it holds; ``step(released, state, watermark)`` applies released
    events (grouped by key, in (time, event_id) order within a key) and the watermark,
    returning (output rows, new state, deadline or None, keys whose state the timeout removed).
    """

    payload: tuple[str, ...]
    load: Callable[[Mapping[str, np.ndarray]], Any]
    dump: Callable[[Any], dict[str, np.ndarray]]
    keys: Callable[[Any], set]
    step: Callable[[Held, Any, int], tuple[list[dict], Any, int | None, set]]


def bucket_step(
    logic: Step,
    prev: Mapping[str, np.ndarray] | None,
    new: Mapping[str, np.ndarray] | None,
    watermark_ms: int,
) -> tuple[list[dict], dict[str, np.ndarray] | None, int, int | None, KeyCounts]:
    """One call for one bucket: hold ``new``, release what the watermark passed, apply it.

    Returns (rows, the bucket's columns to store or None to remove it, keys held, the
    bucket's timeout or None for none, key counts). The timeout is the earliest of the logic's deadline
    and the oldest held event, so Spark calls the bucket again as soon as either is due.
    """
    prev = prev or {}
    state = logic.load(prev)
    held = Held.from_state(prev, logic.payload)
    before = logic.keys(state) | held.keys()
    arrived = set(new["key"].tolist()) if new is not None and len(new["t"]) else set()
    if arrived:
        held = held.add(new)  # type: ignore[arg-type]
    released, held = held.release(watermark_ms)
    rows, state, deadline, expired = logic.step(released, state, watermark_ms)
    after = logic.keys(state) | held.keys()
    touched = (arrived | set(released.cols["key"].tolist())) & after
    counts = KeyCounts(
        before=len(before),
        after=len(after),
        updated=len(touched),
        removed=len((before - after) - expired),
        expired=len(expired & (before - after)),
    )
    if not after:
        return rows, None, 0, None, counts
    due = [d for d in (deadline, held.earliest()) if d is not None]
    timeout = min(due) if due else None
    return rows, {**logic.dump(state), **held.to_state()}, len(after), timeout, counts
