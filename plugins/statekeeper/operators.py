"""Operators that call the light ``python -m spark_jobs`` commands and publish results.

Each one stores its arguments in ``__init__`` and does the work in ``execute``; the CLI's exit code
decides the outcome, and its one-line reason becomes the task's error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

from spark_jobs.contract.errors import ExitCode
from statekeeper.hooks import CliResult, StatekeeperCliHook
from statekeeper.params import check_path_params, rendered
from statekeeper.submit import cli_arguments


class CheckpointInvalid(AirflowFailException):
    """``checkpoint validate`` found errors: submitting on this checkpoint is refused."""


class DataQualityFailed(AirflowFailException):
    """A ``fail`` expectation did not hold: downstream consumers are not signalled."""


class SparkJobsCliOperator(BaseOperator):
    """Run ``python -m spark_jobs COMMAND JOB [--OPTION VALUE ...] [FLAG ...]``; exit 0 succeeds,
    ``warn_codes`` succeed with a warning. Like every operator here it takes a job and its
    overrides, never a command line (:func:`statekeeper.submit.cli_arguments` builds that).

    :param job: the job (templated).
    :param command: the command's words before the job, when the class does not fix them.
    :param overrides: option name -> value (templated); one that renders empty is left out.
    :param flags: further arguments such as ``--dry-run`` (templated); empty ones are left out.
    :param skip_reason: templated; when it renders non-empty the task is skipped with it.
    """

    template_fields: Sequence[str] = ("job", "overrides", "flags", "skip_reason")
    ui_color = "#e8f0fe"
    warn_codes: tuple[ExitCode, ...] = ()
    command: tuple[str, ...] = ()
    renamed: dict[str, str] = {}  # override -> option, where the command spells it otherwise

    def __init__(
        self,
        *,
        job: str,
        command: Sequence[str] = (),
        overrides: dict[str, str] | None = None,
        flags: Sequence[str] = (),
        skip_reason: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.job = job
        self.command = tuple(command) or self.command
        if not self.command:
            raise ValueError(f"{type(self).__name__} needs a command")
        self.overrides = overrides or {}
        self.flags = list(flags)
        self.skip_reason = skip_reason
        self._hook: StatekeeperCliHook | None = None

    def arguments(self) -> list[str]:
        return cli_arguments(self.command, self.job, self.overrides, self.flags, self.renamed)

    def execute(self, context: Any) -> dict[str, Any]:
        if rendered(self.skip_reason) is not None:
            raise AirflowSkipException(str(self.skip_reason))
        check_path_params(context)
        self._hook = StatekeeperCliHook()
        res = self._hook.run(*self.arguments())
        if res.returncode in self.warn_codes:
            self.log.warning("finished with warnings: %s", res.reason)
        elif res.returncode != ExitCode.OK:
            self.fail(res)
        return {"exit_code": res.returncode, "last_line": res.last_stdout_line}

    def fail(self, res: CliResult) -> None:
        raise AirflowException(f"{res.reason} (exit {res.returncode})")

    def on_kill(self) -> None:
        if self._hook is not None:
            self._hook.kill()


class CheckpointValidateOperator(SparkJobsCliOperator):
    """``checkpoint validate``: exit 0 clean, 10 warnings (logged, the run goes on), 20 errors
    (the task fails without retries, so nothing is submitted on a broken checkpoint)."""

    warn_codes = (ExitCode.CHECKPOINT_WARNINGS,)
    command = ("checkpoint", "validate")

    def fail(self, res: CliResult) -> None:
        if res.returncode == ExitCode.CHECKPOINT_ERRORS:
            raise CheckpointInvalid(f"checkpoint has errors, not submitting: {res.reason}")
        super().fail(res)


class QualityCheckOperator(SparkJobsCliOperator):
    """``quality JOB``: exit 0 pass (warnings recorded), 1 a ``fail`` finding (no retry)."""

    command = ("quality",)
    renamed = {"output": "--table"}  # the table the suite reads

    def fail(self, res: CliResult) -> None:
        if res.returncode == ExitCode.QUALITY_FAILED:
            raise DataQualityFailed(f"data quality failed: {res.reason}")
        super().fail(res)


class PublishAssetOperator(BaseOperator):
    """Emit the Asset event for a job's Delta table, with its version in the event's extra.

    Runs last, so consumers are signalled only after the run and its quality check succeeded.

    :param job: the job whose table it is.
    :param overrides: the run's path overrides (templated; ``output`` empty = the spec's table).
    """

    template_fields: Sequence[str] = ("job", "overrides")
    ui_color = "#d4edda"

    def __init__(self, *, job: str, overrides: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.job = job
        self.overrides = overrides or {}

    def execute(self, context: Any) -> dict[str, Any]:
        from spark_jobs.contract import delta
        from statekeeper.submit import resolve_job

        check_path_params(context, rendered(self.job))
        table = resolve_job(self.job, self.overrides).output
        version = delta.version(table)
        if version is None:
            raise AirflowSkipException(f"no Delta table at {table} yet; nothing to publish")
        extra = {"table": table, "version": version}
        for outlet in self.outlets:
            context["outlet_events"][outlet].extra = extra
        self.log.info("published %s at version %s", table, version)
        return extra
