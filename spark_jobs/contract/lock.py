"""One ``flock`` helper: a non-blocking exclusive or shared lock on a local file.

The kernel drops an flock when the process holding it dies, so a lock left by a killed process is
free at once. flock belongs to an open file, not a process: a second ``FileLock`` on the same path
is refused even within one process. The checkpoint's one-writer lock, the supervisor's launch
lock and the snapshot store's lock are all this.

One writer per checkpoint (:class:`JobLock`): an flock on ``<checkpoint>/_statekeeper/lock``. A
lock left by a killed run is free at once and is taken over safely; the file's text (pid, host,
start, purpose) only tells people, and the supervisor, who holds it. Both sides read it, so it
lives here.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from spark_jobs.contract import paths, procs
from spark_jobs.contract.errors import LockHeld, UserError

# Why a checkpoint's one-writer lock is held, as its file says (``purpose``). A driver runs the
# query; everything else is maintenance that releases the lock itself when done: the supervisor
# waits for it and never takes it for a dead or stalled driver.
RUN = "run"
MAINTENANCE = ("restore", "rollback", "repartition", "snapshot", "publish", "migrate", "preview")
PURPOSES = (RUN, *MAINTENANCE)


def is_maintenance(holder: dict[str, object] | None) -> bool:
    """True when the lock's holder (its file's fields) is doing maintenance, not running."""
    return bool(holder) and str((holder or {}).get("purpose") or RUN) in MAINTENANCE


class FileLock:
    """``with FileLock(path): ...`` or ``acquire()`` / ``release()``; raises :class:`LockHeld`
    at once (never waits) when another open file holds a conflicting lock on ``path``.

    Exclusive locks create ``path`` (and its folder); a shared lock only opens an existing file
    for reading (``FileNotFoundError`` otherwise), so probing never creates anything.
    """

    def __init__(self, path: Path, *, shared: bool = False) -> None:
        self.path = path
        self.shared = shared
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    @property
    def fd(self) -> int:
        """The open, locked file (e.g. to write who holds it); only while held."""
        if self._fd is None:
            raise RuntimeError(f"lock {self.path} is not held")
        return self._fd

    def acquire(self) -> FileLock:
        if self._fd is not None:
            raise RuntimeError(f"lock {self.path} is already held by this FileLock")
        if self.shared:
            fd = os.open(self.path, os.O_RDONLY)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LockHeld(f"{self.path} is locked by another process") from None
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> FileLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def is_locked(path: Path) -> bool:
    """True while some process holds an exclusive lock on ``path``; a missing file is not locked.

    A shared lock is taken and dropped at once, so probing never blocks a would-be holder for
    longer than that."""
    try:
        with FileLock(path, shared=True):
            return False
    except FileNotFoundError:
        return False
    except LockHeld:
        return True


# -- the checkpoint's one-writer lock --------------------------------------------------------------
def lock_path(checkpoint: str) -> Path:
    local = paths.local_path(checkpoint)
    if local is None:
        raise UserError(
            f"checkpoint {checkpoint} is not a local or mounted path; the one-writer lock needs one"
        )
    return local / paths.STATEKEEPER_DIR / paths.LOCK_FILE


class JobLock:
    """Hold it for the life of a run: ``with JobLock(ckpt, job="sessions"): ...``; ``purpose``
    says why it is held (:data:`PURPOSES`: a run, or which maintenance)."""

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
            "start": procs.start_time(os.getpid()),  # with the pid: who to signal, see procs
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
