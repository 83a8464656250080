"""Conversions between the pandas frames Spark hands Python and the logic's plain values.

pandas and numpy are imported in the functions: the job registry imports every module of
``spark_jobs.jobs``, and reading a declaration should not cost a pandas import.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
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
