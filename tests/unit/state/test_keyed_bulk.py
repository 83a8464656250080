"""The batched logic against the per-key logic, driven the way Spark drives each: per key (calls
for keys with data, then for keys whose timeout is before the watermark) and per bucket (calls for
buckets with data, or whose earliest key deadline is before the watermark), the bucket's typed
state row (spark_jobs.state.buckets) written and read back between batches. Random inputs with ties, duplicates, far jumps of the watermark."""

from __future__ import annotations

import random
import zlib

import numpy as np
import pytest

from spark_jobs.state import buckets, columnar, fraud, fraud_bulk, sessions, sessions_bulk

pytestmark = pytest.mark.unit

MIN = 60_000
GAP = 30 * MIN
SESSION_COLS = sessions.BUCKET_COLUMNS
# the failure runs' columns (the ordered executor adds the held events': test_ordered.py)
RUN_COLS = {n: t for n, t in fraud.BUCKET_COLUMNS.items() if not n.startswith(buckets.HELD)}


def _stored(columns, row):
    """A state row as Spark hands it back: the lists it was given, copied."""
    return buckets.read(columns, tuple(list(v) if isinstance(v, list) else v for v in row))


def _batches(
    rng: random.Random, kind: str, n_batches: int = 6, keys: int = 40, per_batch: int = 150
):
    """[(events, watermark)]: events behind the watermark are dropped first, as Spark does."""
    out, clock, wm = [], 0, 0
    types = (
        ["page_view", "page_view", "click", "purchase", "checkout"]
        if kind == "click"
        else ["LOGIN_FAILED"] * 4 + ["LOGIN_SUCCESS"]
    )
    for b in range(n_batches):
        evs = []
        for _i in range(per_batch):
            k = f"u{rng.randrange(keys)}"
            t = clock + rng.randrange(0, 90 * MIN) // 1000 * 1000  # whole seconds: many ties
            eid = f"e{rng.randrange(10**4):04d}" if rng.random() < 0.9 else "dup"
            etype = rng.choice(types)
            if kind == "click":
                page = rng.choice(["/a", "/b", "/c", None]) if rng.random() < 0.8 else None
                dur = rng.choice([None, 0, 5, 60])
                evs.append((k, t, eid, etype, page, dur))
            else:
                evs.append((k, t, eid, etype, f"10.0.0.{rng.randrange(4)}"))
            if rng.random() < 0.05:
                evs.append(evs[-1])  # an exact duplicate
        evs = [e for e in evs if e[1] >= wm]
        out.append((evs, wm))
        clock += rng.choice([20, 45, 240]) * MIN  # sometimes far ahead: timeouts pile up
        wm = max(wm, clock - 10 * MIN) if b else 0
    out.append(([], wm + 300 * MIN))  # a no-data batch closing everything
    return out


def _bucket(key: str, n: int) -> int:
    return zlib.crc32(key.encode()) % n


def _per_key_sessions(batches, max_pages):
    state: dict[str, tuple[list, int]] = {}
    rows: list[dict] = []
    for evs, wm in batches:
        by_key: dict[str, list] = {}
        for k, *e in evs:
            by_key.setdefault(k, []).append(tuple(e))
        calls = [(k, by_key[k]) for k in by_key] + [
            (k, []) for k, (_, to) in state.items() if k not in by_key and to < wm
        ]
        for k, e in calls:
            got, still, to = sessions.update(k, e, state.get(k, ([], 0))[0], wm, GAP, max_pages)
            rows += got
            if still:
                assert to >= wm
                state[k] = (still, to)
            else:
                state.pop(k, None)
    return rows, state


def _sessions_events(evs):
    if not evs:
        return sessions_bulk.Events.empty()
    k, t, eid, et, page, dur = zip(*evs, strict=True)
    obj = lambda v: np.array(v, dtype=object)  # noqa: E731
    return sessions_bulk.Events(
        obj(k),
        np.array(t, dtype=np.int64),
        obj(eid),
        obj(et),
        obj(page),
        np.array([d or 0 for d in dur], dtype=np.int64),
    )


def _bucketed_sessions(batches, max_pages, n_buckets):
    blobs: dict[int, tuple[tuple, int]] = {}
    rows: list[dict] = []
    for evs, wm in batches:
        by_bucket: dict[int, list] = {}
        for e in evs:
            by_bucket.setdefault(_bucket(e[0], n_buckets), []).append(e)
        due = [b for b, (_, to) in blobs.items() if b not in by_bucket and to < wm]
        for b in [*by_bucket, *due]:
            prev = sessions_bulk.Sessions.from_columns(
                _stored(SESSION_COLS, blobs[b][0]) if b in blobs else None
            )
            closed, still, to = sessions_bulk.update_bucket(
                _sessions_events(by_bucket.get(b, [])), prev, wm, GAP, max_pages
            )
            cols = sessions_bulk.output_columns(closed)
            rows += [dict(zip(cols, r, strict=True)) for r in zip(*cols.values(), strict=True)]
            if to is None:
                assert not len(still)
                blobs.pop(b, None)
            else:
                assert to >= wm
                row = buckets.row(SESSION_COLS, still.columns(), still.key_count())
                assert buckets.bucket_key_count(row) == len(set(still.key.tolist()))
                blobs[b] = (row, to)
    return rows, blobs


def _norm(rows):
    return sorted(
        tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in sorted(r.items()))
        for r in rows
    )


@pytest.mark.parametrize("seed", range(12))
def test_sessions_bulk_equals_per_key(seed):
    rng = random.Random(seed)
    batches = _batches(rng, "click")
    max_pages = rng.choice([0, 1, 3, 10])
    expected, left = _per_key_sessions(batches, max_pages)
    got, blobs = _bucketed_sessions(batches, max_pages, rng.choice([1, 3, 16]))
    assert expected and _norm(got) == _norm(expected)
    assert not left and not blobs  # the final no-data batch closes everything


def test_sessions_bulk_keeps_open_sessions_between_calls():
    ev = _sessions_events(
        [("u1", 0, "a", "page_view", "/a", 1), ("u1", 50 * MIN, "b", "page_view", "/b", 2)]
    )
    closed, still, to = sessions_bulk.update_bucket(ev, sessions_bulk.Sessions.empty(), 0, GAP, 10)
    assert not len(closed) and len(still) == 2 and to == GAP
    row = buckets.row(SESSION_COLS, still.columns(), still.key_count())
    assert row[:3] == (1, ["u1", "u1"], [0, 50 * MIN])  # keys, then one entry per session
    again = sessions_bulk.Sessions.from_columns(_stored(SESSION_COLS, row))
    closed, still, to = sessions_bulk.update_bucket(
        sessions_bulk.Events.empty(), again, GAP + 1, GAP, 10
    )
    assert closed.pages() == [["/a"]] and still.pages() == [["/b"]] and to == 80 * MIN


def _per_key_fraud(batches, threshold=5, gap=10 * MIN):
    state: dict[str, tuple] = {}
    rows: list[dict] = []
    for evs, wm in batches:
        by_key: dict[str, list] = {}
        for k, *e in evs:
            by_key.setdefault(k, []).append(tuple(e))
        for k, e in by_key.items():
            got, st, to = fraud.update(k, e, state.get(k, (None,))[0], gap, threshold)
            rows += got
            if st is None:
                state.pop(k, None)
            else:
                state[k] = (fraud.Failures.from_tuple(st.to_tuple()), max(to, wm + 1))
        for k in [k for k, (_, to) in state.items() if k not in by_key and to < wm]:
            del state[k]
    return rows, state


def _bucketed_fraud(batches, n_buckets, threshold=5, gap=10 * MIN):
    blobs: dict[int, tuple[tuple, int]] = {}
    rows: list[dict] = []
    for evs, wm in batches:
        by_bucket: dict[int, list] = {}
        for e in evs:
            by_bucket.setdefault(_bucket(e[0], n_buckets), []).append(e)
        due = [b for b, (_, to) in blobs.items() if b not in by_bucket and to < wm]
        for b in [*by_bucket, *due]:
            prev = (
                fraud_bulk.Bucket.from_columns(_stored(RUN_COLS, blobs[b][0]))
                if b in blobs
                else fraud_bulk.Bucket({})
            )
            e = by_bucket.get(b, [])
            cols = (
                [
                    np.array(c, dtype=np.int64 if i == 1 else object)
                    for i, c in enumerate(zip(*e, strict=True))
                ]
                if e
                else [np.empty(0, dtype=object)] * 5
            )
            got, new, to = fraud_bulk.update_bucket(
                fraud_bulk.group_events(*cols), prev, wm, gap, threshold
            )
            rows += got
            if to is None:
                blobs.pop(b, None)
            else:
                assert to >= wm
                blobs[b] = (buckets.row(RUN_COLS, new.columns(), len(new.users)), to)
    return rows, blobs


@pytest.mark.parametrize("seed", range(12))
def test_fraud_bulk_equals_per_key(seed):
    rng = random.Random(100 + seed)
    batches = _batches(rng, "auth", keys=15)
    expected, _ = _per_key_fraud(batches)
    got, _ = _bucketed_fraud(batches, rng.choice([1, 4]))
    assert expected and _norm(got) == _norm(expected)


def test_bucket_state_is_typed_and_counts_its_keys():
    """The bucket state's DDL names every per-key column as an array (what Spark's state reader
    and the upgrade plan show); its key count reads from a row, a reader value or a dict."""
    from spark_jobs.io.tables import ddl_fields

    fields = dict(ddl_fields(buckets.schema(SESSION_COLS)))
    assert fields["keys"] == "int" and fields["page_eid"] == "array<string>"
    assert fields["purchased"] == "array<boolean>" and len(fields) == len(SESSION_COLS) + 1
    with pytest.raises(ValueError, match="types are"):
        buckets.schema({"x": "double"})
    row = buckets.row(RUN_COLS, fraud_bulk.Bucket({}).columns(), 0)
    assert row == (0, *([[]] * len(RUN_COLS)))
    with pytest.raises(ValueError, match="columns"):
        buckets.read(SESSION_COLS, row)
    value = {"groupState": {"keys": 7, "key": ["a"]}, "timeoutTimestamp": 1}
    assert buckets.bucket_key_count(value) == 7 == buckets.bucket_key_count((7, ["a"]))
    assert buckets.bucket_key_count({"keys": 3, "blob": b"SKB"}) == 3  # an earlier release's


def test_columnar_round_trip_and_refusals():
    cols = {
        "k": np.array(["a", None, "é", ""], dtype=object),
        "n": np.arange(4, dtype=np.int64),
        "b": np.array([True, False, True, False]),
    }
    blob = columnar.encode(cols, keys=3)
    back = columnar.decode(blob)
    assert (
        back["k"].tolist() == ["a", None, "é", ""]
        and back["n"].tolist() == [0, 1, 2, 3]
        and back["b"].tolist() == [True, False, True, False]
    )
    assert columnar.key_count(blob) == 3
    with pytest.raises(ValueError, match="magic"):
        columnar.key_count(b"\x01pickle-ish-data")
    with pytest.raises(ValueError, match="version 9"):
        columnar.key_count(b"SKB\x09" + bytes(8))


@pytest.mark.parametrize("span", [10, 3 * 10**9, 2**61], ids=["small", "days", "beyond-int64"])
def test_segment_cummax_restarts_at_each_segment(span):
    """The running maximum per segment, by its shift (times of a batch) and by its rank fallback
    (a span so wide the shifted values would overflow int64), against a plain loop."""
    rng = np.random.default_rng(span % 1000)
    segment = np.sort(rng.integers(0, 40, 500))
    values = rng.integers(-span // 2, span // 2, 500, dtype=np.int64)
    want, best, prev = [], None, None
    for s, v in zip(segment.tolist(), values.tolist(), strict=True):
        best = v if s != prev or best is None else max(best, v)
        prev = s
        want.append(best)
    assert sessions_bulk._segment_cummax(values, segment).tolist() == want


@pytest.mark.parametrize("span", [5, 3 * 10**9, 2**61], ids=["ties", "days", "beyond-int64"])
def test_rows_are_ordered_by_key_then_start(span):
    """The session merge's row order, by its combined key (times of a batch) and by its
    two-key fallback (a span so wide the combined key would overflow int64)."""
    rng = np.random.default_rng(span % 1000)
    code = rng.integers(0, 50, 800)
    start = rng.integers(-span // 2, span // 2, 800, dtype=np.int64)
    order = sessions_bulk._by_key_then_start(code, start)
    assert sorted(order.tolist()) == list(range(800))
    pairs = list(zip(code[order].tolist(), start[order].tolist(), strict=True))
    assert pairs == sorted(pairs)
