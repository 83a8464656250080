"""Service liveness: no log for ``stale_after`` makes a service stale (one alert); its next log
makes it ok again (one alert). Timers follow the watermark in event-time runs and the clock in
processing-time runs; the logic only sees the times it is given.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

OK = "ok"
STALE = "stale"
# The state kept per service (transformWithState's variables, as Spark DDL): its health, and the
# log times held until the watermark passes them (event-time runs apply them in time order).
STATE = {"health": "last_seen long, status string", "held": "t long"}


@dataclass(frozen=True)
class Health:
    last_seen: int
    status: str  # ok | stale


def on_logs(
    service: str,
    times_ms: Iterable[int],
    prev: Health | None,
    stale_ms: int,
    now_ms: int | None = None,
) -> tuple[list[dict], Health, int]:
    """New logs for a service. Returns (alerts, new health, timer to register).

    Event-time mode (``now_ms`` None): the logs are walked in time order, so a silence longer
    than ``stale_after`` between two logs of one batch is reported (stale, then ok) just as it
    would be had the logs come in separate batches. Processing-time mode (``now_ms`` given):
    silence is measured by the clock, so only the timer turns a service stale, and the timer
    is now + stale_after.
    """
    alerts: list[dict] = []
    status = prev.status if prev else None
    last = prev.last_seen if prev else None
    for t in sorted(times_ms):
        if now_ms is None and status == OK and last is not None and t - last > stale_ms:
            alerts.append(
                {
                    "service": service,
                    "status": STALE,
                    "alert_time": last + stale_ms,
                    "last_seen": last,
                }
            )
            status = STALE
        if status == STALE:
            alerts.append({"service": service, "status": OK, "alert_time": t, "last_seen": t})
        status = OK
        last = t if last is None else max(last, t)
    assert last is not None, "on_logs needs at least one log"
    timer = (now_ms if now_ms is not None else last) + stale_ms
    return alerts, Health(last, OK), timer


def on_timer(service: str, prev: Health | None, expiry_ms: int) -> tuple[list[dict], Health | None]:
    """The stale timer fired at ``expiry_ms``: an ok service turns stale, once."""
    if prev is None or prev.status == STALE:
        return [], prev
    alert = {
        "service": service,
        "status": STALE,
        "alert_time": expiry_ms,
        "last_seen": prev.last_seen,
    }
    return [alert], Health(prev.last_seen, STALE)


def initial_timer(prev: Health, stale_ms: int, now_ms: int | None = None) -> int | None:
    """A known service loaded from the initial-state table: its first stale timer, if ok."""
    if prev.status != OK:
        return None
    return (now_ms if now_ms is not None else prev.last_seen) + stale_ms


def advance(
    service: str, prev: Health | None, times_ms: list[int], watermark_ms: int, stale_ms: int
) -> tuple[list[dict], Health | None, int | None]:
    """Event-time mode, ordered: logs the watermark has passed (``times_ms``, in time order),
    then the watermark itself. Returns (alerts, new health, the stale deadline or None).

    A service is stale once the watermark reaches ``last_seen + stale_after`` with no log in
    between: every log that can still arrive is later than the watermark, so the silence is
    certain then, and the alert is the one a later log would have produced anyway.
    """
    alerts: list[dict] = []
    health = prev
    if times_ms:
        alerts, health, _ = on_logs(service, times_ms, prev, stale_ms)
    if health is not None and health.status == OK and health.last_seen + stale_ms <= watermark_ms:
        more, health = on_timer(service, health, health.last_seen + stale_ms)
        alerts += more
    deadline = health.last_seen + stale_ms if health and health.status == OK else None
    return alerts, health, deadline
