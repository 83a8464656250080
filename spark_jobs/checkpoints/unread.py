"""Landing files a job never read: each landing folder's files against the file source's log.

Spark's file source logs every file it reads under ``<checkpoint>/sources/<i>/``: after a
``v1`` line, one JSON line per file (``{"path": URL-encoded URL, "timestamp": mtime, "batchId"}``)
in delta files ``N`` and, every 10th, a compact file ``N.compact`` that repeats every entry before
it (the source log never drops an entry). A landing file in no log was not read.

A file that arrived after the newest batch was planned is only pending (the next batch reads it),
so a file counts as unread only when it was there, by its arrival time, ``SETTLE_SECONDS`` before
the newest batch's timestamp. Its arrival time is the later of its mtime and, on a local disk,
its ctime: ``cp -p`` or ``touch -d`` set an old mtime, but the kernel sets the ctime to the moment
the file was created, renamed into place or touched. An object store's mtime is its upload time.

Files only, no Spark: ``checkpoint validate`` warns with the count and a few names, and the
health page shows the count.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

from spark_jobs.checkpoints.files import filesystem, read_text
from spark_jobs.checkpoints.layout import (
    SOURCE_LOG_NAME,
    Layout,
    read_layout,
)
from spark_jobs.contract import paths

# Between Spark listing the folder and stamping the batch, and the landing store's clock against
# the driver's: a file newer than this before the newest batch may simply be the next batch's.
SETTLE_SECONDS = 60.0
EXAMPLES = 3  # names a report shows

# A compressed landing file (``.json.gz``) counts for this many times its size in
# :func:`pending_bytes`: the work is the JSON text, which gzip shrinks about eightfold.
COMPRESSED_TEXT = 8


def shown(names: list[str]) -> str:
    """The first :data:`EXAMPLES` of ``names``, and how many more there are."""
    more = f" and {len(names) - EXAMPLES} more" if len(names) > EXAMPLES else ""
    return ", ".join(names[:EXAMPLES]) + more


@dataclass(frozen=True)
class Unread:
    """Landing files the job did not read though they were there before its newest batch."""

    files: list[str]  # full paths, sorted
    batch: int  # the newest batch, the one they were there before

    def describe(self) -> str:
        names = shown([os.path.basename(f) for f in self.files])
        return (
            f"{len(self.files)} landing file(s) were there before batch {self.batch} and are in "
            f"no file source log: {names}"
        )


def file_key(url_or_path: str) -> str:
    """One spelling of a file for both sides: a local path, or ``bucket/key`` of a store."""
    u = urlparse(url_or_path)
    if u.scheme in ("", "file"):
        return os.path.abspath(unquote(u.path))
    return unquote(u.netloc + u.path)


@dataclass
class SourceLog:
    """What the file sources logged: every file read, and how many each source's newest log
    batch read (a full batch means the source may still have a backlog to read)."""

    files: set[str] = field(default_factory=set)  # keys as :func:`file_key` spells them
    listed_ms: dict[str, float | None] = field(default_factory=dict)  # key -> mtime when listed
    newest_batch_files: list[int] = field(default_factory=list)  # per source


def source_log_files(lay: Layout) -> dict[str, list[tuple[int, str]]]:
    """Per file source, the log files that hold its entries, oldest first, as (log batch,
    relative path): the newest compact file (which repeats every entry before it) and the delta
    files after it."""
    logs: dict[str, dict[int, str]] = {}  # source -> log batch -> relative path
    compact: dict[str, int] = {}
    for rel in lay.files:
        parts = rel.split("/")
        m = SOURCE_LOG_NAME.match(parts[-1]) if len(parts) == 3 and parts[0] == "sources" else None
        if m is None or parts[-1].startswith(".") or m.group(3):
            continue
        n = int(m.group(1))
        logs.setdefault(parts[1], {})[n] = rel
        if m.group(2):
            compact[parts[1]] = max(compact.get(parts[1], -1), n)
    return {
        src: [(n, batches[n]) for n in sorted(b for b in batches if b >= compact.get(src, -1))]
        for src, batches in logs.items()
    }


def files_read(lay: Layout, upto: dict[str, int] | None = None) -> SourceLog:
    """Every file the checkpoint's file sources logged; with ``upto`` (source -> log batch, as a
    batch's end offsets give it), only those logged at or before it: what the batches up to that
    one read, not what a batch planned after it lists."""
    out = SourceLog()
    for src, rels in source_log_files(lay).items():
        newest = rels[-1][0]
        in_newest = 0
        for _n, rel in rels:
            for entry in log_entries(read_text(lay.uri, rel)):
                if _after(entry.batch, (upto or {}).get(src)):
                    continue
                out.files.add(file_key(entry.path))
                out.listed_ms[file_key(entry.path)] = entry.listed_ms
                in_newest += entry.batch == newest
        out.newest_batch_files.append(in_newest)
    return out


def log_ends(lay: Layout, batch: int) -> dict[str, int] | None:
    """Source -> the log batch its file source had reached at the end of ``batch`` (the
    ``upto`` of :func:`files_read`); None when ``batch``'s offsets were not read."""
    ends = lay.offset_sources.get(batch)
    if ends is None:
        return None
    return {
        str(i): int(end["logOffset"])
        for i, end in enumerate(ends)
        if isinstance(end, dict) and isinstance(end.get("logOffset"), int)
    }


def _after(batch: int | None, upto: int | None) -> bool:
    """A log entry of a batch past ``upto`` (an entry naming no batch is kept)."""
    return batch is not None and upto is not None and batch > upto


@dataclass(frozen=True)
class LogEntry:
    """One file entry of a file-source log."""

    path: str  # URL-encoded URL, as Spark wrote it
    batch: int | None  # the source log batch that listed it
    listed_ms: float | None  # its modification time when listed


def log_entries(text: str) -> list[LogEntry]:
    """The file entries of one source log file, after its version line; a line that is not a
    file entry (a Kafka source's initial offsets share the folder layout) is skipped."""
    out = []
    for line in text.split("\n")[1:]:
        if not line.strip().startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        path = value.get("path") if isinstance(value, dict) else None
        if not isinstance(path, str):
            continue
        batch, ts = value.get("batchId"), value.get("timestamp")
        out.append(
            LogEntry(
                path,
                batch if isinstance(batch, int) else None,
                float(ts) if isinstance(ts, int | float) else None,
            )
        )
    return out


def landing_files(uri: str) -> dict[str, float]:
    """The files of a landing folder the job is meant to read, with their arrival times: every
    file under it, hidden names (``.``/``_``, which Spark never reads) left out."""
    local = paths.local_path(uri)
    out: dict[str, float] = {}
    if local is not None:
        for folder, dirs, names in os.walk(local):
            dirs[:] = [d for d in dirs if not paths.hidden_name(d)]
            for name in names:
                if paths.hidden_name(name):
                    continue
                full = os.path.join(folder, name)
                try:
                    st = os.stat(full)
                except FileNotFoundError:
                    continue  # removed since the folder was read
                out[file_key(full)] = max(st.st_mtime, st.st_ctime)
        return out
    fs, root = filesystem(uri)
    if not fs.exists(root):
        return out
    for full, info in fs.find(root, detail=True).items():
        rel = full[len(root) :].lstrip("/")
        if any(paths.hidden_name(p) for p in rel.split("/")):
            continue
        mtime = info.get("mtime") or info.get("LastModified") or info.get("created") or 0
        out[file_key(full)] = float(mtime.timestamp() if hasattr(mtime, "timestamp") else mtime)
    return out


def pending_bytes(inputs: Iterable[str], lay: Layout) -> int | None:
    """The size of what a run of this checkpoint has left to read: the files a local landing
    folder holds for the file source (its own files named ``LANDING_GLOB``) that no source log
    names, a compressed one at :data:`COMPRESSED_TEXT` times its size. None when it cannot say
    cheaply: a Kafka topic (the broker knows its lag) or a store (Spark lists it; not twice)."""
    folders = [paths.local_path(u) for u in inputs]  # None: a topic's or a store's URI
    if any(f is None for f in folders):
        return None
    read = files_read(lay).files
    total = 0
    for local in folders:
        if local is None or not local.is_dir():
            continue
        with os.scandir(local) as entries:
            for e in entries:
                if not paths.landing_file(e.name) or file_key(e.path) in read:
                    continue
                try:
                    size = e.stat().st_size if e.is_file() else 0
                except FileNotFoundError:
                    continue  # moved away since the folder was listed
                total += size * (1 if e.name.endswith(".json") else COMPRESSED_TEXT)
    return total


def never_read(uri: str) -> list[str]:
    """What a local landing folder holds that the file source never reads, however many batches
    run: files not named ``LANDING_GLOB`` (``events.ndjson``, ``readme.txt``) and subfolders (it
    reads the folder's own files). Hidden names are Spark's and ``generate``'s own temp files.
    Names, sorted, a folder with a trailing ``/``; [] for a store (Spark lists it; not twice)."""
    local = paths.local_path(uri)
    if local is None or not local.is_dir():
        return []
    out = []
    with os.scandir(local) as entries:
        for e in entries:
            if paths.hidden_name(e.name):
                continue
            if e.is_dir():
                out.append(e.name + "/")
            elif not paths.landing_file(e.name):
                out.append(e.name)
    return sorted(out)


def never_read_line(uri: str, job: str) -> str | None:
    """The run's one warning line for :func:`never_read` (None: nothing to say)."""
    names = never_read(uri)
    if not names:
        return None
    return (
        f"statekeeper: job {job} never reads {len(names)} entr{'y' if len(names) == 1 else 'ies'} "
        f"of landing folder {uri}: {shown(names)} (it reads files named {paths.LANDING_GLOB} in the "
        f"folder itself, with none of {' '.join(paths.UNREADABLE_NAME_CHARS)} in the name; rename "
        "or move them there)"
    )


def unread(
    checkpoint: str,
    inputs: Iterable[str],
    lay: Layout | None = None,
    files_per_batch: int | None = None,
) -> Unread | None:
    """The landing files of ``inputs`` (folders; Kafka URIs are skipped) that the checkpoint's
    newest batch should have seen and no file source logged; None when there are none, when the
    checkpoint has planned no batch yet, or when a source's newest batch read
    ``files_per_batch`` files (the job's limit): it is then working through a backlog, and the
    files it has not read yet are pending, not unread."""
    from spark_jobs.contract.kafka import is_kafka

    folders = [u for u in inputs if not is_kafka(u)]
    lay = lay or read_layout(checkpoint, parse_tail=1, sizes=False)
    last = lay.last_offset
    stamp = (lay.offset_meta.get(last) or {}).get("batchTimestampMs") if last is not None else None
    if not folders or last is None or not isinstance(stamp, int | float):
        return None
    before = stamp / 1000 - SETTLE_SECONDS
    landed = {k: t for u in folders for k, t in landing_files(u).items() if t <= before}
    if not landed:
        return None
    log = files_read(lay)
    if files_per_batch and any(n >= files_per_batch for n in log.newest_batch_files):
        return None
    missed = sorted(k for k in landed if k not in log.files)
    return Unread(missed, last) if missed else None


def count(checkpoint: str, inputs: Iterable[str], files_per_batch: int | None = None) -> int:
    """How many landing files the job never read (:func:`unread`); 0 when it cannot say. A
    running job's cleanup can remove a source log between the listing and its read: the count
    then lists again, once (the health page asks on every refresh)."""
    for last in (False, True):
        try:
            found = unread(checkpoint, inputs, files_per_batch=files_per_batch)
        except FileNotFoundError:
            if last:
                return 0
            continue
        return len(found.files) if found else 0
    raise AssertionError("the second look returns")


def planned_but_gone(lay: Layout) -> list[str]:
    """Local landing files that a batch not yet committed planned to read and that are gone
    since (moved away after a failed read, deleted by hand): Spark re-runs the batch from its
    plan, skips them without a word, and counts their names as read from then on. Sorted full
    paths; [] when every batch committed, or when the newest committed batch's end offsets
    were not read (nothing is said rather than a guess)."""
    if not lay.uncommitted:
        return []
    last = lay.last_committed
    upto = log_ends(lay, last) if last is not None else {}
    if upto is None:
        return []
    planned = {  # logged after the newest committed batch's end (all of it before any commit)
        file_key(e.path)
        for src, rels in source_log_files(lay).items()
        for _n, rel in rels
        for e in log_entries(read_text(lay.uri, rel))
        if last is None or _after(e.batch, upto.get(src))
    }
    return sorted(f for f in planned if os.path.isabs(f) and not os.path.exists(f))


def gone_line(lay: Layout, job: str) -> str | None:
    """The run's one warning line for :func:`planned_but_gone` (None: nothing to say)."""
    gone = planned_but_gone(lay)
    if not gone:
        return None
    return (
        f"statekeeper: job {job} re-runs batch {lay.uncommitted[0]} without {len(gone)} landing "
        f"file(s) it planned to read and that are gone since: {shown(gone)}; none of their lines is "
        "read, and their names count as read: land them again under new names to have them read"
    )
