"""Service liveness: no log for ``stale_after`` makes a service stale (one alert); its next log
makes it ok again (one alert). Timers follow the watermark in event-time runs and the clock in
processing-time runs; the logic only sees the times it is given.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

OK = "ok"
STALE = "stale"


@dataclass(frozen=True)
class Health:
    last_seen: int
    status: str  # ok | stale


def on_logs(
    service: str, times_ms: Iterable[int], prev: Health | None, stale_ms: int, now_ms: int | None = None
) -> tuple[list[dict], Health, int]:
    """New logs for a service. Returns (alerts, new health, timer to register).

    ``now_ms`` given = processing-time mode: the timer is now + stale_after, else last_seen +
    stale_after.
    """
    times = sorted(times_ms)
    last_seen = max(times[-1], prev.last_seen if prev else times[-1])
    alerts = []
    if prev is not None and prev.status == STALE:
        alerts.append({"service": service, "status": OK, "alert_time": times[0], "last_seen": last_seen})
    timer = (now_ms if now_ms is not None else last_seen) + stale_ms
    return alerts, Health(last_seen, OK), timer


def on_timer(service: str, prev: Health | None, expiry_ms: int) -> tuple[list[dict], Health | None]:
    """The stale timer fired at ``expiry_ms``: an ok service turns stale, once."""
    if prev is None or prev.status == STALE:
        return [], prev
    alert = {"service": service, "status": STALE, "alert_time": expiry_ms, "last_seen": prev.last_seen}
    return [alert], Health(prev.last_seen, STALE)


def initial_timer(prev: Health, stale_ms: int, now_ms: int | None = None) -> int | None:
    """A known service loaded from the initial-state table: its first stale timer, if ok."""
    if prev.status != OK:
        return None
    return (now_ms if now_ms is not None else prev.last_seen) + stale_ms
