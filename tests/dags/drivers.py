"""A continuous driver seen from a DAG test: who holds its checkpoint, how far its progress log
got, waiting for either, and killing whatever driver a test left behind."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any


def holder(ckpt: Path) -> dict | None:
    from spark_jobs.contract.lock import holder as lock_holder

    return lock_holder(str(ckpt))


def wait_for(what: str, predicate: Any, timeout: float, every: float = 1.0) -> Any:
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def progress_lines(ckpt: Path) -> int:
    p = ckpt / "_statekeeper" / "progress.jsonl"
    return len(p.read_text().splitlines()) if p.exists() else 0


def cleanup(ckpt: Path) -> None:
    """Never leave a driver behind, whatever the test did; and never kill a stranger that got a
    recorded pid since (pids wrap within minutes on a busy machine): check identity first."""
    from spark_jobs.contract import procs

    state_file = ckpt / "_statekeeper" / "supervisor.json"
    state = json.loads(state_file.read_text()) if state_file.exists() else {}
    info = (holder(ckpt) if ckpt.exists() else None) or {}
    for rec, kill in ((state, os.killpg), (info, os.kill)):
        pid = rec.get("pid")
        if pid and procs.identity_problem(int(pid), rec.get("start")) is None:
            try:
                kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass  # ended meanwhile
