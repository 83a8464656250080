"""A committed batch's row, from files only: its progress record (when the progress log still
has it), the checkpoint's ``offsets/`` and ``sources/`` logs (what it read) and the output
tables' Delta logs (which version it wrote). No Spark: a writer thread or the next run's start
derives rows while batches run."""

from __future__ import annotations

import json
from typing import Any

from spark_jobs.contract import delta
from spark_jobs.contract.events import BATCH

# The few reads of Spark's checkpoint files this needs, made here: the checkpoint room maps the
# whole layout, but its commands log through this room, which therefore does not import it.
# ``offsets/N`` is "v1", a JSON metadata line, then one line per source (its end offset, "-"
# for none); ``sources/<i>/N[.compact]`` is "v1" then one JSON entry per file seen.


def _fs(checkpoint: str) -> tuple[Any, str]:
    import fsspec

    fs, root = fsspec.core.url_to_fs(checkpoint)
    return fs, str(root).rstrip("/")


def _text(checkpoint: str, rel: str) -> str:
    fs, root = _fs(checkpoint)
    return bytes(fs.cat_file(f"{root}/{rel}")).decode("utf-8")


def _batches(checkpoint: str, folder: str) -> list[int]:
    fs, root = _fs(checkpoint)
    try:
        found = fs.ls(f"{root}/{folder}", detail=False)
    except FileNotFoundError:
        return []
    names = (str(p).rstrip("/").rsplit("/", 1)[-1] for p in found)
    return sorted(int(n) for n in names if n.isdigit())


def committed(checkpoint: str) -> list[int]:
    """Batch ids with a ``commits/N`` file, ascending."""
    return _batches(checkpoint, "commits")


def uncommitted(checkpoint: str) -> list[int]:
    """Batches planned (``offsets/N``) but never committed: a run cut short."""
    done = set(committed(checkpoint))
    return [b for b in _batches(checkpoint, "offsets") if b not in done]


def query_id(checkpoint: str) -> str | None:
    try:
        return str(json.loads(_text(checkpoint, "metadata").splitlines()[0])["id"])
    except (OSError, ValueError, KeyError, IndexError):
        return None


def commit_time(checkpoint: str, batch: int) -> float | None:
    fs, root = _fs(checkpoint)
    try:
        mtime = fs.info(f"{root}/commits/{batch}").get("mtime")
    except OSError:
        return None
    return float(mtime.timestamp() if hasattr(mtime, "timestamp") else mtime) if mtime else None


def _offsets(checkpoint: str, batch: int) -> list[Any] | None:
    try:
        rest = [r for r in _text(checkpoint, f"offsets/{batch}").splitlines()[2:] if r.strip()]
        return [None if r.strip() == "-" else json.loads(r) for r in rest]
    except (OSError, ValueError):
        return None


def _source_files(checkpoint: str, source: int, log_batch: int) -> list[str] | None:
    """Files the file source's log added in its batch ``log_batch`` (a ``.compact`` file keeps
    every entry up to its batch, each with its ``batchId``)."""
    for name in (f"{log_batch}", f"{log_batch}.compact"):
        try:
            text = _text(checkpoint, f"sources/{source}/{name}")
        except OSError:
            continue
        entries = [json.loads(line) for line in text.splitlines()[1:] if line.strip()]
        return [
            str(e.get("path")) for e in entries if int(e.get("batchId", log_batch)) == log_batch
        ]
    return None


def positions(checkpoint: str, batch: int) -> list[dict[str, Any]]:
    """Per source (in the query's order): where ``batch`` started and ended, and for a file
    source the files it read; a Kafka source's offsets are per topic and partition (the next
    offset to read, as Spark keeps them)."""
    end = _offsets(checkpoint, batch)
    if end is None:
        return []
    start = _offsets(checkpoint, batch - 1) if batch > 0 else None
    out = []
    for i, src in enumerate(end):
        before = start[i] if start and i < len(start) else None
        pos: dict[str, Any] = {"source": i, "start": before, "end": src}
        if isinstance(src, dict) and "logOffset" in src:
            lo = (
                int(before["logOffset"])
                if isinstance(before, dict) and "logOffset" in before
                else -1
            )
            files: list[str] = []
            for k in range(lo + 1, int(src["logOffset"]) + 1):
                files.extend(_source_files(checkpoint, i, k) or [])
            pos["files"] = files
        out.append(pos)
    return out


class Versions:
    """Which Delta version of each table holds which batch of a query: the job's batch writer
    records ``txn(query id, batch id)`` in every commit. Each table's log is read once, then only
    its new commits."""

    def __init__(self, tables: dict[str, str]) -> None:
        self.tables = tables  # column -> table URI
        self.seen: dict[str, int | None] = dict.fromkeys(tables)
        self.found: dict[tuple[str, str, int], int] = {}  # (column, app, batch) -> version

    def of(self, query_id: str, batch: int) -> dict[str, int | None]:
        out: dict[str, int | None] = {}
        for col, table in self.tables.items():
            key = (col, query_id, batch)
            if key not in self.found:
                for c in delta.commits(table, after=self.seen[col]):
                    self.seen[col] = c.version
                    for app, b in c.txns.items():
                        self.found[(col, app, b)] = c.version
            out[col] = self.found.get(key)
        return out


def _ops_sum(rec: dict[str, Any], key: str) -> int | None:
    ops = rec.get("stateOperators") or []
    return sum(int(o.get(key) or 0) for o in ops) if ops else None


def batch_row(
    job: str,
    checkpoint: str,
    query_id: str,
    batch: int,
    record: dict[str, Any] | None,
    versions: dict[str, int | None],
) -> dict[str, Any]:
    """The ``batch`` row of one committed batch; ``record`` is its progress record, or None
    when the progress log no longer has it (the row then has what the files say)."""
    rec = record or {}
    srcs = positions(checkpoint, batch)
    for s, p in zip(rec.get("sources") or [], srcs, strict=False):
        p["description"] = s.get("description")
        p["input_rows"] = s.get("numInputRows")
    keys = rec.get("keys")
    durations = rec.get("durationMs") or {}
    details: dict[str, Any] = {"sources": srcs}
    if rec.get("lag") is not None:
        details["lag"] = rec["lag"]
    if record is not None:
        details["progress"] = record
    else:
        details["recovered"] = "progress record no longer in the progress log"
    wm = (rec.get("eventTime") or {}).get("watermark")
    return {
        "kind": BATCH,
        "job": job,
        "checkpoint": checkpoint,
        "query_id": query_id,
        "run_id": rec.get("runId"),
        "batch_id": batch,
        "at": rec.get("timestamp") or commit_time(checkpoint, batch),
        "input_rows": rec.get("numInputRows"),
        "input_rows_per_second": _float(rec.get("inputRowsPerSecond")),
        "processed_rows_per_second": _float(rec.get("processedRowsPerSecond")),
        "duration_ms": durations.get("triggerExecution"),
        "state_keys": keys.get("total")
        if isinstance(keys, dict)
        else _ops_sum(rec, "numRowsTotal"),
        "watermark": None if wm in (None, "1970-01-01T00:00:00.000Z") else wm,
        "dropped_by_watermark": _ops_sum(rec, "numRowsDroppedByWatermark"),
        **versions,
        "details": details,
    }


def _float(v: Any) -> float | None:
    try:
        return None if v is None else float(v)
    except (TypeError, ValueError):
        return None  # Spark writes NaN/Infinity as strings for an empty batch's rates
