"""The ``service_health`` job's transformWithState processor: a thin adapter that keeps a
service's health and its held logs in typed state variables and hands every decision to the
pure logic (:mod:`spark_jobs.state.service_health`, :mod:`spark_jobs.state.ordered`).

A module of its own because it subclasses PySpark's ``StatefulProcessor``: importing it imports
pyspark, which the job's declaration (read by Spark-free commands) must not.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.sql.streaming.stateful_processor import StatefulProcessor

from spark_jobs.io import key_metrics
from spark_jobs.jobs.pandas_io import concat, emit, to_ms
from spark_jobs.state import ordered
from spark_jobs.state import service_health as logic

STATE = logic.STATE
TS_COLUMNS = ("alert_time", "last_seen")


class ServiceHealthProcessor(StatefulProcessor):
    """Event-time mode (``processing=False``): logs are held until the watermark passes them,
    then applied in time order; processing-time mode judges silence by the clock."""

    def __init__(self, stale_ms: int, processing: bool, cols: list[str]) -> None:
        self.stale_ms, self.processing, self.cols = stale_ms, processing, cols

    def init(self, handle: Any) -> None:
        self.handle = handle
        self.health = handle.getValueState("health", STATE["health"])
        self.held = handle.getListState("held", STATE["held"])

    # the timeout first: a silence that passed its deadline
    def handleExpiredTimer(
        self, key: Any, timerValues: Any, expiredTimerInfo: Any
    ) -> Iterator[Any]:
        if not self.processing:
            alerts = self._advance(key[0], [], timerValues.getCurrentWatermarkInMs())
        else:
            when = timerValues.getCurrentProcessingTimeInMs()
            alerts, new = logic.on_timer(key[0], self._get(), when)
            if new is not None:
                self.health.update((new.last_seen, new.status))
        yield from self._out(alerts, held_before=True, updated=bool(alerts))

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        df = concat(rows)
        if df is None:
            return
        times = to_ms(df["event_time"]).tolist()
        had = self.health.exists() or self.held.exists()
        if not self.processing:
            alerts = self._advance(key[0], times, timerValues.getCurrentWatermarkInMs())
        else:
            now = timerValues.getCurrentProcessingTimeInMs()
            alerts, new, timer = logic.on_logs(key[0], times, self._get(), self.stale_ms, now)
            self.health.update((new.last_seen, new.status))
            self._retime(timer)
        yield from self._out(alerts, held_before=had, updated=True)

    def handleInitialState(self, key: Any, initialState: Any, timerValues: Any) -> None:
        row = initialState.iloc[-1]
        prev = logic.Health(int(to_ms(initialState["last_seen"])[-1]), str(row["status"]))
        self.health.update((prev.last_seen, prev.status))
        now = timerValues.getCurrentProcessingTimeInMs() if self.processing else None
        self._retime(logic.initial_timer(prev, self.stale_ms, now))

    def close(self) -> None:
        pass

    def _get(self) -> logic.Health | None:
        if not self.health.exists():
            return None
        last_seen, status = self.health.get()
        return logic.Health(int(last_seen), str(status))

    def _retime(self, *timers: int | None) -> None:
        for t in list(self.handle.listTimers()):
            self.handle.deleteTimer(t)
        for t in {t for t in timers if t is not None}:
            self.handle.registerTimer(t)

    def _advance(self, service: str, new: list[int], watermark: int) -> list[dict[str, Any]]:
        """Ordered event time: hold ``new``, apply what the watermark passed, retime."""
        held = [int(r[0]) for r in self.held.get()] if self.held.exists() else []
        due, kept = ordered.release_rows([(t, "") for t in held], [(t, "") for t in new], watermark)
        alerts, health, deadline = logic.advance(
            service, self._get(), [t for t, _ in due], watermark, self.stale_ms
        )
        if health is not None:
            self.health.update((health.last_seen, health.status))
        if kept:
            self.held.put([(t,) for t, _ in kept])
        elif self.held.exists():
            self.held.clear()
        self._retime(deadline, min((t for t, _ in kept), default=None))
        return alerts

    def _out(self, alerts: list[dict[str, Any]], held_before: bool, updated: bool) -> Iterator[Any]:
        """Alert frames, then the call's metric row: a service, once seen, stays in state (its
        status is what the next log is judged against), so keys only ever join."""
        for df in emit(alerts, self.cols, TS_COLUMNS):
            yield key_metrics.with_null_metrics(df)
        yield key_metrics.frame(self.cols, int(not held_before), int(updated), 0, 0)
