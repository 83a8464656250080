"""Submitting ``python -m spark_jobs`` through spark-submit (the ``spark_default`` connection).

``SparkJobsSubmitOperator`` is the provider's ``SparkSubmitOperator`` with the application filled
in: ``spark_jobs/__main__.py`` plus the package zipped for ``--py-files``, Delta's jars from
``.cache/jars`` and the venv's Python for the driver and workers. Before it submits it makes sure no
driver holds the checkpoint it is about to write (waiting in a trigger if one does), and a race
lost to another driver (the runner's exit code 3) is waited out the same way: never two drivers on
one checkpoint, also when this task is retried while an earlier try's driver still runs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk.exceptions import AirflowException, AirflowSkipException

from spark_jobs.contract.paths import resolve
from statekeeper.env import project_root, python
from statekeeper.params import check_path_params
from statekeeper.triggers import CheckpointFreeTrigger

LOCK_HELD_EXIT = 3  # spark_jobs.contract.errors.LockHeld


def drop_empty_options(args: Sequence[Any]) -> list[str]:
    """``["--input", "", "x"]`` -> ``["x"]``: an option whose templated value rendered empty goes."""
    out: list[str] = []
    items = [str(a) if a is not None else "" for a in args]
    i = 0
    while i < len(items):
        a = items[i]
        if a.startswith("--") and i + 1 < len(items) and items[i + 1].strip() in ("", "None"):
            i += 2
            continue
        if a.strip() not in ("", "None"):
            out.append(a)
        i += 1
    return out


def submit_settings(name: str, args: list[str]) -> dict[str, Any]:
    """The spark-submit settings every Statekeeper submit shares (hook keyword arguments)."""
    from spark_jobs.runtime.jars import jar_paths
    from statekeeper.package import spark_jobs_zip

    root = project_root()
    # The provider runs `spark-submit` from PATH; on the embedded default that is the venv's.
    bindir = str(Path(python()).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = os.pathsep.join([bindir, os.environ.get("PATH", "")])
    return {
        "application": str(root / "spark_jobs" / "__main__.py"),
        "py_files": spark_jobs_zip(),
        "jars": ",".join(jar_paths()),
        "name": name,
        "application_args": args,
        "env_vars": {
            "PYSPARK_PYTHON": python(),
            "PYSPARK_DRIVER_PYTHON": python(),
            "STATEKEEPER_HOME": str(root),
        },
    }


class SparkJobsSubmitOperator(SparkSubmitOperator):
    """Submit ``python -m spark_jobs ARGUMENTS`` (e.g. ``run sessions --trigger available-now``).

    :param arguments: the CLI arguments (templated); an option whose value renders empty is dropped,
        so ``["--input", "{{ params.input or '' }}"]`` means "the spec's input unless overridden".
    :param guard_checkpoint: the checkpoint this submit writes (templated); while another driver
        holds it the task waits in a trigger (up to ``wait_timeout`` seconds) instead of submitting.
    :param report_table: a Delta table whose version after the run goes to XCom (templated).
    :param skip_reason: when it renders non-empty the task is skipped with it (e.g. a dry run).
    """

    template_fields: Sequence[str] = (
        *SparkSubmitOperator.template_fields,
        "arguments",
        "guard_checkpoint",
        "report_table",
        "skip_reason",
    )
    ui_color = "#f4a460"

    def __init__(
        self,
        *,
        arguments: list[str],
        guard_checkpoint: str = "",
        report_table: str = "",
        skip_reason: str = "",
        wait_timeout: float = 3600.0,
        poll_seconds: float = 5.0,
        conn_id: str = "spark_default",
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("name", "statekeeper")
        super().__init__(application="", conn_id=conn_id, **kwargs)
        self.arguments = arguments
        self.guard_checkpoint = guard_checkpoint
        self.report_table = report_table
        self.skip_reason = skip_reason
        self.wait_timeout = wait_timeout
        self.poll_seconds = poll_seconds

    def execute(self, context: Any) -> dict[str, Any]:
        if str(self.skip_reason or "").strip() not in ("", "None"):
            raise AirflowSkipException(str(self.skip_reason))
        check_path_params(context)
        if self.guard_checkpoint:
            from spark_jobs.runtime.lock import describe, holder

            info = holder(resolve(self.guard_checkpoint))
            if info is not None:
                self.log.info(
                    "checkpoint held by %s; waiting for it in the triggerer", describe(info)
                )
                self._wait_for_checkpoint()
        return self._submit(context)

    def _wait_for_checkpoint(self) -> None:
        self.defer(
            trigger=CheckpointFreeTrigger(
                resolve(self.guard_checkpoint), self.wait_timeout, self.poll_seconds
            ),
            method_name="resume_when_free",
        )

    def resume_when_free(self, context: Any, event: dict[str, Any]) -> dict[str, Any]:
        if event.get("status") != "free":
            from spark_jobs.runtime.lock import describe

            raise AirflowException(
                f"checkpoint {event.get('checkpoint')} still in use by "
                f"{describe(event.get('holder'))} after {self.wait_timeout:.0f}s; not submitting a "
                "second driver"
            )
        return self.execute(context)

    def _submit(self, context: Any) -> dict[str, Any]:
        args = drop_empty_options(self.arguments)
        settings = submit_settings(self.name, args)
        self.application = settings["application"]
        self.py_files = settings["py_files"]
        self.jars = settings["jars"]
        self.application_args = settings["application_args"]
        self.env_vars = {**settings["env_vars"], **(self.env_vars or {})}
        self._hook = None  # a resumed or retried task builds its hook afresh
        try:
            super().execute(context)
        except AirflowException as exc:
            rc = getattr(getattr(self._hook, "_submit_sp", None), "returncode", None)
            reason = self._reason() or str(exc).splitlines()[0]
            if rc == LOCK_HELD_EXIT and self.guard_checkpoint:
                self.log.warning("lost a race for the checkpoint (%s); waiting", reason)
                self._wait_for_checkpoint()
            raise AirflowException(
                f"spark_jobs {' '.join(args[:2])} failed (exit {rc}): {reason}"
            ) from None
        result: dict[str, Any] = {"arguments": args}
        if self.report_table:
            from spark_jobs.contract import delta

            table = resolve(self.report_table)
            result.update(table=table, version=delta.version(table))
        return result

    def _reason(self) -> str:
        lines = list(getattr(self._hook, "_last_submit_log_lines", []) or [])
        for line in reversed(lines):
            if "statekeeper:" in line:
                return line[line.index("statekeeper:") :].strip()
        return ""

    def on_kill(self) -> None:
        # spark-submit's Python driver is its child and holds the lock: stop it too (after the
        # provider kills spark-submit it would be reparented, so look before).
        from statekeeper import driver

        ckpt = resolve(self.guard_checkpoint) if self.guard_checkpoint else ""
        info = (driver.holder(ckpt) if ckpt else None) or {}
        sp = getattr(self._hook, "_submit_sp", None)
        ours = (
            bool(info.get("pid"))
            and sp is not None
            and driver.is_descendant(int(info["pid"]), sp.pid)
        )
        super().on_kill()
        if ours:
            self.log.info(
                "stopping driver pid %s: %s", info["pid"], driver.stop(ckpt, {}, grace=20)
            )
