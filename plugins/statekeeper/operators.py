"""Operators that call the light ``python -m spark_jobs`` commands and publish results.

Each one stores its arguments in ``__init__`` and does the work in ``execute``; the CLI's exit code
decides the outcome, and its one-line reason becomes the task's error.
"""

from __future__ import annotations

import json
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


class UpgradeNeeded(AirflowFailException):
    """``upgrade plan`` found a change the run would refuse: nothing is submitted until the
    change is applied (the message says how)."""


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
        return cli_arguments(self.command, self.job, self.overrides, self.flags)

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


class UpgradePlanOperator(SparkJobsCliOperator):
    """``upgrade plan JOB --json [--trigger T]`` before a submit: exit 0 (nothing changed)
    succeeds, and so does a checkpoint with no committed batch (the first run starts from the
    job as declared now: nothing to plan). Any verdict (``ExitCode.UPGRADE_*``) fails the task without retry
    with the worst change's line and what applies it: the run would refuse the changed job
    anyway, and this says why in the Airflow UI before Spark starts. The plan reads files only
    (about a second) and keeps its result in the checkpoint for the health page."""

    command = ("upgrade", "plan")
    verdict_codes = (
        ExitCode.UPGRADE_COMPATIBLE,
        ExitCode.UPGRADE_REPARTITION,
        ExitCode.UPGRADE_MIGRATE,
        ExitCode.UPGRADE_INCOMPATIBLE,
    )

    def __init__(
        self,
        *,
        job: str,
        overrides: dict[str, str] | None = None,
        trigger: str | None = None,
        **kwargs: Any,
    ) -> None:
        # --trigger: the run this plan gates uses another trigger than the spec's (a catch-up)
        flags = ("--json", *(("--trigger", trigger) if trigger else ()))
        super().__init__(job=job, overrides=overrides, flags=flags, **kwargs)

    def execute(self, context: Any) -> dict[str, Any]:
        from spark_jobs.checkpoints.layout import read_layout
        from statekeeper.submit import resolve_job

        if rendered(self.skip_reason) is not None:
            raise AirflowSkipException(str(self.skip_reason))
        check_path_params(context, rendered(self.job))
        checkpoint = resolve_job(self.job, self.overrides).checkpoint
        if read_layout(checkpoint, sizes=False).last_committed is None:
            self.log.info("no committed batch in %s yet: nothing to plan", checkpoint)
            return {"exit_code": None, "planned": False}
        return {"exit_code": super().execute(context)["exit_code"], "planned": True}

    def fail(self, res: CliResult) -> None:
        if res.returncode not in self.verdict_codes:
            super().fail(res)
            return
        try:
            plan = json.loads(res.stdout)
            why = f"{plan['worst_line']}; {plan['next_step']}"
        except (ValueError, KeyError, TypeError):  # stdout held more than the plan: the code says
            why = f"worst verdict {ExitCode(res.returncode).name} (the task log has the plan)"
        raise UpgradeNeeded(
            f"upgrade plan {rendered(self.job)}: {' '.join(why.split())} "
            f"(exit {res.returncode}); not submitting: the run would refuse the changed job"
        )


class QualityCheckOperator(SparkJobsCliOperator):
    """``quality JOB``: exit 0 pass (warnings recorded), 1 a ``fail`` finding (no retry).

    A job that has not committed a batch yet has no table to check: the task is skipped, so a
    new job does not fail the daily quality DAG until its first run. A table missing after its
    checkpoint committed batches fails the task (the command says there is no table)."""

    command = ("quality",)

    def execute(self, context: Any) -> dict[str, Any]:
        from spark_jobs.checkpoints.layout import read_layout
        from spark_jobs.contract import delta
        from statekeeper.submit import resolve_job

        if rendered(self.skip_reason) is not None:
            raise AirflowSkipException(str(self.skip_reason))
        check_path_params(context, rendered(self.job))
        spec = resolve_job(self.job, self.overrides)
        # the table first: listing a checkpoint (thousands of state files) only when it is missing
        if (
            not delta.exists(spec.output)
            and read_layout(spec.checkpoint, sizes=False).last_committed is None
        ):
            raise AirflowSkipException(
                f"no Delta table at {spec.output} yet and no batch committed in "
                f"{spec.checkpoint}: the job has not run, nothing to check"
            )
        return super().execute(context)

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
