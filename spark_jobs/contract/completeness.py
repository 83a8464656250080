"""Completeness of event-time partitions: the rule, the partition keys and the ledgers.

A partition is an hour (or a day, ``completeness: daily``) of a job's ``time_column``. Once the
watermark of a committed batch has reached the partition's end plus the job's settling time
(``JobDef.settles_after``: how far past a row's time the watermark must be before that row is
written, e.g. the session gap), no row of that partition can still be written: it is complete.

The Spark side appends what became complete to ``_statekeeper/completeness.jsonl`` (one entry
per batch that completed something, written before the batch's progress line); a ``publish``
that replaced rows appends the partitions it changed to ``recompletions.jsonl``. The Airflow
side reads both here, without Spark, and emits one asset event per key. Every entry carries the
ledger's id (from its first entry) and its sequence number, so the emitter can tell what it
already emitted from the events themselves (a new checkpoint is a new ledger).

Each entry's ``through`` is cumulative: the next entry starts where the last one ended, so a
batch whose entry was lost (a kill between the commit and the entry) is covered by the next
batch's, and a batch run again derives the same ``through`` and adds nothing.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from spark_jobs.contract import paths

GRAIN_SECONDS = {"hourly": 3600, "daily": 86400}  # spec.COMPLETENESS's grains
# A partition's key is its start (UTC) in the format Airflow's temporal partition mappers read
# by default (StartOfHourMapper, StartOfDayMapper, RollupMapper), so consumers can roll it up.
KEY_FORMAT = "%Y-%m-%dT%H:%M:%S"
LEDGERS = (paths.COMPLETENESS_FILE, paths.RECOMPLETIONS_FILE)


@dataclass(frozen=True)
class Entry:
    """One ledger line: the partitions (keys, oldest first) one batch or publish completed."""

    ledger: str  # the ledger's id, fixed by its first entry
    seq: int  # 0, 1, 2 ... in the ledger
    keys: tuple[str, ...]
    through: float = 0.0  # epoch seconds: every partition ending at or before it is complete
    batch_id: int | None = None  # the committed batch (completeness.jsonl)
    watermark: float | None = None  # that batch's watermark, epoch seconds
    version: int | None = None  # the Delta version a publish wrote (recompletions.jsonl)
    publish_key: str | None = None  # that publish's key: one entry per publish
    written_at: float = field(default=0.0, compare=False)


def partition_key(start: float) -> str:
    return datetime.fromtimestamp(start, UTC).strftime(KEY_FORMAT)


def key_start(key: str) -> float:
    return datetime.strptime(key, KEY_FORMAT).replace(tzinfo=UTC).timestamp()


def floor(t: float, grain: str) -> float:
    g = GRAIN_SECONDS[grain]
    return t - t % g


def complete_through(watermark: float, settles_after: float, grain: str) -> float:
    """The end of the newest complete partition: partitions ending at or before it are done."""
    return floor(watermark - settles_after, grain)


def keys_between(start: float, end: float, grain: str) -> tuple[str, ...]:
    """The keys of the partitions in [start, end), oldest first (start is a partition's)."""
    g = GRAIN_SECONDS[grain]
    n = max(0, int((end - start) // g))
    return tuple(partition_key(start + i * g) for i in range(n))


def keys_covering(lo: float, hi: float, grain: str) -> tuple[str, ...]:
    """The keys of the partitions holding any instant of [lo, hi]."""
    return keys_between(floor(lo, grain), floor(hi, grain) + GRAIN_SECONDS[grain], grain)


def newly_complete(
    last: Entry | None, origin: float | None, watermark: float, settles_after: float, grain: str
) -> tuple[float, tuple[str, ...]] | None:
    """(through, new keys) after a batch with ``watermark``, or None when nothing changed.

    ``origin`` (the oldest event time the job has seen) starts a new ledger: the first partition
    is the one holding it. Spark drops events at or below the watermark, so no later event can
    fall before min(origin, watermark)."""
    through = complete_through(watermark, settles_after, grain)
    if last is None:
        if origin is None or watermark <= 0:
            return None  # no event yet, or no watermark yet (the first batch)
        start = floor(min(origin, watermark), grain)
        return max(start, through), keys_between(start, through, grain)
    if through <= last.through:
        return None
    return through, keys_between(last.through, through, grain)


def ledger_path(checkpoint: str, ledger: str = paths.COMPLETENESS_FILE) -> Path | None:
    local = paths.local_path(paths.join(paths.statekeeper_dir(checkpoint), ledger))
    return local


def read(checkpoint: str, ledger: str = paths.COMPLETENESS_FILE) -> list[Entry]:
    """The ledger's entries, oldest first ([] when none). A last line cut by a kill is skipped
    (:func:`append` cuts it off before writing the next one)."""
    path = ledger_path(checkpoint, ledger)
    if path is None or not path.exists():
        return []
    out = []
    for line in path.read_bytes().decode("utf-8", "replace").splitlines():
        try:
            raw = json.loads(line)
        except ValueError:
            continue
        out.append(Entry(**{**raw, "keys": tuple(raw["keys"])}))
    return out


def append(
    checkpoint: str,
    keys: tuple[str, ...],
    ledger: str = paths.COMPLETENESS_FILE,
    **fields: float | int | str | None,
) -> Entry:
    """Add one entry (synced to disk before returning: an entry once seen is never lost)."""
    path = ledger_path(checkpoint, ledger)
    if path is None:
        raise ValueError(f"completeness ledgers are kept on local checkpoints only: {checkpoint}")
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = read(checkpoint, ledger)
    ledger_id = entries[0].ledger if entries else uuid.uuid4().hex[:12]
    entry = Entry(ledger=ledger_id, seq=len(entries), keys=keys, **fields)  # type: ignore[arg-type]
    entry = Entry(**{**asdict(entry), "written_at": datetime.now(UTC).timestamp()})
    line = json.dumps(asdict(entry), separators=(",", ":")) + "\n"
    with open(path, "ab+") as fh:
        _cut_torn_tail(fh)
        fh.write(line.encode())
        fh.flush()
        os.fsync(fh.fileno())
    return entry


def _cut_torn_tail(fh) -> None:  # type: ignore[no-untyped-def]
    """Drop a last line a kill left without its newline, so the next entry starts a line."""
    size = fh.seek(0, os.SEEK_END)
    if size == 0:
        return
    fh.seek(0)
    data = fh.read()
    if data.endswith(b"\n"):
        return
    fh.truncate(data.rfind(b"\n") + 1)
    fh.seek(0, os.SEEK_END)


def pending(entries: list[Entry], ledger_id: str | None, emitted_seq: int | None) -> list[Entry]:
    """The entries not yet emitted: all of a ledger never emitted from, else those past
    ``emitted_seq`` (the highest sequence number the emitted events carry)."""
    if not entries:
        return []
    if ledger_id != entries[0].ledger or emitted_seq is None:
        return list(entries)
    return [e for e in entries if e.seq > emitted_seq]
