"""``make airflow``: Airflow standalone (api-server, scheduler, dag-processor, triggerer) on
http://localhost:8080 with this checkout's DAGs, SQLite under the data folder, local Spark.
The login (user ``admin``) and its generated password are printed in the log on start."""

from __future__ import annotations

import sys

from scripts.local_airflow import airflow, home


def main() -> int:
    h = home()
    print(f"Airflow home: {h}; open http://localhost:8080 (user admin; password in the log below)")
    return airflow(h, "standalone").returncode


if __name__ == "__main__":
    sys.exit(main())
