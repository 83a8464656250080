"""One ``flock`` helper: a non-blocking exclusive or shared lock on a local file.

The kernel drops an flock when the process holding it dies, so a lock left by a killed process is
free at once. flock belongs to an open file, not a process: a second ``FileLock`` on the same path
is refused even within one process. The checkpoint's one-writer lock, the supervisor's launch
lock and the snapshot store's lock are all this.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from spark_jobs.contract.errors import LockHeld

# Why a checkpoint's one-writer lock is held, as its file says (``purpose``). A driver runs the
# query; everything else is maintenance that releases the lock itself when done: the supervisor
# waits for it and never takes it for a dead or stalled driver.
RUN = "run"
MAINTENANCE = ("restore", "rollback", "repartition", "snapshot", "publish", "migrate")
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
