"""The driver of a continuous job, seen from outside: who holds its checkpoint, is it alive,
what did it log lately, and how to stop it. Files only; imports no Spark."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from pathlib import Path
from typing import Any

from spark_jobs.contract import lock, paths, procs
from spark_jobs.contract.lock import RUN
from spark_jobs.contract.progress_log import BatchProgress, Heartbeat, IdleEvent, ProgressLog

SUPERVISOR_FILE = "supervisor.json"  # under <checkpoint>/_statekeeper/: launches and restarts
DRIVER_LOG = "driver.log"


def statekeeper_dir(checkpoint: str) -> Path:
    local = paths.local_path(paths.statekeeper_dir(checkpoint))
    if local is None:
        raise ValueError(f"checkpoint {checkpoint} is not a local or mounted path")
    return local


def pid_alive(pid: int | None) -> bool:
    """True for a running process; a zombie (exited, not yet reaped) counts as dead."""
    if not pid:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def holder(checkpoint: str) -> dict[str, Any] | None:
    """Who holds the job lock (pid, host, job, purpose, since) or None when no driver does."""
    return lock.holder(checkpoint)


TAIL_RECORDS = 200  # the supervisor's look back: well past health.Thresholds.window batches


def tail_progress(checkpoint: str, n: int = TAIL_RECORDS) -> list[dict[str, Any]]:
    """The last ``n`` progress records, idle and heartbeat ones included (oldest first), read
    backwards from the end of the log across its rotated files."""
    kinds = (BatchProgress, IdleEvent, Heartbeat)
    return [r.raw for r in ProgressLog(checkpoint).tail(n, kinds=kinds)]


def read_state(checkpoint: str) -> dict[str, Any]:
    try:
        return dict(json.loads((statekeeper_dir(checkpoint) / SUPERVISOR_FILE).read_text()))
    except (OSError, ValueError):
        return {}


def write_state(checkpoint: str, state: dict[str, Any]) -> None:
    target = statekeeper_dir(checkpoint) / SUPERVISOR_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(state, indent=1, sort_keys=True))
    os.replace(tmp, target)


def ask_stop(checkpoint: str, by: str, now: float | None = None) -> dict[str, Any]:
    """Keep a stop asked by ``by`` in ``supervisor.json``: no supervisor launches or restarts
    the driver until :func:`lift_stop`. The state as written."""
    now = time.time() if now is None else now
    state = read_state(checkpoint)
    state["stop"] = {
        "by": by,
        "asked_at": now,
        "asked_at_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
    }
    write_state(checkpoint, state)
    return state


def lift_stop(checkpoint: str) -> None:
    """Supervise again: drop a kept stop (``action=start``)."""
    state = read_state(checkpoint)
    if state.pop("stop", None) is not None:
        write_state(checkpoint, state)


def launched_pid_alive(state: dict[str, Any]) -> bool:
    """True while the driver recorded in ``supervisor.json`` runs: same host, and the pid is still
    that process (start time and command line), not a reused pid."""
    pid = int(state.get("pid") or 0)
    return (
        state.get("host") == socket.gethostname()
        and pid > 0
        and procs.identity_problem(pid, state.get("start")) is None
    )


def restarts_in_window(
    state: dict[str, Any], window: float, now: float | None = None
) -> list[float]:
    """The restarts recorded in ``supervisor.json`` within the last ``window`` seconds."""
    now = time.time() if now is None else now
    return [float(t) for t in state.get("restarts") or [] if float(t) > now - window]


def record_restart(checkpoint: str, window: float, now: float | None = None) -> int:
    """Count one restart in ``supervisor.json`` (it outlives task runs); the restarts within the
    window, this one included."""
    now = time.time() if now is None else now
    state = read_state(checkpoint)
    state["restarts"] = [*restarts_in_window(state, window, now), now]
    write_state(checkpoint, state)
    return len(state["restarts"])


STOPPABLE_PURPOSES = (
    RUN,
)  # maintenance (contract.lock.MAINTENANCE) holding the lock is left alone


def stop(checkpoint: str, state: dict[str, Any], grace: float = 30.0) -> str:
    """Stop the driver: SIGTERM to the Python driver (the runner finishes the current batch, stops
    its queries and exits), then SIGKILL to it and its spark-submit group after ``grace`` seconds.

    Only processes on this host that are provably the recorded driver are signalled (start time
    and command line, see ``procs``), and never a lock holder doing anything but a ``run``.
    """
    host = socket.gethostname()
    info = holder(checkpoint) or {}
    notes: list[str] = []
    purpose = str(info.get("purpose") or "run")
    if info and purpose not in STOPPABLE_PURPOSES:
        return (
            f"not stopping: the checkpoint is held by {lock.describe(info)}; a {purpose} is not a "
            "driver and must finish (it releases the lock itself)"
        )
    if info and info.get("host") != host:
        return f"driver on {info.get('host')} (pid {info.get('pid')}) is not on this host; stop it there"
    driver_pid: int | None = None
    driver_start: object = None  # with the pid: who it must still be when the SIGKILL goes
    if info.get("pid"):
        why = procs.identity_problem(int(info["pid"]), info.get("start"))
        if why is None:
            driver_pid, driver_start = int(info["pid"]), info.get("start")
        else:
            notes.append(f"lock holder not signalled: {why}")
    group: int | None = None
    if state.get("host") == host and state.get("pid"):
        why = procs.identity_problem(int(state["pid"]), state.get("start"))
        if why is None:
            group = int(state["pid"]) if state.get("pgid") == state.get("pid") else None
            if driver_pid is None and group is None:
                driver_pid, driver_start = int(state["pid"]), state.get("start")
        else:
            notes.append(f"launched pid not signalled: {why}")
    note = f" ({'; '.join(notes)})" if notes else ""
    if driver_pid is None and group is None:
        return f"nothing stopped{note}"
    # The Python driver first: it stops its queries between batches. Without one yet (still
    # starting) the launched group gets the SIGTERM.
    if driver_pid is not None:
        _signal(driver_pid, signal.SIGTERM)
    else:
        _signal_group(group, signal.SIGTERM)
    deadline = time.time() + grace
    while time.time() < deadline:
        if not lock.is_held(checkpoint) and not _alive(driver_pid, group):
            return f"stopped driver {driver_pid or group} (SIGTERM){note}"
        time.sleep(0.5)
    # The grace period is long enough for the driver to exit and its pid to be reused: each pid
    # is proven again right before the SIGKILL, as it was before the SIGTERM.
    killed: list[int] = []
    late: list[str] = []
    if driver_pid is not None:
        why = procs.identity_problem(driver_pid, driver_start)
        if why is None:
            _signal(driver_pid, signal.SIGKILL)
            killed.append(driver_pid)
        else:
            late.append(why)
    if group is not None:
        why = procs.identity_problem(group, state.get("start"))
        if why is None:
            _signal_group(group, signal.SIGKILL)
            killed.append(group)
        else:
            late.append(why)
    if late:
        notes.append(f"not killed: {'; '.join(late)}")
        note = f" ({'; '.join(notes)})"
    if not killed:
        return f"nothing killed after {grace:.0f}s{note}"
    return f"killed driver {killed[0]} after {grace:.0f}s (SIGKILL){note}"


def _alive(pid: int | None, group: int | None) -> bool:
    return any(pid_alive(p) for p in (pid, group) if p)


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass  # it ended by itself meanwhile


def _signal_group(pgid: int | None, sig: signal.Signals) -> None:
    if pgid is None:
        return
    try:
        os.killpg(pgid, sig)  # the launched spark-submit and its Python driver together
    except ProcessLookupError:
        pass  # the group ended by itself meanwhile


def is_descendant(pid: int, ancestor: int) -> bool:
    """True when ``ancestor`` is ``pid`` or one of its parents (read from /proc)."""
    seen = 0
    while pid and seen < 64:
        if pid == ancestor:
            return True
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
        seen += 1
    return False
