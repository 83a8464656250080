"""One run's writer of the event log: a thread beside the query, off every batch's path.

The progress listener hands each committed batch's progress record over (a queue put); the
thread derives the batch's row from files (:mod:`spark_jobs.eventlog.derive`) and appends the
rows it holds every :func:`flush_every` seconds and when the run ends, with ``deltalake``.

Complete after a kill -9: at start, before anything else, the thread writes the rows of the
checkpoint's committed batches (``commits/``) that the log lacks, from the progress log while it
still has them, else from the checkpoint and the tables alone. Exactly one ``batch`` row per
(query id, batch id): every append of batch rows records Delta ``txn(query, highest batch)``,
and rows at or below the query's recorded batch are dropped before an append. Only the run
holding the checkpoint's lock writes a query's batch rows, and it writes them in batch order.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
from typing import Any

from spark_jobs.contract import events
from spark_jobs.contract.spec import JobSpec
from spark_jobs.eventlog import derive, lineage, store, who
from spark_jobs.runtime import progress

FLUSH_EVERY_ENV = "STATEKEEPER_EVENTS_FLUSH_SECONDS"
JOIN_SECONDS = 60.0  # a run's end waits this long at most for its last rows to be appended


def flush_every() -> float:
    """Seconds between appends while a run goes on (default 30). Each append is one small
    Parquet file: a continuous job adds at most 2,880 a day, whatever its trigger; a kill loses
    nothing (the next start re-derives), rows are just that much later to show."""
    return float(os.environ.get(FLUSH_EVERY_ENV) or 30.0)


def warn(what: str, exc: BaseException) -> None:
    print(
        f"statekeeper: warning: event log: {what} failed ({type(exc).__name__}: {exc}); "
        "the next run's start writes any batch rows still missing",
        file=sys.stderr,
        flush=True,
    )


class RunLog:
    """The event log of one ``run`` of ``spec`` (under its checkpoint lock)."""

    def __init__(self, spec: JobSpec, options: dict[str, Any]) -> None:
        self.spec = spec
        self.options = options
        self.who, self.args = who.who(), who.args()
        self.versions = derive.Versions(
            {"output_version": spec.output, "quarantine_version": spec.quarantine}
        )
        self.queue: queue.Queue[tuple[Any, ...] | None] = queue.Queue()
        self.pending: list[dict[str, Any]] = []
        self.done: dict[str, int] = {}  # query id -> highest batch id in the log
        self.recovered: list[int] = []
        self.cut_short: list[int] = []
        self.batches = 0
        self.input_rows = 0
        self.busy = 0.0  # seconds this thread worked (derive, append): the log's own cost
        self.lineage = lineage.for_spec(spec)
        self.thread = threading.Thread(target=self._loop, name="statekeeper-eventlog", daemon=True)

    # -- called by the run (any thread): a queue put each ---------------------------------------
    def begin(self) -> None:
        self.thread.start()
        self.queue.put(("recover",))

    def started(self, query_id: str, run_id: str) -> None:
        self.queue.put(("start", query_id, run_id, time.time()))

    def batch(self, record: dict[str, Any]) -> None:
        self.queue.put(("batch", record))

    def close(self, exc: BaseException | None, stop_signal: list[int] | None = None) -> None:
        """The run's end: its ``stop`` (or ``failure`` with ``exc``'s one line) row, then the
        last append; waits for it (at most JOIN_SECONDS)."""
        self.queue.put(("end", exc, list(stop_signal or []), time.time()))
        self.queue.put(None)
        self.thread.join(JOIN_SECONDS)

    # -- the thread ------------------------------------------------------------------------------
    def _loop(self) -> None:
        last = time.monotonic()
        while True:
            try:
                item = self.queue.get(timeout=max(0.05, last + flush_every() - time.monotonic()))
            except queue.Empty:
                item = ("tick",)
            if item is None:
                self._flush()
                return
            began = time.perf_counter()
            try:
                getattr(self, f"_on_{item[0]}")(*item[1:])
            except Exception as exc:  # noqa: BLE001 - the log must never stop the job it records
                warn(str(item[0]), exc)
            if item[0] == "recover" or time.monotonic() - last >= flush_every():
                self._flush()
                last = time.monotonic()
                if self.lineage is not None:
                    self.lineage.tick()
            self.busy += time.perf_counter() - began

    def _row(self, kind: str, **cols: Any) -> dict[str, Any]:
        return {
            "kind": kind,
            "job": self.spec.name,
            "checkpoint": self.spec.checkpoint,
            "who": self.who,
            "args": self.args,
            **cols,
        }

    def _written(self, query_id: str) -> int:
        if query_id not in self.done:
            found = events.written_batch(query_id)
            self.done[query_id] = -1 if found is None else int(found)
        return self.done[query_id]

    def _on_recover(self) -> None:
        ckpt = self.spec.checkpoint
        self.cut_short = derive.uncommitted(ckpt)
        qid = derive.query_id(ckpt)
        if qid is None:
            return  # a new checkpoint: nothing committed yet
        missing = [b for b in derive.committed(ckpt) if b > self._written(qid)]
        if not missing:
            return
        records = {
            int(r.get("batchId", -1)): r
            for r in progress.read_progress(ckpt)
            if str(r.get("id")) == qid
        }
        for b in missing:
            self._add_batch(qid, b, records.get(b))
        self.recovered = missing

    def _on_start(self, query_id: str, run_id: str, at: float) -> None:
        # A run after one that died (kill -9, lost machine) is a restart: the dead run left
        # committed batches without rows or a batch planned and never committed.
        kind = "restart" if self.recovered or self.cut_short else "start"
        details = {
            **self.options,
            "inputs": self.spec.inputs,
            "output": self.spec.output,
            "recovered_batches": self.recovered,
            "cut_short_batches": self.cut_short,
        }
        self.pending.append(
            self._row(kind, query_id=query_id, run_id=run_id, at=at, details=details)
        )
        if self.lineage is not None:
            self.lineage.start(run_id)

    def _on_batch(self, record: dict[str, Any]) -> None:
        self.batches += 1
        self.input_rows += int(record.get("numInputRows") or 0)
        self._add_batch(str(record.get("id")), int(record.get("batchId", -1)), record)

    def _add_batch(self, query_id: str, batch: int, record: dict[str, Any] | None) -> None:
        ckpt = self.spec.checkpoint
        row = derive.batch_row(
            self.spec.name, ckpt, query_id, batch, record, self.versions.of(query_id, batch)
        )
        row.update(who=self.who, args=self.args)
        self.pending.append(row)
        if self.lineage is not None and record is not None:
            versions = {k: row[k] for k in ("output_version", "quarantine_version")}
            self.lineage.batch(batch, row["details"]["sources"], versions)

    def _on_tick(self) -> None:
        pass  # only wakes the loop for a timed append

    def _on_end(self, exc: BaseException | None, stop_signal: list[int], at: float) -> None:
        details: dict[str, Any] = {
            "batches": self.batches,
            "input_rows": self.input_rows,
            "event_log_seconds": round(self.busy, 3),
        }
        if stop_signal:
            details["stopped_by"] = stop_signal[0]
        reason = None
        if exc is not None:
            reason = " ".join(str(exc).split()) or type(exc).__name__
        kind = "failure" if exc is not None else "stop"
        self.pending.append(self._row(kind, at=at, reason=reason, details=details))
        if self.lineage is not None:
            self.lineage.end(reason)

    def _flush(self) -> None:
        """Append what is pending: the batch rows not in the log yet (one commit per query, with
        its txn), and the other rows."""
        if not self.pending:
            return
        rows, self.pending = self.pending, []
        try:
            by_query: dict[str | None, list[dict[str, Any]]] = {}
            seen: set[tuple[str, int]] = set()
            for r in rows:
                if r["kind"] == events.BATCH:
                    key = (r["query_id"], r["batch_id"])
                    if r["batch_id"] <= self._written(r["query_id"]) or key in seen:
                        continue  # a batch logged before (a re-run of its progress)
                    seen.add(key)
                    by_query.setdefault(r["query_id"], []).append(r)
                else:
                    by_query.setdefault(None, []).append(r)
            others = by_query.pop(None, [])
            for qid, batch_rows in by_query.items():
                assert qid is not None
                top = max(r["batch_id"] for r in batch_rows)
                store.append(batch_rows + others, txn=(qid, top))
                others = []
                self.done[qid] = top
            store.append(others)
        except Exception as exc:  # noqa: BLE001 - kept for the next append; the run goes on
            self.pending = rows + self.pending
            warn("append", exc)
