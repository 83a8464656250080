"""Deferrable waits, run in the triggerer instead of a worker slot. Each yields one event.

- ``CheckpointFreeTrigger``: until no driver holds a checkpoint (before a catch-up submit, or
  after stopping an unhealthy driver), or a timeout.
- ``DriverWatchTrigger``: watches a continuous driver through its lock and progress log; fires
  when it is dead or stalled, when it turned healthy (``until_healthy``), or when the watch ends.
  A lock held for maintenance (restore, rollback, ...) is waited through; what follows it fires
  as ``maintenance_over``, not as a crash.
- ``BackoffTrigger``: sleeps, then fires.

Triggers that resume a multi-step operator carry its state in ``echo`` and hand it back in the
event, so the state survives however the task is resumed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from statekeeper.health import ALIVE_VERDICTS, MAINTENANCE, RESTART_VERDICTS
from statekeeper.params import SUPERVISE_BOUNDS


class CheckpointFreeTrigger(BaseTrigger):
    def __init__(
        self,
        checkpoint: str,
        timeout_seconds: float = 3600.0,
        poll_seconds: float = 5.0,
        echo: dict[str, Any] | None = None,
    ):
        super().__init__()
        self.checkpoint = checkpoint
        self.timeout_seconds = timeout_seconds
        self.poll_seconds = poll_seconds
        self.echo = echo or {}

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            "statekeeper.triggers.CheckpointFreeTrigger",
            {
                "checkpoint": self.checkpoint,
                "timeout_seconds": self.timeout_seconds,
                "poll_seconds": self.poll_seconds,
                "echo": self.echo,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from spark_jobs.contract.lock import holder

        deadline = time.time() + self.timeout_seconds
        while True:
            info = await asyncio.to_thread(holder, self.checkpoint)
            if info is None:
                yield TriggerEvent(
                    {"status": "free", "checkpoint": self.checkpoint, "echo": self.echo}
                )
                return
            if time.time() >= deadline:
                yield TriggerEvent(
                    {
                        "status": "timeout",
                        "checkpoint": self.checkpoint,
                        "holder": info,
                        "echo": self.echo,
                    }
                )
                return
            await asyncio.sleep(self.poll_seconds)


class DriverWatchTrigger(BaseTrigger):
    def __init__(
        self,
        checkpoint: str,
        thresholds: dict[str, Any],
        watch_until: float,
        started_at: float | None = None,
        pid: int | None = None,
        until_healthy: bool = False,
        poll_seconds: float = 5.0,
        echo: dict[str, Any] | None = None,
    ):
        super().__init__()
        self.checkpoint = checkpoint
        self.thresholds = thresholds
        self.watch_until = watch_until
        self.started_at = started_at
        self.pid = pid
        self.until_healthy = until_healthy
        # Never faster than the bound, however the value arrived: the triggerer is shared.
        self.poll_seconds = max(float(poll_seconds), SUPERVISE_BOUNDS["poll_seconds"].minimum)
        self.echo = echo or {}

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            "statekeeper.triggers.DriverWatchTrigger",
            {
                "checkpoint": self.checkpoint,
                "thresholds": self.thresholds,
                "watch_until": self.watch_until,
                "started_at": self.started_at,
                "pid": self.pid,
                "until_healthy": self.until_healthy,
                "poll_seconds": self.poll_seconds,
                "echo": self.echo,
            },
        )

    def _look(self) -> dict[str, Any]:
        from spark_jobs.contract.lock import holder
        from statekeeper import driver
        from statekeeper.health import Thresholds, assess

        who = holder(self.checkpoint)
        alive = who is not None or driver.pid_alive(self.pid)
        h = assess(
            driver.tail_progress(self.checkpoint),
            alive,
            Thresholds(**self.thresholds),
            started_at=self.started_at,
            holder=who,
        )
        return h.to_dict()

    async def run(self) -> AsyncIterator[TriggerEvent]:
        waited = False  # saw maintenance: what follows it is no crash of the driver
        while True:
            h = await asyncio.to_thread(self._look)
            if h["verdict"] == MAINTENANCE:
                waited = True
            elif h["verdict"] in RESTART_VERDICTS:
                status = "maintenance_over" if waited else "unhealthy"
                yield TriggerEvent({"status": status, "health": h, "echo": self.echo})
                return
            if self.until_healthy and h["verdict"] in ALIVE_VERDICTS:
                yield TriggerEvent({"status": "healthy", "health": h, "echo": self.echo})
                return
            if time.time() >= self.watch_until:
                yield TriggerEvent({"status": "watch_over", "health": h, "echo": self.echo})
                return
            await asyncio.sleep(self.poll_seconds)


class BackoffTrigger(BaseTrigger):
    def __init__(self, until: float, echo: dict[str, Any] | None = None):
        super().__init__()
        self.until = until
        self.echo = echo or {}

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("statekeeper.triggers.BackoffTrigger", {"until": self.until, "echo": self.echo})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        await asyncio.sleep(max(0.0, self.until - time.time()))
        yield TriggerEvent({"status": "backoff_over", "echo": self.echo})
