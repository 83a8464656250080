"""The batched executor: many keys per Python call, per-key semantics kept exactly.

Spark's per-key ``applyInPandasWithState`` crosses into Python (Arrow batch, pandas frame, state
row) once per key per micro-batch; with many small keys that overhead is the whole cost. Here
keys are grouped into ``params.buckets`` hash buckets (``pmod(xxhash64(key), buckets)``, computed
in Spark) under one ``applyInPandasWithState`` keyed by bucket, and the bucket's function runs
the job's logic for the bucket's keys together (``spark_jobs.state.*_bulk``). Nothing here is
about one job: each job module wires its own bucket function (or uses the ordered one below).

Per-key semantics inside a bucket:

- state per key, stored together as one typed row per bucket (:mod:`spark_jobs.state.buckets`):
  the bucket's key count, then one array per per-key column the job declares (its
  ``JobDef.bucket_state_schema``), so Spark's state reader and ``upgrade plan`` see the fields;
- a timeout per key; the bucket's event-time timeout is the earliest key deadline, so Spark
  calls the bucket whenever any key would have been called;
- on a call (new data or timeout) exactly the keys Spark would have called are processed: keys
  with new rows, and keys whose deadline is before the watermark; the rest are left untouched;
- the bucket's state is removed when no key remains; late rows are dropped by Spark before the
  call, exactly as for the per-key operator (same operator, same watermark).

State inspection: Spark's state reader shows one row per bucket (``key._bucket``,
``value.groupState.keys`` and the job's arrays); :func:`spark_jobs.state.buckets.bucket_key_count`
turns a bucket's value into its number of keys.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import PositiveInt

from spark_jobs.io import key_metrics
from spark_jobs.jobs.declaration import JobParams
from spark_jobs.state import buckets
from spark_jobs.state.buckets import BUCKET

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql.streaming.state import GroupState


class BatchedParams(JobParams):
    """The parameters of a job that can run on this executor (its model subclasses this)."""

    buckets: PositiveInt = 256  # keys are hashed into this many state rows


def bucket_column(key: str, buckets: int) -> Any:
    """The bucket of ``key`` (not aliased): what the executor groups by, and so what the runner
    partitions the parsed lines on, as the column ``BUCKET`` (:func:`shuffle_keys`)."""
    from pyspark.sql import functions as F

    return F.pmod(F.xxhash64(F.col(key)), F.lit(buckets)).cast("int")


def delay_ms(spec: Any) -> int:
    """The watermark delay of ``spec``'s query in ms, never below the one Spark applies
    (:func:`spark_jobs.contract.durations.spark_interval` truncates fractions of a ms)."""
    import math

    return math.ceil(round(spec.watermark_seconds * 1000, 6))  # 0.1 s * 1000 is 100.00000000000001


def settled_until_ms(watermark_ms: int, event_ms: Any, delay_ms: int) -> int:
    """The watermark the events of this call already guarantee: what is due before it can be
    settled now, with the very result a later batch would give (issue 30: a catch-up run's
    first batch closes most keys instead of carrying them through state to the next batch).

    Every row a call gets passed the batch's watermark operator, so Spark's next watermark is at
    least ``max(event_ms) - delay_ms`` (Spark keeps the batch's newest event time, in ms, minus
    the delay; it never moves back, and a restart reads it from the commit log). A later event is
    admitted only above that watermark, so it cannot reach anything due before this value.
    ``delay_ms`` must not be below the query's delay (a larger one only settles less)."""
    if not len(event_ms):
        return int(watermark_ms)
    return max(int(watermark_ms), int(event_ms.max()) - int(delay_ms))


def shuffle_keys(kind: str, key: str, params: type[BatchedParams]) -> Any:
    """A keyed job's ``JobDef.shuffle_keys``: its ``kind`` events grouped by ``key``, or by the
    key's bucket on the batched executor."""

    def keys(spec: Any) -> dict[str, dict[str, Any]]:
        from pyspark.sql import functions as F

        if spec.executor == "batched":
            return {kind: {BUCKET: bucket_column(key, params.of(spec).buckets)}}
        return {kind: {key: F.col(key)}}

    return keys


def bucketed(
    stream: Any,
    key: str,
    input_columns: list[Any],
    n_buckets: int,
    func: Any,
    schema: str,
    state_schema: str,
) -> Any:
    """``stream`` grouped by the hash bucket of ``key`` into ``n_buckets``, ``func`` applied per
    bucket; ``schema`` is the job's output DDL (the metric column is added here),
    ``state_schema`` its bucket state's (:func:`spark_jobs.state.buckets.schema`). A ``BUCKET``
    column already in ``stream`` (the runner's, which it partitioned on) is used as it is:
    the operator then finds its input distributed by the very column it groups by."""
    from pyspark.sql import functions as F

    if BUCKET in stream.columns:
        bucket = F.col(BUCKET)
    else:
        bucket = bucket_column(key, n_buckets).alias(BUCKET)
    output = key_metrics.output_schema(schema)
    return (
        stream.select(bucket, *input_columns)
        .groupBy(BUCKET)
        .applyInPandasWithState(func, output, state_schema, "append", "EventTimeTimeout")
    )


def load(state: Any, columns: Mapping[str, str]) -> dict[str, Any] | None:
    """A bucket's stored columns (name -> numpy array), or None when it holds no state."""
    return buckets.read(columns, state.get) if state.exists else None


def save(
    state: Any,
    columns: Mapping[str, str],
    cols: Mapping[str, Any] | None,
    keys: int,
    timeout: int | None,
) -> None:
    """A bucket's state after a call: removed when ``cols`` is None, else stored (with its
    event-time timeout when there is one)."""
    if cols is None:
        state.remove()
        return
    state.update(buckets.row(columns, cols, keys))
    if timeout is not None:
        state.setTimeoutTimestamp(int(timeout))


# -- ordered mode: events held until the watermark passes them (spark_jobs.state.ordered) ------
def update_ordered_bucket(
    columns: list[str],
    state_columns: Mapping[str, str],
    step: Any,
    to_events: Callable[[pd.DataFrame], dict[str, Any]],
    emit: Callable[[list[dict]], Iterator[pd.DataFrame]],
    delay_ms: int,
    key: tuple[int],
    pdfs: Iterator[pd.DataFrame],
    state: GroupState,
) -> Iterator[pd.DataFrame]:
    """The bucket function for a job whose logic must see events in event-time order, bound to
    the job with ``functools.partial``.

    ``step`` is the job's :class:`spark_jobs.state.ordered.Step`; ``to_events(frame)`` turns a
    pandas frame of input rows into columns ``key``, ``t`` (epoch ms), ``eid`` and the payload;
    ``emit(rows)`` yields the output frames; ``columns`` are the output's, ``state_columns`` the
    bucket state's (name -> element type: the job's and the held events'). Each call also yields
    its metric row (:mod:`spark_jobs.io.key_metrics`). A timed-out bucket gets no rows: the
    watermark released held events or ended a key's run. Events are released (and runs ended)
    against :func:`settled_until_ms` of the new events (``delay_ms`` being the query's), so a
    catch-up's first batch applies what its own events prove no later event can precede.
    """
    from spark_jobs.jobs.pandas_io import concat
    from spark_jobs.state import ordered

    new = None
    if state.hasTimedOut:
        pass  # no rows: the earliest deadline in the bucket has passed
    elif (df := concat(pdfs)) is not None:
        new = to_events(df)
    import numpy as np

    t = new["t"] if new is not None else np.empty(0, dtype=np.int64)
    settled = settled_until_ms(state.getCurrentWatermarkMs(), t, delay_ms)
    rows, cols, keys, timeout, c = ordered.bucket_step(
        step, load(state, state_columns), new, settled
    )
    save(state, state_columns, cols, keys, timeout)
    for df in emit(rows):
        yield key_metrics.with_null_metrics(df)
    yield key_metrics.frame(columns, c.after - c.before, c.updated, c.removed, c.expired)
