"""``make airflow``: Airflow standalone (api-server, scheduler, dag-processor, triggerer) on
http://127.0.0.1:8080 with this checkout's DAGs, SQLite under the data folder, local Spark.
The login (user ``admin``) and its generated password are printed in the log on start.

The api-server listens on 127.0.0.1 only: this is a development Airflow with a printed password.
``STATEKEEPER_AIRFLOW_HOST=0.0.0.0 make airflow`` opens it to the network on purpose.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from scripts.local_airflow import _airflow_command, airflow_env, home
from spark_jobs.contract import paths

HOST_ENV = "STATEKEEPER_AIRFLOW_HOST"
DEFAULT_HOST = "127.0.0.1"


def standalone_env(h: Path) -> dict[str, str]:
    """The environment of ``airflow standalone``: the api-server binds ``$STATEKEEPER_AIRFLOW_HOST``
    (default 127.0.0.1; Airflow's own default is 0.0.0.0)."""
    return airflow_env(h, AIRFLOW__API__HOST=os.environ.get(HOST_ENV) or DEFAULT_HOST)


def main() -> int:
    h = home()
    env = standalone_env(h)
    host = env["AIRFLOW__API__HOST"]
    print(f"Airflow home: {h}; open http://{host}:8080 (user admin; password in the log below)")
    cmd = _airflow_command("standalone")
    return subprocess.run(cmd, env=env, cwd=paths.project_root(), check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
