"""Quality without a JVM: the same slices as :mod:`incremental`, read with ``deltalake`` (delta-rs)
into pandas, for Great Expectations' pandas engine.

Small increments (the catch-up DAG's usual case) are validated here; starting Spark for them
cost ~40 s. ``engine_for`` decides from the Delta log alone (no data read): the rows added in
the versions to validate, at most ``quality.pandas_max_rows`` of the job spec (default in
:class:`spark_jobs.contract.blocks.Quality`), go to pandas, bigger ones (or an unknown count) to Spark. Both engines
give the same verdicts (tests/integration/test_quality_engines.py).

Timestamps come out as naive local datetimes, as Spark hands them to Python, so run-time
parameters (the freshness floor) compare the same way on both engines.
"""

from __future__ import annotations

from typing import Any

from spark_jobs.contract import delta
from spark_jobs.quality.incremental import CDF_COLUMNS, NEW_ROW_TYPES, Slice, current_version
from spark_jobs.quality.suites import spark_type_name

ENGINES = ("auto", "pandas", "spark")
# Reader features delta-rs (deltalake 1.6.6) refuses to read: such tables go to Spark.
UNSUPPORTED_READER_FEATURES = {"deletionVectors"}


def max_rows(spec: Any) -> int:
    return int(spec.quality.pandas_max_rows)


def unreadable(uri: str) -> str | None:
    """Why deltalake cannot read the table (reader features it lacks, e.g. deletion vectors in
    deltalake 1.6), else None."""
    from deltalake import DeltaTable

    features = set(DeltaTable(uri).protocol().reader_features or ()) & UNSUPPORTED_READER_FEATURES
    return f"reader features {', '.join(sorted(features))}" if features else None


def added_rows(uri: str, last_version: int | None, full: bool) -> int | None:
    """Rows added by the versions after ``last_version`` (all live files when None or ``full``),
    from the log's file statistics; None when a count is missing (then Spark decides)."""
    if full or last_version is None:
        from deltalake import DeltaTable

        counts = DeltaTable(uri).get_add_actions(flatten=True).column("num_records").to_pylist()
        return None if any(c is None for c in counts) else int(sum(counts))
    total = 0
    for v in range(last_version + 1, current_version(uri) + 1):
        c = delta.commit(uri, v)
        n = None if c is None else delta.added_records(c)
        if n is None:
            return None  # expired from the log, or a file without statistics: count unknown
        total += n
    return total


def _frame(table: Any) -> Any:
    """An Arrow table as pandas, timestamps as naive local datetimes (as Spark collects them)."""
    return naive_local(table.to_pandas())


def naive_local(df: Any) -> Any:
    import pandas as pd

    for col in df.columns:
        if isinstance(df[col].dtype, pd.DatetimeTZDtype):
            df[col] = df[col].dt.tz_convert(_local_tz()).dt.tz_localize(None)
    return df


def hashable_arrays(df: Any) -> Any:
    """``df`` (not changed) with every array cell as a tuple, for GX's pandas engine.

    GX fingerprints a pandas batch with pandas' row hash. A column of numpy arrays (what an
    ``array<...>`` column of Delta reads as) cannot be hashed, and GX then pickles the whole frame
    instead: 0.7 s per 100k ``sessions`` rows, more than all the checks together. Tuples hash in
    0.01 s and hold the same values; the type checks read the Delta schema, not these cells."""
    import numpy as np

    def as_tuple(v: Any) -> Any:
        if isinstance(v, np.ndarray):
            v = v.tolist()  # Python values, as the frame's other cells
        return tuple(as_tuple(x) for x in v) if isinstance(v, list) else v

    arrays = [
        c
        for c in df.columns
        if df[c].dtype == object and isinstance(next(iter(df[c].dropna()), None), np.ndarray | list)
    ]
    if not arrays:
        return df
    out = df.copy(deep=False)
    for c in arrays:
        out[c] = df[c].map(as_tuple, na_action="ignore")
    return out


def _local_tz() -> Any:
    from datetime import datetime

    return datetime.now().astimezone().tzinfo


def column_types(uri: str) -> dict[str, str]:
    """Column -> the pyspark type class name Spark would report, from the Delta schema."""
    from deltalake import DeltaTable
    from deltalake.schema import ArrayType, MapType, PrimitiveType, StructType

    out: dict[str, str] = {}
    for f in DeltaTable(uri).schema().fields:
        t = f.type
        if isinstance(t, PrimitiveType):
            out[f.name] = spark_type_name(t.type)
        elif isinstance(t, ArrayType):
            out[f.name] = "ArrayType"
        elif isinstance(t, MapType):
            out[f.name] = "MapType"
        elif isinstance(t, StructType):
            out[f.name] = "StructType"
    return out


def _semi(df: Any, touched: Any, keys: list[str]) -> Any:
    """Rows of ``df`` whose key is in ``touched`` (both pandas)."""
    if df.empty or touched.empty:
        return df.iloc[0:0]
    return df.merge(touched, on=keys, how="inner")[list(df.columns)]


def _snapshot(uri: str, version: int, keys: list[str] | None = None, touched: Any = None) -> Any:
    """The table at ``version``; with ``keys``, only rows whose first key is among ``touched``'s
    (filtered inside the Parquet scan: the table is streamed, never held whole in memory), then
    exactly the touched keys."""
    from deltalake import DeltaTable

    dt = DeltaTable(uri, version=version)
    if keys is None:
        return _frame(dt.to_pyarrow_table())
    import pyarrow as pa
    import pyarrow.compute as pc

    first = touched[keys[0]].dropna().unique().tolist()
    dataset = dt.to_pyarrow_dataset()
    values = pa.array(first, type=dataset.schema.field(keys[0]).type)
    table = dataset.to_table(filter=pc.field(keys[0]).isin(values))
    return _semi(_frame(table), touched, keys)


def read_slice(
    uri: str,
    last_version: int | None,
    keys: tuple[str, ...] = (),
    upsert: bool = False,
    full: bool = False,
) -> Slice | None:
    """:func:`incremental.read_slice` without Spark: ``Slice.df`` is a pandas DataFrame."""
    version = current_version(uri)
    if full or last_version is None:
        return Slice(_snapshot(uri, version), uri, None, version, "full" if full else "first run")
    if last_version >= version:
        return None
    start = last_version + 1
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError

    try:
        reader = DeltaTable(uri).load_cdf(starting_version=start, ending_version=version)
    except DeltaError as exc:  # no change feed on (some of) these versions: validate it all
        if "change" not in str(exc).lower():
            raise
        return Slice(_snapshot(uri, version), uri, None, version, "no change feed")
    import pyarrow as pa

    cdf = _frame(pa.RecordBatchReader.from_stream(reader).read_all())  # deltalake hands out arro3
    new = cdf[cdf["_change_type"].isin(NEW_ROW_TYPES)].drop(columns=list(CDF_COLUMNS))
    new = new.reset_index(drop=True)
    if not keys:
        return Slice(new, uri, start, version, "incremental")
    touched = new[list(keys)].drop_duplicates()
    if upsert:
        return Slice(
            _snapshot(uri, version, list(keys), touched), uri, start, version, "incremental"
        )
    import pandas as pd

    again = _snapshot(uri, last_version, list(keys), touched)
    both = pd.concat([new, again], ignore_index=True) if len(again) else new
    return Slice(both, uri, start, version, "incremental")


def empty_quarantine() -> Any:
    import pandas as pd

    from spark_jobs.io.tables import QUARANTINE, column_names

    return pd.DataFrame(columns=column_names(QUARANTINE))
