"""Hooks: the ``spark_jobs`` command line as a subprocess, and spark-submit launched detached.

``StatekeeperCliHook`` runs the light commands (checkpoint, quality) and keeps the last line of
stderr, which is the CLI's one-line reason on failure. ``DetachedSparkSubmitHook`` builds exactly
the command the provider's ``SparkSubmitHook`` would run, but starts it in its own session so a
continuous driver outlives the Airflow task that launched it (the supervisor watches it from a
trigger instead of holding a worker slot).
"""

from __future__ import annotations

import os
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk import BaseHook

from statekeeper.env import cli_command, cli_env, project_root


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
            cwd=str(project_root()),
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


class DetachedSparkSubmitHook(SparkSubmitHook):
    """The provider's spark-submit command, started in its own session; returns its pid."""

    def launch(self, application: str, log_path: Path) -> int:
        cmd = self._build_spark_submit_command(application)
        env = dict(os.environ)
        env.update(self._env or {})
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                cmd,
                cwd=str(project_root()),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # survives the task: a retry must find it, not replace it
            )
        self.log.info("launched detached driver pid %s, log %s", proc.pid, log_path)
        return proc.pid
