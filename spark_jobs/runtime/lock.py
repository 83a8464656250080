"""One writer per checkpoint: an ``flock`` (:mod:`spark_jobs.contract.lock`) on
``<checkpoint>/_statekeeper/lock``.

The kernel drops an flock when its process dies, so a lock left by a killed run is free at once
and is taken over safely; the file's text (pid, host, start) only tells people who holds it.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from spark_jobs.contract import paths
from spark_jobs.contract.errors import LockHeld, UserError
from spark_jobs.contract.lock import PURPOSES, RUN, FileLock, is_locked
from spark_jobs.runtime import procs


def lock_path(checkpoint: str) -> Path:
    local = paths.local_path(checkpoint)
    if local is None:
        raise UserError(
            f"checkpoint {checkpoint} is not a local or mounted path; the one-writer lock needs one"
        )
    return local / paths.STATEKEEPER_DIR / paths.LOCK_FILE


class JobLock:
    """Hold it for the life of a run: ``with JobLock(ckpt, job="sessions"): ...``; ``purpose``
    says why it is held (``contract.lock.PURPOSES``: a run, or which maintenance)."""

    def __init__(self, checkpoint: str, job: str = "", purpose: str = RUN) -> None:
        if purpose not in PURPOSES:  # the supervisor reads it: an unknown one would be a driver
            raise ValueError(f"lock purpose {purpose!r} is not one of {', '.join(PURPOSES)}")
        self.checkpoint = checkpoint
        self.job = job
        self.purpose = purpose
        self.path = lock_path(checkpoint)
        self._lock = FileLock(self.path)

    def acquire(self) -> JobLock:
        try:
            fd = self._lock.acquire().fd
        except LockHeld:
            who = describe(holder(self.checkpoint))
            raise LockHeld(
                f"checkpoint {self.checkpoint} is in use by {who}; wait for it to finish or stop "
                "it (one writer per checkpoint)"
            ) from None
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "job": self.job,
            "purpose": self.purpose,
            "start": procs.start_ticks(os.getpid()),  # with the pid: who to signal, see procs
            "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
        return self

    def release(self) -> None:
        if self._lock.held:
            try:
                os.ftruncate(self._lock.fd, 0)  # a free lock names nobody
            finally:
                self._lock.release()

    def __enter__(self) -> JobLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def is_held(checkpoint: str) -> bool:
    """True while a live process holds the lock (probing never takes it for long)."""
    return is_locked(lock_path(checkpoint))


def holder(checkpoint: str) -> dict[str, Any] | None:
    """Who holds the lock (pid, host, job, since), or None when it is free."""
    if not is_held(checkpoint):
        return None
    try:
        return dict(json.loads(lock_path(checkpoint).read_text() or "{}"))
    except (OSError, ValueError):
        return {}


def describe(info: dict[str, Any] | None) -> str:
    if not info:
        return "another process"
    return f"{info.get('purpose', 'run')} of job {info.get('job') or '?'} (pid {info.get('pid')} on {info.get('host')} since {info.get('since')})"
