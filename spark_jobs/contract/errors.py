"""Errors a user can cause, and the exit codes both sides read.

The CLI prints ``statekeeper: <message>`` on one line and exits with the error's code; the Airflow
operators decide from the same :class:`ExitCode` whether to wait, warn, fail or fail without
retry.
"""

from enum import IntEnum


class ExitCode(IntEnum):
    """What ``python -m spark_jobs`` exit statuses mean."""

    OK = 0
    JOB_FAILED = 1  # the streaming query stopped with an error
    QUALITY_FAILED = 1  # ``quality``: a ``fail`` finding (an alias: same status, its own name)
    USER_ERROR = 2  # a mistake the user can fix: unknown job, bad option, bad spec
    LOCK_HELD = 3  # another live process holds the checkpoint (the runner's one-writer lock)
    UNSAFE = 4  # refused before writing: broken checkpoint, cut-short restore, foreign table writer
    CHECKPOINT_WARNINGS = 10  # ``checkpoint validate``: warnings only
    CHECKPOINT_ERRORS = 20  # ``checkpoint validate``: errors
    # ``upgrade plan``: the worst verdict of the job's changes (0: nothing changed), and the
    # code ``upgrade migrate`` refuses a change with (docs/upgrades.md)
    UPGRADE_COMPATIBLE = 30  # takes effect for new events: ``upgrade migrate`` accepts it
    UPGRADE_REPARTITION = 31  # ``checkpoint repartition`` first
    UPGRADE_MIGRATE = 32  # the state must be rewritten
    UPGRADE_INCOMPATIBLE = 33  # only a replay of input gets there
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, the shell's convention)


class UserError(Exception):
    """A mistake the user can fix: unknown job, bad option, unreadable input, broken checkpoint.

    The message is one line naming the thing and the fix.
    """

    exit_code: ExitCode = ExitCode.USER_ERROR

    def __init__(self, message: str, exit_code: ExitCode | None = None) -> None:
        super().__init__(" ".join(str(message).split()))
        if exit_code is not None:
            self.exit_code = exit_code


class LockHeld(UserError):
    """Another live process holds the job's checkpoint lock."""

    exit_code = ExitCode.LOCK_HELD


class JobFailed(UserError):
    """The streaming query stopped with an error."""

    exit_code = ExitCode.JOB_FAILED
