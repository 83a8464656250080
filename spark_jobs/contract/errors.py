"""Errors a user can cause. The CLI prints ``statekeeper: <message>`` on one line and exits non-zero."""


class UserError(Exception):
    """A mistake the user can fix: unknown job, bad option, unreadable input, broken checkpoint.

    The message is one line naming the thing and the fix.
    """

    exit_code = 2

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(" ".join(str(message).split()))
        if exit_code is not None:
            self.exit_code = exit_code


class LockHeld(UserError):
    """Another live process holds the job's checkpoint lock."""

    exit_code = 3


class JobFailed(UserError):
    """The streaming query stopped with an error."""

    exit_code = 1
