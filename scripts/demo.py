"""``make demo``: sample data for every input kind, then every job's catch-up DAG and the data
quality DAG through Airflow (``airflow dags test``: SQLite, local Spark), then the tables.

Run it again and new data arrives: the catch-up runs pick up only what is new.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from scripts.local_airflow import airflow, home, migrate
from spark_jobs.contract import paths
from spark_jobs.contract.spec import load_all
from spark_jobs.generate import generate

DATA = {  # kind -> (events, keys) per demo call
    "clickstream": (20_000, 500),
    "auth": (5_000, 200),
    "service-logs": (3_000, 20),
    "orders": (2_000, 300),
    "payments": (2_000, 300),
}
# service_health is continuous (the supervisor keeps its processing-time query); the demo
# replays it with an available-now run on paths of its own, since Spark pins the time mode.
REPLAY = "service_health"


def landing(kind: str) -> Path:
    return paths.data_dir() / "landing" / kind


def replay_paths() -> dict[str, str]:
    d = paths.data_dir()
    return {
        "output": str(d / "tables" / "service_health_replay"),
        "checkpoint": str(d / "checkpoints" / "service_health_replay"),
    }


def run_dag(h: Path, dag_id: str, conf: dict | None = None) -> tuple[bool, float]:
    started = time.time()
    log = h / f"demo-{dag_id}.log"
    with open(log, "w") as fh:
        proc = airflow(
            h, "dags", "test", dag_id, "-c", json.dumps(conf or {}), stdout=fh, stderr=fh
        )
    ok = proc.returncode == 0 and "state=failed" not in log.read_text()
    took = time.time() - started
    print(f"  {dag_id:<26} {'ok' if ok else 'FAILED':<7} {took:6.0f} s   log: {log}", flush=True)
    return ok, took


def table_counts() -> list[tuple[str, int | None, int, str]]:
    """Per job: its name, output rows (None: no table yet), quarantined rows, output URI."""
    from spark_jobs.contract import delta
    from spark_jobs.runtime.session import build_session

    spark = build_session("statekeeper-demo-report")
    out = []
    for spec in load_all():
        uri = replay_paths()["output"] if spec.name == REPLAY else spec.output
        rows = spark.read.format("delta").load(uri).count() if delta.exists(uri) else None
        q = f"{uri}/_quarantine"
        bad = spark.read.format("delta").load(q).count() if delta.exists(q) else 0
        out.append((spec.name, rows, bad, uri))
    spark.stop()
    return out


def main() -> int:
    started = time.time()
    print(f"Statekeeper demo: data under {paths.data_dir()}")
    print("1. new events arrive in the landing folders")
    for kind, (events, keys) in DATA.items():
        r = generate(kind, str(landing(kind)), events, keys=keys, seed=42, bad_rate=0.01)
        print(f"  {kind:<13} {r.events:>7,} events, {r.bad:>4} bad lines -> {landing(kind)}")
    print("2. Airflow (SQLite) runs each job's catch-up DAG, then the data-quality DAG")
    h = home()
    migrate(h)
    failed = []
    for spec in load_all():
        conf = replay_paths() if spec.name == REPLAY else {}
        ok, _ = run_dag(h, f"catchup_{spec.name}", conf)
        failed += [] if ok else [spec.name]
    ok, _ = run_dag(h, "data_quality", {"jobs": [s.name for s in load_all() if s.name != REPLAY]})
    failed += [] if ok else ["data_quality"]
    print("3. the Delta tables")
    for name, rows, bad, uri in table_counts():
        shown = "missing" if rows is None else f"{rows:,} rows"
        print(f"  {name:<16} {shown:>12}   quarantined {bad:>4}   {uri}")
    print(
        f"demo took {time.time() - started:.0f} s"
        + (f"; FAILED: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
