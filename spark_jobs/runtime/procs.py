"""Who a pid is, from ``/proc``: its start time and command line.

A pid alone names no process: pids are reused, and a restored checkpoint brings back an old
``supervisor.json`` or lock text. Whoever records a pid to signal it later records its start time
too (clock ticks since boot, ``/proc/PID/stat`` field 22, fixed for the life of the process and
kept across ``exec``), and checks both, plus that the command line is a Statekeeper driver, before
it signals.
"""

from __future__ import annotations

from pathlib import Path

DRIVER_MARK = (
    "spark_jobs"  # in every driver's command line: python -m spark_jobs, spark_jobs/__main__.py
)


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{int(pid)}/stat").read_text()
    except (OSError, ValueError):
        return None
    return text.rsplit(")", 1)[1].split()  # the command name may hold spaces and parentheses


def start_ticks(pid: int) -> int | None:
    """The process's start time (clock ticks after boot), or None when there is no such pid."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields and len(fields) > 19 else None


def cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{int(pid)}/cmdline").read_bytes()
    except (OSError, ValueError):
        return ""
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()


def identity_problem(pid: int, recorded_start: object) -> str | None:
    """None when ``pid`` is the Statekeeper driver recorded with ``recorded_start``; else why
    it must not be signalled (gone, reused by another process, or not a driver)."""
    fields = _stat_fields(pid)
    if fields is None or fields[0] in ("Z", "X"):
        return f"pid {pid} is not running"
    if recorded_start is None:
        return (
            f"pid {pid} was recorded without its start time, so it cannot be told from a reused pid"
        )
    if start_ticks(pid) != recorded_start:
        return f"pid {pid} is now another process (started at tick {start_ticks(pid)}, recorded {recorded_start})"
    if DRIVER_MARK not in cmdline(pid):
        return f"pid {pid} is not a Statekeeper driver ({cmdline(pid)[:80]!r})"
    return None
