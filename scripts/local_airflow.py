"""The embedded default's Airflow: AIRFLOW_HOME under the data folder, SQLite, this checkout's
dags and plugins, and ``spark_default`` as an env-var connection to local Spark."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from spark_jobs.contract import paths
from spark_jobs.contract.env import cli_env

SPARK_LOCAL = json.dumps({"conn_type": "spark", "host": "local[2]"})
# SQLite's busy timeout (Python's default is 5 s): several Airflow processes share the file (the
# demo's two `dags test` at a time, standalone's four); a writer waits for another's transaction
# instead of failing with "database is locked" on a loaded machine.
SQLITE_CONNECT_ARGS = {"timeout": 120}


def airflow_env(home: Path, data: Path | None = None, **extra: str) -> dict[str, str]:
    """The environment of an Airflow process on ``home``; ``data`` relocates ``.data/`` (the
    DAG tests' own folder), ``extra`` is set last."""
    root = paths.project_root()
    # Spark's environment (interpreter, PATH, STATEKEEPER_HOME), less any AIRFLOW__ setting of
    # the caller's: this home's configuration is all set here.
    env = {k: v for k, v in cli_env().items() if not k.startswith("AIRFLOW__")}
    env.update(
        AIRFLOW_HOME=str(home),
        AIRFLOW__CORE__DAGS_FOLDER=str(root / "dags"),
        AIRFLOW__CORE__PLUGINS_FOLDER=str(root / "plugins"),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=f"sqlite:///{home}/airflow.db",
        AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS="scripts.local_airflow.SQLITE_CONNECT_ARGS",
        AIRFLOW_CONN_SPARK_DEFAULT=env.get("AIRFLOW_CONN_SPARK_DEFAULT", SPARK_LOCAL),
        PYTHONPATH=os.pathsep.join([str(root), str(root / "plugins")]),
    )
    if data is not None:
        env["STATEKEEPER_DATA"] = str(data)
    env.update(extra)
    return env


def _airflow_command(*args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "airflow"), *args]


def airflow(home: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        _airflow_command(*args), env=airflow_env(home), cwd=paths.project_root(), **kw
    )


def airflow_process(home: Path, *args: str, **kw) -> subprocess.Popen:
    """``airflow ARGS`` on ``home``, started and not waited for."""
    return subprocess.Popen(
        _airflow_command(*args), env=airflow_env(home), cwd=paths.project_root(), **kw
    )


def home() -> Path:
    h = paths.data_dir() / "airflow"
    h.mkdir(parents=True, exist_ok=True)
    return h


def migrate(h: Path) -> None:
    proc = airflow(h, "db", "migrate", capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"statekeeper: airflow db migrate failed: {proc.stderr.strip().splitlines()[-1:]}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def simple_auth_env(home: Path, user: str, password: str) -> dict[str, str]:
    """Settings for the simple auth manager with one admin ``user`` and a known password."""
    passwords = home / "passwords.json"
    passwords.write_text(json.dumps({user: password}))  # the simple auth manager keeps it
    return {
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{user}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
    }


@contextmanager
def api_server(home: Path, env: dict[str, str], timeout: float = 180.0) -> Iterator[str]:
    """A real ``airflow api-server`` on 127.0.0.1 and a free port; yields its base URL. Stopped,
    with every process it started, on exit. The metadata DB must be migrated first."""
    exe = str(Path(sys.executable).parent / "airflow")
    port = free_port()
    log_path = home / "api-server.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [exe, "api-server", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=str(paths.project_root()),
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout  # generous: the machine is shared
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"api-server exited: {log_path.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base}/api/v2/monitor/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                raise RuntimeError(f"api-server not healthy after {timeout:.0f} s")
            time.sleep(1)
        yield base
    finally:  # the server and every process it started go, whatever the caller did
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def token(base: str, user: str, password: str) -> str:
    """A JWT from the simple auth manager's ``POST /auth/token``."""
    req = urllib.request.Request(
        f"{base}/auth/token",
        data=json.dumps({"username": user, "password": password}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        return str(json.loads(r.read())["access_token"])
