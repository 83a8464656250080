"""The one reader of a Delta table's state, from its ``_delta_log`` alone: no Spark, no Airflow.

The Spark driver (the batch writer's table checks, a run's row counts, the new-checkpoint guard,
rollback and restore), the quality runner, ``publish`` and the health page all read here. Local
paths and fsspec URLs alike.

The log is read by hand rather than with ``deltalake``: what callers need is per commit (which
``txn(appId, version)`` a commit recorded, its ``commitInfo`` metrics and user metadata, the files
it added) and the newest txn of *every* app id, none of which ``deltalake.DeltaTable`` hands out
(it has ``transaction_version(app_id)`` for an app id you already know, and ``history()``);
opening a ``DeltaTable`` also replays the table's whole snapshot, where these reads list one
folder and open a few small files.

The log's layout: commit ``N`` is ``NNNNNNNNNNNNNNNNNNNN.json``, one action per line; a Delta
checkpoint ``N.checkpoint[.*].parquet`` keeps, among the rest, the newest ``txn`` of every app id
once the JSON commits it covers are cleaned up (log retention).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from urllib.parse import unquote

from spark_jobs.contract import paths

LOG_DIR = "_delta_log"
_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(?:\.[^/]+)?\.(parquet|json)$")


# Operations of table care (``table maintain``, a hand-written VACUUM or property change): they
# leave the rows as they were (``Commit.changes_rows`` checks each commit's actions).
PROPERTY_OPERATIONS = ("SET TBLPROPERTIES", "UNSET TBLPROPERTIES")
MAINTENANCE_OPERATIONS = ("OPTIMIZE", "VACUUM START", "VACUUM END", *PROPERTY_OPERATIONS)


def log_uri(table: str) -> str:
    """The table's ``_delta_log`` folder."""
    return paths.join(table, LOG_DIR)


class _Local:
    """The few file operations this module needs, on a local disk without fsspec's per-path
    overhead (it stats and normalises every name it lists): the health page lists logs of
    thousands of commits on each request."""

    @staticmethod
    def isdir(path: str) -> bool:
        return os.path.isdir(path)

    @staticmethod
    def names(path: str) -> list[str]:
        with os.scandir(path) as it:
            return [e.name for e in it]

    @staticmethod
    def cat_file(path: str) -> bytes:
        with open(path, "rb") as fh:
            return fh.read()

    @staticmethod
    def open(path: str, mode: str) -> Any:
        return open(path, mode)


def _log(table: str) -> tuple[Any, str]:
    """(file system, log folder): local paths and ``file:`` URIs on the disk, the rest fsspec."""
    local = paths.local_path(log_uri(table))
    if local is not None:
        return _Local(), str(local)
    import fsspec

    fs, log = fsspec.core.url_to_fs(log_uri(table))
    return fs, str(log).rstrip("/")


def exists(table: str) -> bool:
    """Whether ``table`` is a Delta table (has a ``_delta_log`` folder)."""
    fs, log = _log(table)
    return bool(fs.isdir(log))


def _names(fs: Any, log: str) -> list[str] | None:
    """File names in the log folder; None when there is none."""
    if not fs.isdir(log):
        return None
    if isinstance(fs, _Local):
        return fs.names(log)
    return [str(p).rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(log, detail=False)]


def _versions(names: list[str]) -> list[int]:
    return sorted(int(m.group(1)) for m in map(_COMMIT.match, names) if m)


def versions(table: str) -> list[int]:
    """Versions whose JSON commit is still in the log, oldest first ([] when no table)."""
    fs, log = _log(table)
    return _versions(_names(fs, log) or [])


def version(table: str) -> int | None:
    """The table's latest version, from the log's file names; None when there is no table."""
    return max(versions(table), default=None)


@dataclass(frozen=True)
class Commit:
    """One version's JSON commit. Parsed on demand, and only the lines asked for: a commit that
    added many files has many long ``add`` lines that most questions never need."""

    version: int
    lines: tuple[str, ...] = field(repr=False)

    @cached_property
    def actions(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines if line.strip()]

    @cached_property
    def info(self) -> dict[str, Any]:
        """The ``commitInfo`` action ({} when there is none)."""
        for line in self.lines:
            if '"commitInfo"' in line:
                info = json.loads(line).get("commitInfo")
                if isinstance(info, dict):
                    return info
        return {}

    @cached_property
    def txns(self) -> dict[str, int]:
        """App id -> the batch id (``txn.version``) this commit recorded for it."""
        out: dict[str, int] = {}
        for line in self.lines:
            if '"txn"' in line:
                txn = json.loads(line).get("txn")
                if isinstance(txn, dict) and txn.get("appId") is not None:
                    out[str(txn["appId"])] = int(txn.get("version", -1))
        return out

    @property
    def operation(self) -> str:
        return str(self.info.get("operation") or "")

    @property
    def parameters(self) -> dict[str, Any]:
        return dict(self.info.get("operationParameters") or {})

    @property
    def metrics(self) -> dict[str, Any]:
        return dict(self.info.get("operationMetrics") or {})

    @property
    def user_metadata(self) -> str:
        return str(self.info.get("userMetadata") or "")

    @property
    def rows_written(self) -> int:
        """Rows this commit appended, inserted or updated (its ``commitInfo`` metrics). A
        MERGE's ``numOutputRows`` counts every row of the files it rewrote (the updated ones
        again, and the unchanged ones it copied), so a MERGE counts inserted and updated."""
        m = self.metrics
        merge = ("numTargetRowsInserted", "numTargetRowsUpdated")
        keys = merge if any(k in m for k in merge) else ("numOutputRows",)
        return sum(int(m.get(k) or 0) for k in keys)

    @cached_property
    def changes_rows(self) -> bool:
        """Whether this commit changed the table's rows or schema: an ``add``, ``remove`` or
        ``cdc`` with ``dataChange``, or a ``metaData`` other than a table-property change. A
        compaction, a VACUUM's START/END and a property change do not: going back to before
        them gives the same rows."""
        for a in self.actions:
            for kind in ("add", "remove"):
                if kind in a and a[kind].get("dataChange", True):
                    return True
            if "cdc" in a or "protocol" in a:
                return True
            if "metaData" in a and self.operation not in PROPERTY_OPERATIONS:
                return True
        return False

    def added(self) -> list[dict[str, Any]]:
        """The ``add`` actions that changed data (not a compaction's rewrites)."""
        out = []
        for line in self.lines:
            if '"add"' in line:
                add = json.loads(line).get("add")
                if isinstance(add, dict) and add.get("dataChange", True):
                    out.append(add)
        return out


def _read(fs: Any, log: str, v: int) -> Commit | None:
    try:
        text = fs.cat_file(f"{log}/{v:020d}.json").decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None  # removed by log cleanup (retention) after the listing
    return Commit(v, tuple(text.splitlines()))


def commit(table: str, v: int) -> Commit | None:
    """Version ``v``'s commit, or None when its JSON file is not (or no longer) in the log."""
    fs, log = _log(table)
    return _read(fs, log, v)


def commits(table: str, after: int | None = None, newest: int | None = None) -> list[Commit]:
    """The JSON commits still in the log, oldest first: only versions after ``after``, only the
    ``newest`` n of them. Reads just those files."""
    fs, log = _log(table)
    vs = [v for v in _versions(_names(fs, log) or []) if after is None or v > after]
    if newest is not None:
        vs = vs[-newest:] if newest > 0 else []
    return [c for c in (_read(fs, log, v) for v in vs) if c]


def added_files(table: str, c: Commit) -> list[str]:
    """Full paths of the data files ``c`` added (files named by absolute URL are left out)."""
    local = paths.local_path(table)
    return [
        str(local / unquote(a["path"])) if local else paths.join(table, unquote(a["path"]))
        for a in c.added()
        if isinstance(a.get("path"), str) and "://" not in a["path"]
    ]


def added_records(c: Commit) -> int | None:
    """Rows in the data files ``c`` added, from their statistics; None when one has none."""
    total = 0
    for a in c.added():
        stats = json.loads(a.get("stats") or "{}")
        if "numRecords" not in stats:
            return None
        total += int(stats["numRecords"])
    return total


def rows_written_after(table: str, after: int | None) -> tuple[int, int | None]:
    """(rows appended, inserted or updated by the commits after version ``after``, the latest
    version): only those commits are read, never the table's older history."""
    fs, log = _log(table)
    vs = _versions(_names(fs, log) or [])
    cs = [c for c in (_read(fs, log, v) for v in vs if after is None or v > after) if c]
    return sum(c.rows_written for c in cs), max(vs, default=None)


# -- exactly-once bookkeeping --------------------------------------------------------------------
@dataclass
class TxnLog:
    """What the log says of its writers: the newest batch id per txn app id (JSON commits and
    the newest Delta checkpoint), and the JSON commits read."""

    exists: bool
    latest: dict[str, int]  # app id -> highest batch id recorded
    commits: list[Commit]  # oldest first
    checkpoint_version: int | None = None

    @property
    def version(self) -> int | None:
        if self.commits:
            return self.commits[-1].version
        return self.checkpoint_version

    def first_version_after(self, apps: tuple[str, ...], batch: int) -> int | None:
        """The first version that recorded a batch after ``batch`` for one of ``apps``."""
        return next(
            (c.version for c in self.commits if any(c.txns.get(a, -1) > batch for a in apps)),
            None,
        )

    def version_of_batch(self, apps: tuple[str, ...], batch: int) -> int | None:
        """The (last) version whose commit recorded ``batch`` for one of ``apps``."""
        found = None
        for c in self.commits:
            if any(c.txns.get(a) == batch for a in apps):
                found = c.version
        return found


def txn_log(table: str, every_commit: bool = True) -> TxnLog:
    """The table's txn bookkeeping; ``exists`` is False when there is no ``_delta_log``.

    ``every_commit=False`` reads only the commits after the newest Delta checkpoint: enough for
    ``latest`` (what a run's guard needs), not for ``commits``."""
    fs, log = _log(table)
    names = _names(fs, log)
    if names is None:
        return TxnLog(exists=False, latest={}, commits=[])
    cps: dict[int, list[str]] = {}
    for n in names:
        m = _CHECKPOINT.match(n)
        if m:
            cps.setdefault(int(m.group(1)), []).append(n)
    latest: dict[str, int] = {}
    cp_version = max(cps) if cps else None
    if cp_version is not None:
        for n in cps[cp_version]:
            for app, batch in _checkpoint_txns(fs, f"{log}/{n}"):
                latest[app] = max(latest.get(app, -1), batch)
    out = []
    for v in _versions(names):
        if not every_commit and cp_version is not None and v <= cp_version:
            continue
        c = _read(fs, log, v)
        if c is None:
            continue
        out.append(c)
        if cp_version is None or v > cp_version:
            for app, batch in c.txns.items():
                latest[app] = max(latest.get(app, -1), batch)
    return TxnLog(exists=True, latest=latest, commits=out, checkpoint_version=cp_version)


def _checkpoint_txns(fs: Any, path: str) -> list[tuple[str, int]]:
    if path.endswith(".json"):  # a V2 checkpoint's top file: one action per line
        return list(Commit(-1, tuple(fs.cat_file(path).decode("utf-8").splitlines())).txns.items())
    import pyarrow.parquet as pq

    with fs.open(path, "rb") as fh:
        pf = pq.ParquetFile(fh)
        if "txn" not in pf.schema_arrow.names:
            return []
        col = pf.read(columns=["txn"]).column("txn").to_pylist()
    return [(str(t["appId"]), int(t["version"])) for t in col if t and t.get("appId") is not None]


# -- table size ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class FileStats:
    """The data files of a table's latest version (what a reader opens)."""

    files: int
    bytes: int

    @property
    def average_bytes(self) -> int:
        return self.bytes // self.files if self.files else 0

    def to_dict(self) -> dict[str, int]:
        return {"files": self.files, "bytes": self.bytes, "average_bytes": self.average_bytes}


def live_files(table: str) -> FileStats | None:
    """Files and bytes of the latest version, read with ``deltalake`` (a snapshot replay: the
    log's last checkpoint and the commits after it); None when there is no table."""
    if not exists(table):
        return None
    from deltalake import DeltaTable

    adds = DeltaTable(table).get_add_actions(flatten=True)
    sizes = [int(s) for s in adds.column("size_bytes").to_pylist()] if adds.num_rows else []
    return FileStats(len(sizes), int(sum(sizes)))
