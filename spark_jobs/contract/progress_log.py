"""The progress log, read: ``<checkpoint>/_statekeeper/progress.jsonl`` and its rotated files, as
typed records. The one reader both sides use (the health API and charts, the supervisor, the
runner); Spark-free.

The runner appends one JSON line per micro-batch (Spark's ``StreamingQueryProgress``, plus our
``statekeeper``, ``keys`` and ``lag`` objects) and ``{"event": "idle" | "heartbeat"}`` lines.
Past a size the file is rotated: ``progress.jsonl`` becomes ``progress.jsonl.1`` (older ones
shift to ``.2`` ... ``.KEEP_ROTATED``, the oldest goes) and a new one starts. So a reader sees
one log only by reading the files in order: :meth:`ProgressLog.tail` reads backwards from the
end across the files and stops when it has enough, :meth:`ProgressLog.history` reads forwards,
and a :class:`Follower` returns only what was appended since its last look, also across a
rotation. A line cut by a kill mid-write (or still being written) spoils that line only.

Records are classes in the manner of PySpark's ``StreamingQueryProgress.fromJson``: consumers
read attributes; ``raw`` keeps the line exactly as logged (the API returns it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from spark_jobs.contract import paths

KEEP_ROTATED = 5  # progress.jsonl.1 .. .5: with the default size, ~100 MB of history at most
BLOCK = 64 * 1024  # bytes read per step backwards
IDLE = "idle"
HEARTBEAT = "heartbeat"


def log_uri(checkpoint: str) -> str:
    return paths.join(checkpoint, paths.STATEKEEPER_DIR, paths.PROGRESS_FILE)


def rotated(current: Path, n: int) -> Path:
    """The ``n``-th rotated file of ``current`` (1 = the newest rotated)."""
    return current.with_name(f"{current.name}.{n}")


def iso_seconds(text: Any) -> float | None:
    """An ISO-8601 time as epoch seconds; None for anything else."""
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


# -- records ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StateOperatorProgress:
    """One stateful operator of a batch (Spark's ``StateOperatorProgress``)."""

    operator_name: str
    num_rows_total: int
    num_rows_updated: int
    num_rows_removed: int
    memory_used_bytes: int
    num_rows_dropped_by_watermark: int
    custom_metrics: dict[str, Any]

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> StateOperatorProgress:
        return cls(
            operator_name=str(d.get("operatorName") or ""),
            num_rows_total=_int(d.get("numRowsTotal")),
            num_rows_updated=_int(d.get("numRowsUpdated")),
            num_rows_removed=_int(d.get("numRowsRemoved")),
            memory_used_bytes=_int(d.get("memoryUsedBytes")),
            num_rows_dropped_by_watermark=_int(d.get("numRowsDroppedByWatermark")),
            custom_metrics=dict(d.get("customMetrics") or {}),
        )


@dataclass(frozen=True)
class KeyCounts:
    """User keys of an arbitrary-state job's batch (the record's top-level ``keys``)."""

    total: int | None
    updated: int
    removed: int
    expired: int

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> KeyCounts:
        total = d.get("total")
        return cls(
            total=_int(total) if total is not None else None,
            updated=_int(d.get("updated")),
            removed=_int(d.get("removed")),
            expired=_int(d.get("expired")),
        )


@dataclass(frozen=True)
class ProgressRecord:
    """A line of the log. :meth:`from_json` returns the subclass its kind calls for."""

    raw: dict[str, Any] = field(repr=False)
    name: str
    id: str
    run_id: str
    job: str
    logged_at: float | None  # when the runner wrote it, epoch seconds

    @property
    def time(self) -> float | None:
        """When it happened: Spark's ``timestamp`` (the trigger time), else when it was logged."""
        t = iso_seconds(self.raw.get("timestamp"))
        return self.logged_at if t is None else t

    @staticmethod
    def from_json(value: dict[str, Any] | str | bytes) -> ProgressRecord | None:
        """The record of a parsed or raw JSON line; None for a line that is no record."""
        if isinstance(value, bytes):
            # Bytes that are not UTF-8 (a torn write) spoil their field only, never the reader.
            value = value.decode("utf-8", "replace")
        if not isinstance(value, dict):
            try:
                value = json.loads(value)
            except ValueError:
                return None
            if not isinstance(value, dict):
                return None
        sk = value.get("statekeeper") or {}
        common: dict[str, Any] = {
            "raw": value,
            "name": str(value.get("name") or ""),
            "id": str(value.get("id") or ""),
            "run_id": str(value.get("runId") or ""),
            "job": str(sk.get("job") or "") if isinstance(sk, dict) else "",
            "logged_at": _num(sk.get("logged_at")) if isinstance(sk, dict) else None,
        }
        event = value.get("event")
        if event == IDLE:
            return IdleEvent(**common)
        if event == HEARTBEAT:
            return Heartbeat(
                **common, batch_running_seconds=_num(value.get("batch_running_seconds")) or 0.0
            )
        if event is not None:
            return None  # a kind this reader does not know: not a batch
        keys = value.get("keys")
        return BatchProgress(
            **common,
            batch_id=_int(value.get("batchId")),
            timestamp=str(value.get("timestamp") or ""),
            num_input_rows=_int(value.get("numInputRows")),
            input_rows_per_second=_num(value.get("inputRowsPerSecond")),
            processed_rows_per_second=_num(value.get("processedRowsPerSecond")),
            duration_ms={
                k: float(v)
                for k, v in (value.get("durationMs") or {}).items()
                if _num(v) is not None
            },
            event_time=dict(value.get("eventTime") or {}),
            state_operators=tuple(
                StateOperatorProgress.from_json(op)
                for op in value.get("stateOperators") or []
                if isinstance(op, dict)
            ),
            keys=KeyCounts.from_json(keys) if isinstance(keys, dict) else None,
            lag=dict(value.get("lag") or {}),
            sources=tuple(s for s in value.get("sources") or [] if isinstance(s, dict)),
        )


@dataclass(frozen=True)
class IdleEvent(ProgressRecord):
    """The query is caught up and waiting for data (Spark's ``onQueryIdle``, logged once a minute)."""


@dataclass(frozen=True)
class Heartbeat(ProgressRecord):
    """A batch is running, for this long: the driver is alive."""

    batch_running_seconds: float = 0.0


@dataclass(frozen=True)
class BatchProgress(ProgressRecord):
    """A micro-batch's ``StreamingQueryProgress``."""

    batch_id: int = -1
    timestamp: str = ""
    num_input_rows: int = 0
    input_rows_per_second: float | None = None
    processed_rows_per_second: float | None = None
    duration_ms: dict[str, float] = field(default_factory=dict)
    event_time: dict[str, str] = field(default_factory=dict)
    state_operators: tuple[StateOperatorProgress, ...] = ()
    keys: KeyCounts | None = None
    lag: dict[str, Any] = field(default_factory=dict)
    sources: tuple[dict[str, Any], ...] = ()

    def _ops(self, attr: str) -> int | None:
        if not self.state_operators:
            return None
        return sum(int(getattr(op, attr)) for op in self.state_operators)

    @property
    def state_rows(self) -> int | None:
        """Spark's state rows over the operators (hash buckets, for the batched executor)."""
        return self._ops("num_rows_total")

    @property
    def state_rows_removed(self) -> int | None:
        return self._ops("num_rows_removed")

    @property
    def state_memory_bytes(self) -> int | None:
        return self._ops("memory_used_bytes")

    @property
    def dropped_by_watermark(self) -> int | None:
        return self._ops("num_rows_dropped_by_watermark")

    @property
    def state_keys(self) -> int | None:
        """User keys held after the batch when the job counts them, else Spark's state rows."""
        if self.keys is not None and self.keys.total is not None:
            return self.keys.total
        return self.state_rows


# -- the log ---------------------------------------------------------------------------------------
def _records(lines: Iterator[bytes]) -> Iterator[ProgressRecord]:
    for line in lines:
        if line.strip():
            rec = ProgressRecord.from_json(line)
            if rec is not None:
                yield rec


def reverse_lines(path: Path, block: int = BLOCK) -> Iterator[bytes]:
    """The file's lines, last first, read in blocks from its end."""
    if not path.exists():
        return  # rotated away meanwhile
    with open(path, "rb") as fh:
        pos = fh.seek(0, os.SEEK_END)
        rest = b""
        while pos > 0:
            step = min(block, pos)
            pos -= step
            fh.seek(pos)
            lines = (fh.read(step) + rest).split(b"\n")
            rest = lines[0]  # may be the end of a line that starts in the block before
            yield from reversed(lines[1:])
        yield rest


def _read_from(path: Path, offset: int) -> tuple[bytes, int]:
    """The whole lines of ``path`` from ``offset``, and the offset after them (a line still being
    written waits for the next read)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except FileNotFoundError:
        return b"", offset
    end = data.rfind(b"\n") + 1
    return data[:end], offset + end


class ProgressLog:
    """The progress log of one checkpoint (local or mounted; a remote log is read whole)."""

    def __init__(self, checkpoint: str) -> None:
        self.checkpoint = checkpoint
        self.uri = log_uri(checkpoint)
        self.current = paths.local_path(self.uri)

    def files(self) -> list[Path]:
        """The files of a local log, oldest first: the rotated ones, then the current one."""
        if self.current is None:
            return []
        files = [rotated(self.current, n) for n in range(KEEP_ROTATED, 0, -1)] + [self.current]
        return [f for f in files if f.exists()]

    def _remote_lines(self) -> list[bytes]:
        import fsspec

        fs, p = fsspec.core.url_to_fs(self.uri)
        return fs.cat_file(p).split(b"\n") if fs.exists(p) else []

    def backwards(self) -> Iterator[ProgressRecord]:
        """Every record, newest first, across the rotated files."""
        if self.current is None:
            yield from reversed(list(_records(iter(self._remote_lines()))))
            return
        for f in reversed(self.files()):
            yield from _records(reverse_lines(f))

    def forwards(self) -> Iterator[ProgressRecord]:
        """Every record, oldest first, across the rotated files."""
        if self.current is None:
            yield from _records(iter(self._remote_lines()))
            return
        for f in self.files():
            data, _ = _read_from(f, 0)
            yield from _records(iter(data.split(b"\n")))

    def tail(
        self,
        n: int | None = None,
        *,
        since: float | None = None,
        until: float | None = None,
        kinds: tuple[type[ProgressRecord], ...] = (BatchProgress,),
    ) -> list[ProgressRecord]:
        """Up to ``n`` of the newest records of ``kinds`` with ``since <= time <= until``, oldest
        first. Records are appended in time order, so the read stops at the first one before
        ``since`` (or the ``n``-th found): a long history costs nothing."""
        out: list[ProgressRecord] = []
        if n is not None and n <= 0:
            return out
        for rec in self.backwards():
            t = rec.time
            if since is not None and t is not None and t < since:
                break
            if not isinstance(rec, kinds) or (until is not None and t is not None and t > until):
                continue
            out.append(rec)
            if n is not None and len(out) >= n:
                break
        out.reverse()
        return out

    def history(
        self, since: float | None = None, kinds: tuple[type[ProgressRecord], ...] = (BatchProgress,)
    ) -> Iterator[ProgressRecord]:
        """The records of ``kinds`` from ``since`` on (all without it), oldest first."""
        for rec in self.forwards():
            t = rec.time
            if isinstance(rec, kinds) and (since is None or t is None or t >= since):
                yield rec

    def follow(self, from_start: bool = False) -> Follower:
        """A reader of what is appended from now on (or from the start)."""
        return Follower(self, from_start)


class Follower:
    """Reads only what was appended since its last look, across a rotation: it remembers the
    current file's inode and offset; when the current file has been rotated, it finishes the
    file it was reading (now ``.1`` or older, found by inode) and reads the newer ones whole."""

    def __init__(self, log: ProgressLog, from_start: bool = False) -> None:
        self.log = log
        self._ino: int | None = None
        self._pos = 0
        # True after a read that lost track (the log was replaced, truncated, or rotated past
        # its last file between two looks) and so returned the whole log again.
        self.restarted = False
        if not from_start and log.current is not None:
            try:
                st = os.stat(log.current)
                self._ino, self._pos = st.st_ino, st.st_size
            except FileNotFoundError:
                pass

    def read_new(self) -> list[ProgressRecord]:
        """The records appended since the last call (every record of every kind), oldest first."""
        if self.log.current is None:
            return list(self.log.forwards())  # a remote log has no offsets: read whole
        files = self.log.files()
        stats = []
        for f in files:
            try:
                st = os.stat(f)
                stats.append((st.st_ino, st.st_size))
            except FileNotFoundError:
                stats.append((-1, 0))
        inodes = [ino for ino, _ in stats]
        self.restarted = False
        if self._ino in inodes and stats[inodes.index(self._ino)][1] >= self._pos:
            start = inodes.index(self._ino)
        else:  # a new log, or ours was truncated or rotated out of reach: read all there is
            self.restarted = self._ino is not None
            start, self._pos = 0, 0
        chunks: list[bytes] = []
        for i in range(start, len(files)):
            data, end = _read_from(files[i], self._pos if i == start else 0)
            chunks.append(data)
            self._ino, self._pos = inodes[i], end
        return list(_records(iter(b"".join(chunks).split(b"\n"))))
