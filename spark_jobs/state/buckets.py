"""The batched executor's state row: one per hash bucket of keys, typed "struct of arrays".

A job declares the per-key columns it keeps (name -> Spark element type); its bucket's state
row is ``keys int`` (how many keys the bucket holds) then one ``array<type>`` column per
declared column, entry ``i`` of every array belonging to row ``i`` of one
group of columns (a key's, a session's, a held event's: each job says how it lays them out). Spark's state reader and ``upgrade plan``
see the fields; the bucket function reads them as numpy arrays and writes numpy arrays back as
lists (``tolist``), which is all the conversion PySpark needs for arrays of scalars.

No pandas or Spark import: ``checkpoint inspect`` and the upgrade plan read this module too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

BUCKET = "_bucket"  # the key column of the batched executor's state: one row per bucket
KEYS = "keys"  # the state row's first field: keys held by the bucket
HELD = "held_"  # prefix of the held events' columns (spark_jobs.state.ordered)
# The bucket state of earlier releases (one binary blob, spark_jobs.state.columnar): what the
# jobs' migration rules convert from.
BLOB_SCHEMA = "keys int, blob binary"

# element types a bucket column can have -> the numpy dtype it is read as
_DTYPES = {"bigint": "int64", "boolean": "bool", "string": "object"}


def schema(columns: Mapping[str, str]) -> str:
    """The bucket state's DDL for per-key ``columns`` (name -> ``bigint``/``boolean``/``string``)."""
    wrong = [n for n, t in columns.items() if t not in _DTYPES]
    if wrong:
        raise ValueError(f"bucket columns {', '.join(wrong)}: types are {', '.join(_DTYPES)}")
    return ", ".join([f"{KEYS} int", *(f"{n} array<{t}>" for n, t in columns.items())])


def held_columns(payload: Mapping[str, str]) -> dict[str, str]:
    """The columns of events held until the watermark passes them (name -> element type): key,
    time and event id, then ``payload`` (the job's own event fields)."""
    cols = {"key": "string", "t": "bigint", "eid": "string", **payload}
    return {HELD + n: t for n, t in cols.items()}


def read(columns: Mapping[str, str], row: tuple) -> dict[str, Any]:
    """A state row (``state.get``) as name -> 1-d numpy array."""
    import numpy as np

    values = row[1:]
    if len(values) != len(columns):
        raise ValueError(f"bucket state row has {len(values)} columns, not {len(columns)}")
    return {
        n: np.array(v or (), dtype=_DTYPES[t])
        for (n, t), v in zip(columns.items(), values, strict=True)
    }


def row(columns: Mapping[str, str], cols: Mapping[str, Any], keys: int) -> tuple:
    """The state row for ``cols`` (name -> numpy array or list) holding ``keys`` keys."""
    import numpy as np

    return (int(keys), *(np.asarray(cols[n]).tolist() for n in columns))


def bucket_key_count(value: Any) -> int:
    """Keys held by one bucket's state value: the ``value`` column of Spark's state reader
    (``groupState``, ``timeoutTimestamp``), a state row, or a dict with ``keys`` (nothing else
    is read). State written before the typed layout (``keys``, ``blob``) counts the same way."""
    if isinstance(value, dict):
        if "groupState" in value:  # a row of Spark's state reader: (groupState, timeoutTimestamp)
            return bucket_key_count(value["groupState"])
        return int(value[KEYS])
    if hasattr(value, "asDict"):
        return bucket_key_count(value.asDict())
    if isinstance(value, (tuple, list)) and value:
        return int(value[0])
    raise TypeError(f"not a bucket state value: {type(value).__name__}")
