"""A Delta table's exactly-once bookkeeping, read from ``_delta_log`` without a JVM.

Every idempotent writer records ``txn(appId, version)`` in the commit that wrote its batch:
Delta's streaming sink uses the checkpoint's query id and the batch id, our ``foreachBatch``
writers use ``txnAppId``/``txnVersion`` with an app id derived from the same query id. Delta
then skips a batch id at or below the one it has recorded for that app id. The commits
(``NNN.json``) say which version recorded which batch; a Delta checkpoint
(``NNN.checkpoint[.*].parquet``) keeps the newest ``txn`` of every app id after the JSON files
it covers are cleaned up (log retention), so both are read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from spark_jobs.contract.errors import UserError

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(?:\.[^/]+)?\.(parquet|json)$")


def app_ids(query_id: str) -> tuple[str, ...]:
    """The txn app ids a query with this checkpoint id writes under: the id itself (Delta's
    sink, or a ``foreachBatch`` writer keyed on it) and ``statekeeper-<id>`` (our MERGE)."""
    return (query_id, f"statekeeper-{query_id}")


@dataclass(frozen=True)
class Commit:
    """One table version still in the JSON log: its txns and what it did."""

    version: int
    txns: dict[str, int]  # app id -> batch id
    operation: str
    parameters: dict[str, Any]


@dataclass
class TxnLog:
    """What the log says: the newest batch per app id, and the JSON commits still on disk."""

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
        found = None
        for c in self.commits:
            if any(c.txns.get(a) == batch for a in apps):
                found = c.version
        return found


def _fs(table: str) -> tuple[Any, str]:
    from spark_jobs.checkpoints.layout import filesystem

    return filesystem(table)


def read_txn_log(table: str, every_commit: bool = True) -> TxnLog:
    """The table's txn bookkeeping; ``exists`` is False when there is no ``_delta_log``.

    ``every_commit=False`` reads only the commits after the newest Delta checkpoint: enough for
    ``latest`` (what a run's guard needs), not for ``commits``."""
    fs, root = _fs(table)
    log = f"{root}/_delta_log"
    if not fs.exists(log):
        return TxnLog(exists=False, latest={}, commits=[])
    names = [p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(log, detail=False)]
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
    commits = []
    for n in sorted(n for n in names if _COMMIT.match(n)):
        version = int(n[:20])
        if not every_commit and cp_version is not None and version <= cp_version:
            continue
        commit = _read_commit(fs, f"{log}/{n}", version)
        commits.append(commit)
        if cp_version is None or version > cp_version:
            for app, batch in commit.txns.items():
                latest[app] = max(latest.get(app, -1), batch)
    return TxnLog(exists=True, latest=latest, commits=commits, checkpoint_version=cp_version)


def _read_commit(fs: Any, path: str, version: int) -> Commit:
    txns: dict[str, int] = {}
    operation, params = "", {}
    for line in fs.cat_file(path).decode("utf-8").splitlines():
        if '"txn"' in line:
            txn = json.loads(line).get("txn") or {}
            txns[str(txn.get("appId"))] = int(txn.get("version", -1))
        elif '"commitInfo"' in line:
            info = json.loads(line).get("commitInfo") or {}
            operation = str(info.get("operation") or "")
            params = dict(info.get("operationParameters") or {})
    return Commit(version, txns, operation, params)


def _checkpoint_txns(fs: Any, path: str) -> list[tuple[str, int]]:
    if path.endswith(".json"):  # a V2 checkpoint's top file: one action per line
        out = []
        for line in fs.cat_file(path).decode("utf-8").splitlines():
            if '"txn"' in line:
                txn = json.loads(line).get("txn") or {}
                out.append((str(txn.get("appId")), int(txn.get("version", -1))))
        return out
    import pyarrow.parquet as pq

    with fs.open(path, "rb") as fh:
        pf = pq.ParquetFile(fh)
        if "txn" not in pf.schema_arrow.names:
            return []
        col = pf.read(columns=["txn"]).column("txn").to_pylist()
    return [(str(t["appId"]), int(t["version"])) for t in col if t and t.get("appId") is not None]


def delta_version_of_batch(table: str, apps: list[str], batch: int) -> int | None:
    """The table version whose commit recorded ``txn`` (one of ``apps``, ``batch``), if any."""
    return read_txn_log(table).version_of_batch(tuple(apps), batch)


def version_before_batch(table: str, query_id: str, batch: int) -> tuple[int | None, TxnLog]:
    """The table version to go back to so that every batch after ``batch`` of this query is
    written again: the version just before the first commit that recorded one (None: no such
    commit, the table has nothing to undo). Refused when the JSON commits that would say are
    gone (log retention) or when a later commit was not this query's (restoring would undo it).
    """
    log = read_txn_log(table)
    if not log.exists:
        return None, log
    apps = app_ids(query_id)
    first = log.first_version_after(apps, batch)
    if first is None:
        if any(log.latest.get(a, -1) > batch for a in apps):
            raise UserError(
                f"table {table}: the commits that wrote batches after {batch} of query {query_id} "
                "are no longer in its log (log retention); restore the table by hand (docs/checkpoints.md)"
            )
        return None, log
    target = first - 1
    if target < 0:
        raise UserError(
            f"table {table} was created by a batch after batch {batch} of "
            f"query {query_id}: there is no earlier version to go back to; move the table aside "
            "(the re-run writes it anew) and run the command again"
        )
    later = [c for c in log.commits if c.version > target]
    foreign = [i for i, c in enumerate(later) if not any(a in c.txns for a in apps)]
    if foreign:
        rest = later[foreign[0] :]
        if all(c.operation == "RESTORE" and _restored_to(c) == target for c in rest):
            return None, log  # a restore cut short after the table part already did it
        c = rest[0]
        raise UserError(
            f"table {table} version {c.version} ({c.operation or 'unknown operation'}) was not "
            f"written by query {query_id}; going back to version {target} would undo it; "
            "restore with --keep-tables and follow docs/checkpoints.md by hand"
        )
    return target, log


def _restored_to(c: Commit) -> int | None:
    v = c.parameters.get("version")
    try:
        return int(v) if v is not None else None
    except (TypeError, ValueError):
        return None
