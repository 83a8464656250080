"""Helpers for job tests: hand-made landing files, specs pointed at a test's folders, table rows."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from spark_jobs.contract.spec import JobSpec, load_spec

T0 = datetime(2026, 3, 15, 12, 0, tzinfo=UTC)


def at(minutes: float) -> str:
    """An ISO-8601 event time ``minutes`` after 12:00Z on 2026-03-15."""
    return (T0 + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def ts(minutes: float) -> datetime:
    """The same instant as a naive UTC datetime, as Spark returns timestamps (session tz UTC)."""
    return (T0 + timedelta(minutes=minutes)).replace(tzinfo=None)


def write_lines(folder: Path, name: str, records: list[Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n")
    return path


def job_spec(job: str, tmp: Path, **changes: Any) -> JobSpec:
    """The job's real spec, reading ``tmp/land`` and writing ``tmp/out``, ``tmp/ckpt``."""
    from dataclasses import replace

    inp = (
        str(tmp / "land")
        if job == "order_payments"
        else str(tmp / "land" / load_spec(job).kinds[0])
    )
    spec = load_spec(job).with_overrides(
        input=inp, output=str(tmp / "out"), checkpoint=str(tmp / "ckpt"), trigger="available-now"
    )
    # Two partitions whatever a shipped spec says: a test that needs another count passes it.
    return replace(spec, **{"shuffle_partitions": 2, **changes})


def rows(spark: Any, uri: str, order: list[str] | None = None) -> list[tuple]:
    df = spark.read.format("delta").load(uri)
    return [tuple(r) for r in df.orderBy(*(order or df.columns)).collect()]


def parquet_timestamp_types(table: Path) -> set[str]:
    """The physical Parquet types of every timestamp column in the table's data files."""
    import pyarrow.parquet as pq

    found = set()
    for f in table.glob("*.parquet"):
        schema = pq.ParquetFile(f).schema
        for i in range(len(schema)):
            col = schema.column(i)
            if col.physical_type == "INT96" or "TIMESTAMP" in str(col.logical_type).upper():
                found.add(col.physical_type)
    return found


CLICK_TYPES = ["page_view", "checkout", "purchase"]


def write_hour(land: Path, part: int, bad_lines: bool = True) -> None:
    """``part{part}.json``: an hour of clickstream from 10:00 + ``part`` hours (so the previous
    hour's windows close), and with ``bad_lines`` two bad lines (not JSON; missing fields)."""
    land.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps(
            {
                "event_id": f"e{part}-{i}",
                "user_id": f"u{i % 3}",
                "event_type": CLICK_TYPES[i % 3],
                "page": "/p",
                "duration_sec": 1,
                "event_time": f"2026-03-15T{10 + part:02d}:{i * 4:02d}:00Z",
            }
        )
        for i in range(15)
    ]
    if bad_lines:
        lines += [f"not json {part}", json.dumps({"event_id": f"bad{part}", "user_id": "u"})]
    (land / f"part{part:02d}.json").write_text("\n".join(lines) + "\n")


def upgrade_env(mp: Any, tmp: Path) -> Path:
    """Point the commands at ``tmp`` as an upgrade test needs them: specs in ``tmp/specs`` (the
    changed spec, as ``$STATEKEEPER_SPECS`` in staging), data, checkpoints and snapshots beside
    them; ``mp`` is a pytest MonkeyPatch. Returns the specs folder."""
    specs = tmp / "specs"
    for k, v in {
        "STATEKEEPER_SPECS": specs,
        "STATEKEEPER_DATA": tmp / "data",
        "STATEKEEPER_CHECKPOINT_ROOTS": tmp / "ckpt",
        "STATEKEEPER_SNAPSHOT_ROOTS": tmp / "snaps",
    }.items():
        mp.setenv(k, str(v))
    return specs


def cli(*argv: str) -> tuple[int, str, str]:
    """``python -m spark_jobs ARGV`` in this process: exit code, stdout, stderr."""
    import contextlib
    import io

    from spark_jobs.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()
