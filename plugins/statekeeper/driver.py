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

from spark_jobs.runtime import lock, paths, progress

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


def tail_progress(checkpoint: str, max_bytes: int = 256_000) -> list[dict[str, Any]]:
    """The last progress records, idle ones included (oldest first), reading only the end of
    the log."""
    local = paths.local_path(progress.progress_path(checkpoint))
    if local is None:
        return progress.read_progress(checkpoint, idle=True)
    if not local.exists():
        return []
    with open(local, "rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(max(0, size - max_bytes))
        chunk = fh.read().decode("utf-8", "replace")
    lines = chunk.splitlines()
    if size > max_bytes:
        lines = lines[1:]  # the first line was cut
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


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


def launched_pid_alive(state: dict[str, Any]) -> bool:
    return state.get("host") == socket.gethostname() and pid_alive(state.get("pid"))


def stop(checkpoint: str, state: dict[str, Any], grace: float = 30.0) -> str:
    """Stop the driver: SIGTERM (the runner stops its queries between batches), then SIGKILL.

    Only processes on this host are signalled; the lock tells which pid writes the checkpoint.
    """
    host = socket.gethostname()
    targets: list[int] = []
    info = holder(checkpoint) or {}
    if info.get("host") == host and info.get("pid"):
        targets.append(int(info["pid"]))
    if state.get("host") == host and state.get("pid"):
        targets.append(int(state["pid"]))
    if not targets and info:
        return f"driver on {info.get('host')} (pid {info.get('pid')}) is not on this host; stop it there"
    for pid in targets:
        _signal(pid, state, signal.SIGTERM)
    deadline = time.time() + grace
    while time.time() < deadline:
        if not lock.is_held(checkpoint) and not any(pid_alive(p) for p in targets):
            return f"stopped pid(s) {targets}"
        time.sleep(0.5)
    for pid in targets:
        _signal(pid, state, signal.SIGKILL)
    return f"killed pid(s) {targets} after {grace:.0f}s"


def _signal(pid: int, state: dict[str, Any], sig: signal.Signals) -> None:
    try:
        if state.get("pid") == pid and state.get("pgid") == pid:
            os.killpg(pid, sig)  # the launched spark-submit and its Python driver together
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


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
