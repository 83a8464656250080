"""Who a pid is (``psutil``): its start time and command line.

A pid alone names no process: pids are reused, and a restored checkpoint brings back an old
``supervisor.json`` or lock text. Whoever records a pid to signal it later records its start time
too (:func:`start_time`, fixed for the life of the process and kept across ``exec``), and checks
both, plus that the command line is a Statekeeper driver, before it signals. The driver writes it
into its lock and the Airflow side checks it, so it lives here, in the contract.
"""

from __future__ import annotations

import psutil

DRIVER_MARK = (
    "spark_jobs"  # in every driver's command line: python -m spark_jobs, spark_jobs/__main__.py
)
# psutil gives the start as epoch seconds: the kernel's ticks since boot plus the boot time, and
# the boot time the kernel reports moves a little when NTP corrects the clock. A reused pid within
# this margin that is also a Statekeeper driver is not a case worth a private psutil call.
START_TOLERANCE = 2.0  # seconds


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(int(pid))
    except (psutil.Error, ValueError, TypeError):
        return None


def start_time(pid: int) -> float | None:
    """When the process started (epoch seconds), or None when there is no such pid."""
    proc = _process(pid)
    try:
        return proc.create_time() if proc is not None else None
    except psutil.Error:
        return None


def cmdline(pid: int) -> str:
    proc = _process(pid)
    try:
        return " ".join(proc.cmdline()).strip() if proc is not None else ""
    except psutil.Error:
        return ""


def _running(proc: psutil.Process | None) -> bool:
    try:
        return proc is not None and proc.status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except psutil.Error:
        return False


def identity_problem(pid: int, recorded_start: object) -> str | None:
    """None when ``pid`` is the Statekeeper driver recorded with ``recorded_start``; else why
    it must not be signalled (gone, reused by another process, or not a driver)."""
    proc = _process(pid)
    if not _running(proc):
        return f"pid {pid} is not running"
    if not isinstance(recorded_start, int | float) or isinstance(recorded_start, bool):
        return (
            f"pid {pid} was recorded without its start time, so it cannot be told from a reused pid"
        )
    started = start_time(pid)
    if started is None or abs(started - recorded_start) > START_TOLERANCE:
        return f"pid {pid} is now another process (started at {started}, recorded {recorded_start})"
    if DRIVER_MARK not in cmdline(pid):
        return f"pid {pid} is not a Statekeeper driver ({cmdline(pid)[:80]!r})"
    return None
