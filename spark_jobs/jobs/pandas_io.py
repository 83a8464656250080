"""Conversions between the pandas frames Spark hands Python and the logic's plain values.

pandas and numpy are imported in the functions: the job registry imports every module of
``spark_jobs.jobs``, and reading a declaration should not cost a pandas import.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


def to_ms(col: pd.Series) -> np.ndarray:
    """Epoch milliseconds of a timestamp column (naive = UTC, as the session's time zone is UTC)."""
    import numpy as np

    values = (
        col.to_numpy(dtype="datetime64[ns]")
        if col.dt.tz is None
        else col.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy()
    )
    return values.astype("datetime64[ms]").astype(np.int64)


def values(col: pd.Series) -> list:
    """Python values of a column, None for missing (NaN in float columns included)."""
    return col.astype(object).where(col.notna(), None).tolist()


def concat(pdfs: Iterable[pd.DataFrame]) -> pd.DataFrame | None:
    import pandas as pd

    frames = [p for p in pdfs if len(p)]
    if not frames:
        return None
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


def rows_frame(
    rows: list[dict] | dict[str, list], columns: list[str], ts_columns: Iterable[str]
) -> pd.DataFrame:
    """A frame of output rows, ms timestamps turned into UTC timestamps, columns in order."""
    import pandas as pd

    df = pd.DataFrame(rows, columns=columns)
    for c in ts_columns:
        df[c] = pd.to_datetime(df[c], unit="ms", utc=True)
    return df


def emit(rows: list[dict], columns: list[str], ts_columns: Iterable[str]) -> Iterator[pd.DataFrame]:
    if rows:
        yield rows_frame(rows, columns, ts_columns)


def with_metric_row(
    cols: Mapping[str, list] | None,
    columns: list[str],
    ts_columns: Iterable[str],
    metric_column: str,
    metric: dict[str, int],
) -> pd.DataFrame:
    """One frame for a whole call: the output rows ``cols`` (name -> values, times in epoch
    ms; None for none), then one metric row (data columns null, ``metric_column`` = ``metric``).

    The same rows as a frame of output rows and a separate metric frame, built at a fraction of
    the cost: a bucket call made three pandas frames (and two ``to_datetime``) for a few dozen
    rows, most of its time when the watermark closes sessions in every bucket."""
    import itertools

    import numpy as np
    import pandas as pd

    n = len(cols[columns[0]]) if cols else 0
    ts = set(ts_columns)
    data: dict[str, object] = {}
    for c in columns:
        values = cols[c] if cols else []
        if c in ts:
            ms = np.empty(n + 1, dtype="datetime64[ms]")
            ms[:n] = np.asarray(values, dtype=np.int64).astype("datetime64[ms]")
            ms[n] = np.datetime64("NaT")
            data[c] = pd.DatetimeIndex(ms.astype("datetime64[ns]")).tz_localize("UTC")
        else:  # object arrays: a None beside ints stays None (no float), lists stay lists
            data[c] = np.fromiter(itertools.chain(values, (None,)), dtype=object, count=n + 1)
    data[metric_column] = np.fromiter(
        itertools.chain(itertools.repeat(None, n), (metric,)), dtype=object, count=n + 1
    )
    # Arrays rather than Series: no index to align per column (most of a call's frame time).
    return pd.DataFrame(data, copy=False)
