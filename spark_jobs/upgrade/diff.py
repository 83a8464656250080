"""What a preview's shadow table holds that the live table does not, by the table's key.

Both tables start alike (the shadow is the live table as it was at the snapshot), so only the
rows the two runs wrote differently remain once each side's rows are taken away from the other
(``EXCEPT ALL`` in Spark). Those are grouped here by the job's key (``JobDef.keys``, what
identifies a row for the quality checks and upserts): a key only the shadow has is added, one
only the live table has is removed, one both have with other values is changed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

SAMPLES = 3  # rows shown per kind of difference
# Differences are grouped on the driver: past this many rows a side is too different to list,
# and the shadow kept with --keep is the place to look.
MAX_ROWS = 200_000


def _plain(v: Any) -> Any:
    """A value as JSON shows it (timestamps as ISO-8601)."""
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    if hasattr(v, "isoformat"):
        return v.isoformat()
    if isinstance(v, int | float | str | bool) or v is None:
        return v
    return str(v)


def classify(
    only_shadow: Iterable[dict[str, Any]],
    only_live: Iterable[dict[str, Any]],
    keys: Sequence[str],
    samples: int = SAMPLES,
) -> dict[str, Any]:
    """``{"added", "removed", "changed"}``, each ``{"count", "samples"}``: rows whose key only
    the shadow has (added) or only the live table has (removed) count as rows; keys both have,
    with other values, count once each (changed, sampled as ``{"key", "live", "shadow"}``)."""
    shadow: dict[str, list[dict[str, Any]]] = {}
    live: dict[str, list[dict[str, Any]]] = {}
    for rows, into in ((only_shadow, shadow), (only_live, live)):
        for row in rows:
            plain = {k: _plain(v) for k, v in row.items()}
            key = json.dumps([plain.get(k) for k in keys], default=str)
            into.setdefault(key, []).append(plain)
    out: dict[str, Any] = {}
    added = [r for k in sorted(shadow) if k not in live for r in shadow[k]]
    removed = [r for k in sorted(live) if k not in shadow for r in live[k]]
    changed = [
        {"key": dict(zip(keys, json.loads(k), strict=True)), "live": live[k], "shadow": shadow[k]}
        for k in sorted(shadow)
        if k in live
    ]
    for name, found in (("added", added), ("removed", removed), ("changed", changed)):
        out[name] = {"count": len(found), "samples": found[:samples]}
    return out


def table_rows(spark: Any, table: str, version: int | None = None) -> Any:
    """The table (at ``version``, else its newest), None when it does not exist."""
    from spark_jobs.contract import delta

    if not delta.exists(table):
        return None
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return reader.load(table)


def compare(
    spark: Any, shadow: Any, live: Any, keys: Sequence[str], samples: int = SAMPLES
) -> dict[str, Any]:
    """:func:`classify` of two DataFrames (None: a table never written), over the columns both
    have."""
    from spark_jobs.contract.errors import UserError

    frames = [f for f in (shadow, live) if f is not None]
    if not frames:
        return classify([], [], keys, samples)
    columns = [c for c in frames[0].columns if all(c in f.columns for f in frames)]
    empty = spark.createDataFrame([], frames[0].select(columns).schema)
    s = (shadow if shadow is not None else empty).select(columns)
    v = (live if live is not None else empty).select(columns)
    sides = []
    for df in (s.exceptAll(v), v.exceptAll(s)):
        rows = [r.asDict(recursive=True) for r in df.limit(MAX_ROWS + 1).collect()]
        if len(rows) > MAX_ROWS:
            raise UserError(
                f"the shadow and live tables differ in more than {MAX_ROWS} rows; run the "
                "preview again with --keep and compare its shadow table yourself"
            )
        sides.append(rows)
    return classify(sides[0], sides[1], keys, samples)
