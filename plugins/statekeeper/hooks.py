"""Hooks: the ``spark_jobs`` command line as a subprocess, and spark-submit of a job.

``StatekeeperCliHook`` runs the light commands (checkpoint, quality) and keeps the last line of
stderr, which is the CLI's one-line reason on failure. ``SparkJobsSubmitHook`` runs spark-submit
(the command from ``statekeeper.spark_submit``) and owns the process: it waits for it (a catch-up
run) or starts it in its own session so a continuous driver outlives the Airflow task that
launched it (the supervisor watches it from a trigger instead of holding a worker slot).
"""

from __future__ import annotations

import subprocess
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException

from spark_jobs.contract import paths
from spark_jobs.contract.env import cli_command, cli_env
from statekeeper.spark_submit import BadSparkConnection, SparkTarget, application


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str

    @property
    def reason(self) -> str:
        """The CLI's one-line ``statekeeper: ...`` message (or the last stderr line)."""
        lines = [ln.strip() for ln in self.stderr.splitlines() if ln.strip()]
        for ln in reversed(lines):
            if ln.startswith("statekeeper:"):
                return ln
        return lines[-1] if lines else f"exit code {self.returncode}"

    @property
    def last_stdout_line(self) -> str:
        lines = [ln for ln in self.stdout.splitlines() if ln.strip()]
        return lines[-1] if lines else ""


class StatekeeperCliHook(BaseHook):
    """Run ``python -m spark_jobs ARGS`` with the project's environment, logging its output."""

    hook_name = "Statekeeper CLI"

    def __init__(self, env: dict[str, str] | None = None, timeout: float | None = None) -> None:
        super().__init__()
        self.env = env or {}
        self.timeout = timeout
        self._proc: subprocess.Popen[str] | None = None

    def get_conn(self) -> Any:
        return None

    def run(self, *args: str) -> CliResult:
        cmd = cli_command(*args)
        self.log.info("running: %s", " ".join(cmd))
        self._proc = subprocess.Popen(
            cmd,
            cwd=str(paths.project_root()),
            env=cli_env(self.env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        err: list[str] = []

        def pump_err() -> None:
            assert self._proc is not None and self._proc.stderr is not None
            for line in self._proc.stderr:
                err.append(line)
                self.log.info("%s", line.rstrip())

        t = threading.Thread(target=pump_err, daemon=True)
        t.start()
        out: list[str] = []
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            out.append(line)
            self.log.info("%s", line.rstrip())
        rc = self._proc.wait(timeout=self.timeout)
        t.join(timeout=5)
        return CliResult(rc, "".join(out), "".join(err))

    def kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()


@dataclass
class SubmitResult:
    returncode: int
    tail: list[str]  # spark-submit's last output lines (the driver's stderr included)

    @property
    def reason(self) -> str:
        """The runner's one-line ``statekeeper: ...`` message; the driver JVM's crash and its
        report when it crashed (the runner, spark-submit's child, then has no one to print to);
        else ""."""
        for line in reversed(self.tail):
            if "statekeeper:" in line:
                return line[line.index("statekeeper:") :].strip()
        for i, line in enumerate(self.tail[:-1]):
            if CRASH_REPORT_LINE in line:  # the JVM's banner: the report's path on the next line
                report = self.tail[i + 1].lstrip("#").strip()
                return f"the driver JVM crashed (its report: {report}); run again to go on"
        return ""


# What a crashing JVM prints before the path of its report (HotSpot's banner on stdout).
CRASH_REPORT_LINE = "An error report file with more information is saved as:"


class SparkJobsSubmitHook(BaseHook):
    """spark-submit of ``python -m spark_jobs ARGS`` through a Spark connection.

    ``run`` waits for it and keeps the end of its output; ``launch`` starts it in its own session
    (a continuous driver outlives the task that launched it) and returns its pid. We own the
    process: ``pid`` is spark-submit's, and ``kill`` ends it.
    """

    conn_name_attr = "conn_id"
    default_conn_name = "spark_default"
    hook_name = "Statekeeper spark-submit"
    TAIL_LINES = 200

    def __init__(self, conn_id: str = default_conn_name, name: str = "statekeeper") -> None:
        super().__init__()
        self.conn_id = conn_id
        self.name = name
        self._proc: subprocess.Popen[Any] | None = None

    def get_conn(self) -> SparkTarget:
        try:
            conn = self.get_connection(self.conn_id)
        except AirflowNotFoundException:
            raise BadSparkConnection(
                f"connection {self.conn_id} is not defined; set it (e.g. "
                'AIRFLOW_CONN_SPARK_DEFAULT=\'{"conn_type": "spark", "host": "local[2]"}\')'
            ) from None
        return SparkTarget.from_connection(conn)

    def command(
        self, args: list[str], env: dict[str, str], quick_compiler: bool = False
    ) -> list[str]:
        from spark_jobs.contract.jvm import jar_paths
        from statekeeper.package import spark_jobs_zip

        return self.get_conn().command(
            application(),
            args,
            name=self.name,
            py_files=spark_jobs_zip(),
            jars=",".join(jar_paths()),
            path=env["PATH"],
            quick_compiler=quick_compiler,
        )

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def run(self, args: list[str], quick_compiler: bool = False) -> SubmitResult:
        """spark-submit ``args`` and wait; ``quick_compiler``: the driver JVM gets the quick
        compiler only (:func:`spark_jobs.contract.jvm.quick_compiler`)."""
        env = cli_env()
        cmd = self.command(args, env, quick_compiler)
        self.log.info("running: %s", " ".join(cmd))
        tail: deque[str] = deque(maxlen=self.TAIL_LINES)
        self._proc = subprocess.Popen(
            cmd,
            cwd=str(paths.project_root()),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",  # a log line in a stray encoding must not end the task
        )
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            tail.append(line.rstrip())
            self.log.info("%s", line.rstrip())
        return SubmitResult(self._proc.wait(), list(tail))

    def launch(self, args: list[str], log_path: Path) -> int:
        env = cli_env()
        cmd = self.command(args, env)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                cmd,
                cwd=str(paths.project_root()),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # survives the task: a retry must find it, not replace it
            )
        self._proc = proc
        self.log.info(
            "launched detached driver pid %s: %s; log %s", proc.pid, " ".join(cmd), log_path
        )
        return proc.pid

    def kill(self) -> None:
        """SIGKILL spark-submit while it runs (its Python driver is stopped by the caller)."""
        if self._proc is not None and self._proc.poll() is None:
            self.log.info("killing spark-submit pid %s", self._proc.pid)
            self._proc.kill()
