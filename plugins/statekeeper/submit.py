"""Submitting ``python -m spark_jobs`` through spark-submit (the ``spark_default`` connection).

``SparkJobRunOperator`` runs one job: it takes the job's name and its path overrides, resolves the
spec once in ``execute`` and derives from that one resolved spec both the ``run`` arguments (every
path in them absolute, so the job reads exactly these) and the checkpoint the two-driver guard
watches. Before it submits it makes sure no driver holds that checkpoint (waiting in a trigger if
one does), and a race lost to another driver (the runner's ``LockHeld`` exit code) is waited out
the same way: never two drivers on one checkpoint, also when this task is retried while an
earlier try's driver still runs. ``SparkJobsSubmitOperator`` submits any other command (a
backfill's ``publish``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowException, AirflowSkipException

from spark_jobs.contract.errors import ExitCode
from spark_jobs.contract.paths import resolve
from spark_jobs.contract.spec import JobSpec
from statekeeper.hooks import SparkJobsSubmitHook
from statekeeper.params import check_path_params, rendered
from statekeeper.triggers import CheckpointFreeTrigger

OVERRIDES = ("input", "output", "checkpoint")


def cli_arguments(
    command: Sequence[str],
    job: Any,
    overrides: Mapping[str, Any],
    flags: Sequence[Any] = (),
) -> list[str]:
    """``COMMAND JOB --KEY VALUE ... FLAG ...``, the one way an operator builds a command line:
    an override is its option (``staged_checkpoint`` is ``--staged-checkpoint``, ``output`` is
    ``--output`` for every command); one or a flag that rendered empty is left out, so the spec's
    own value holds."""
    out = [*command, str(job)]
    for key, value in overrides.items():
        if rendered(value) is not None:
            out += ["--" + key.replace("_", "-"), str(value).strip()]
    return out + [str(f).strip() for f in flags if rendered(f) is not None]


def resolve_job(job: str, overrides: Mapping[str, Any] | None, trigger: Any = None) -> JobSpec:
    """The job's spec with the (rendered) overrides applied: every path resolved, by the one
    resolver, in this process. Unknown override names are a programming error."""
    from spark_jobs.contract.spec import load_spec

    ov = dict(overrides or {})
    unknown = sorted(set(ov) - set(OVERRIDES))
    if unknown:
        raise ValueError(f"unknown override(s) {', '.join(unknown)}; known: {', '.join(OVERRIDES)}")
    return load_spec(job).with_overrides(
        input=rendered(ov.get("input")),
        output=rendered(ov.get("output")),
        checkpoint=rendered(ov.get("checkpoint")),
        trigger=rendered(trigger),
    )


def run_arguments(spec: JobSpec) -> list[str]:
    """``run JOB ...`` for exactly this resolved spec: trigger, output, checkpoint and one
    ``--input KIND=URI`` per input, all absolute, so the job resolves nothing differently."""
    args = ["run", spec.name, "--trigger", str(spec.trigger)]
    for kind, uri in spec.inputs.items():
        args += ["--input", f"{kind}={uri}"]
    return [*args, "--output", spec.output, "--checkpoint", spec.checkpoint]


def quick_compiler(planned: Mapping[str, Any]) -> bool:
    """Whether a planned run's driver starts with the JVM's quick compiler: the rule the command
    line's own runs follow (an available-now run with little left to read), measured when it is
    submitted (after any wait, more may have landed). A plan from an earlier release (no
    ``inputs``) gets both compilers, as before."""
    from spark_jobs.checkpoints.layout import read_layout
    from spark_jobs.checkpoints.unread import pending_bytes
    from spark_jobs.contract import jvm

    if "inputs" not in planned:
        return False
    try:
        backlog = pending_bytes(planned["inputs"], read_layout(planned["checkpoint"], sizes=False))
    except OSError:  # a folder it may not read: the run itself says what is wrong
        backlog = None
    return jvm.quick_compiler(bool(planned.get("available_now")), backlog)


class SparkJobsSubmitOperator(BaseOperator):
    """spark-submit ``python -m spark_jobs COMMAND JOB`` (e.g. a backfill's ``publish``).

    :param command: the command's words before the job (``("publish",)``).
    :param job: the job (templated).
    :param overrides: option name -> value (templated, :func:`cli_arguments`); an empty value is
        left out.
    :param report_table: a Delta table whose version after the run goes to XCom (templated).
    :param skip_reason: when it renders non-empty the task is skipped with it (e.g. a dry run).
    """

    template_fields: Sequence[str] = ("job", "overrides", "report_table", "skip_reason")
    ui_color = "#f4a460"

    def __init__(
        self,
        *,
        job: str,
        command: Sequence[str] = (),
        overrides: dict[str, str] | None = None,
        report_table: str = "",
        skip_reason: str = "",
        name: str = "statekeeper",
        conn_id: str = SparkJobsSubmitHook.default_conn_name,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.job = job
        self.command = tuple(command)
        self.overrides = overrides or {}
        self.report_table = report_table
        self.skip_reason = skip_reason
        self.name = name
        self.conn_id = conn_id
        self._hook: SparkJobsSubmitHook | None = None
        self._checkpoint = ""  # the checkpoint this submit's driver will hold, when known

    def _skip_or_refuse(self, context: Any) -> None:
        if rendered(self.skip_reason):
            raise AirflowSkipException(str(self.skip_reason))
        check_path_params(context, rendered(self.job))

    def execute(self, context: Any) -> dict[str, Any]:
        self._skip_or_refuse(context)
        table = resolve(self.report_table) if rendered(self.report_table) else ""
        return self._submit(cli_arguments(self.command, self.job, self.overrides), table)

    def _submit(self, args: list[str], table: str, quick: bool = False) -> dict[str, Any]:
        """spark-submit ``args``; ``quick``: its driver gets the JVM's quick compiler only."""
        self._hook = SparkJobsSubmitHook(conn_id=self.conn_id, name=self.name)
        res = self._hook.run(args, quick_compiler=quick)
        if res.returncode != 0:
            reason = res.reason or (res.tail[-1] if res.tail else "no output")
            self._failed(args, res.returncode, reason)
            raise AirflowException(
                f"spark_jobs {' '.join(args[:2])} failed (exit {res.returncode}): {reason}"
            )
        result: dict[str, Any] = {"arguments": args}
        if table:
            from spark_jobs.contract import delta

            result.update(table=table, version=delta.version(table))
        return result

    def _failed(self, args: list[str], returncode: int, reason: str) -> None:
        """Hook for a failed submit before the task fails (a run waits out a lost race)."""

    def on_kill(self) -> None:
        # spark-submit's Python driver is its child and holds the lock: stop it too (once
        # spark-submit is killed it would be reparented, so look before).
        from statekeeper import driver

        hook = self._hook
        if hook is None:
            return
        ckpt = self._checkpoint
        info = (driver.holder(ckpt) if ckpt else None) or {}
        ours = (
            bool(info.get("pid"))
            and hook.pid is not None
            and driver.is_descendant(int(info["pid"]), hook.pid)
        )
        hook.kill()
        if ours:
            self.log.info(
                "stopping driver pid %s: %s", info["pid"], driver.stop(ckpt, {}, grace=20)
            )


class SparkJobRunOperator(SparkJobsSubmitOperator):
    """spark-submit ``python -m spark_jobs run JOB`` with the spec's paths or the overrides.

    :param job: the job (templated, e.g. ``{{ params.job }}``).
    :param overrides: ``{"input": ..., "output": ..., "checkpoint": ...}`` (templated); a value
        that renders empty means the spec's own.
    :param trigger: the query's trigger (templated); empty = the spec's.
    :param wait_timeout: how long to wait, in the triggerer, while another driver holds the
        checkpoint before failing instead of submitting a second driver.

    The resolved run (arguments, checkpoint, table) goes through the deferral in the trigger's
    ``echo``, so a resumed task submits exactly what was resolved, without resolving again.
    """

    template_fields: Sequence[str] = ("job", "overrides", "trigger", "skip_reason")

    def __init__(
        self,
        *,
        job: str,
        overrides: dict[str, str] | None = None,
        trigger: str = "available-now",
        wait_timeout: float = 3600.0,
        poll_seconds: float = 5.0,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("name", "")
        super().__init__(job=job, command=("run",), overrides=overrides, **kwargs)
        self.trigger = trigger
        self.wait_timeout = wait_timeout
        self.poll_seconds = poll_seconds
        self._planned: dict[str, Any] = {}

    def execute(self, context: Any) -> dict[str, Any]:
        self._skip_or_refuse(context)
        spec = resolve_job(self.job, self.overrides, self.trigger)
        planned = {
            "arguments": run_arguments(spec),
            "checkpoint": spec.checkpoint,
            "table": spec.output,
            "inputs": list(spec.inputs.values()),
            "available_now": spec.trigger.available_now,
        }
        return self._guarded_submit(planned)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """The run's datasets for Airflow's OpenLineage provider (which is active only when a
        transport is configured): the job's inputs and its two Delta tables, named as the run's
        own streaming lineage names them."""
        from airflow.providers.openlineage.extractors import OperatorLineage
        from openlineage.client.event_v2 import Dataset

        from spark_jobs.contract import lineage

        spec = resolve_job(self.job, self.overrides, self.trigger)
        return OperatorLineage(
            inputs=[Dataset(ns, name) for ns, name in lineage.inputs(spec)],
            outputs=[Dataset(ns, name) for ns, name in lineage.outputs(spec)],
        )

    def _guarded_submit(self, planned: dict[str, Any]) -> dict[str, Any]:
        from spark_jobs.contract.lock import describe, holder

        self._checkpoint = planned["checkpoint"]
        self.name = self.name or f"statekeeper-{planned['arguments'][1]}"
        info = holder(self._checkpoint)
        if info is not None:
            self.log.info("checkpoint held by %s; waiting for it in the triggerer", describe(info))
            self._wait_for_checkpoint(planned)
        self._planned = planned  # for a lost race: wait, then submit the same run
        return self._submit(planned["arguments"], planned["table"], quick_compiler(planned))

    def _failed(self, args: list[str], returncode: int, reason: str) -> None:
        if returncode == ExitCode.LOCK_HELD:
            self.log.warning("lost a race for the checkpoint (%s); waiting", reason)
            self._wait_for_checkpoint(self._planned)

    def _wait_for_checkpoint(self, planned: dict[str, Any]) -> None:
        self.defer(
            trigger=CheckpointFreeTrigger(
                planned["checkpoint"], self.wait_timeout, self.poll_seconds, echo=planned
            ),
            method_name="resume_when_free",
        )

    def resume_when_free(self, context: Any, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("status") != "free":
            from spark_jobs.contract.lock import describe

            raise AirflowException(
                f"checkpoint {event.get('checkpoint')} still in use by "
                f"{describe(event.get('holder'))} after {self.wait_timeout:.0f}s; not submitting a "
                "second driver"
            )
        return self._guarded_submit(event["echo"])
