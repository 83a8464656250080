"""A real Spark standalone cluster (master + two workers, pyspark's own ``spark-class``, 127.0.0.1),
reached by the unchanged DAGs through ``spark_default`` pointed at it.

- Catch-up: ``sessions`` runs; the master's and workers' JSON status pages show the application's
  executors ran on both workers; the executors ran the venv's Python (pandas: the system Python
  has none) and Delta's jars (they wrote the Delta table); the table equals ``local[2]``'s.
- Continuous: the supervisor DAG launches ``service_health`` (processing-time trigger) with
  executors on both workers; what had landed and a file landing while it runs are processed;
  ``action=stop`` ends the driver, its application finishes and every core is free again (what a
  restarted driver needs to get executors). Restarting a killed driver and never starting a
  second one are the supervisor's own logic, independent of the master: ``test_supervisor.py``
  proves them on ``local[2]`` (on this cluster a kill and relaunch took another ~40% of this
  test's time).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from airflow_env import run_dags
from drivers import cleanup, holder, wait_for

from scripts import cluster as clustermod
from spark_jobs.generate import generate

pytestmark = pytest.mark.dags

JOB = "sessions"  # Python state (applyInPandasWithState): proves the executors' Python


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cluster")
    try:
        yield clustermod.start(folder, workers=2, cores=1, memory="1536m", timeout=120)
    finally:
        clustermod.stop(folder)  # also after a failed start: whatever was spawned goes


def _executors(c: clustermod.Cluster, app_id: str, running: bool = False) -> dict[str, int]:
    """worker web UI -> executors of ``app_id`` it runs (``running``) or ran (running or finished)."""
    out = {}
    for ui in c.worker_webuis:
        w = clustermod.fetch_json(f"{ui}/json/")
        ex = w.get("executors", []) + ([] if running else w.get("finishedexecutors", []))
        out[ui] = sum(1 for e in ex if e.get("appid") == app_id)
    return out


def _conn(c: clustermod.Cluster) -> dict[str, str]:
    """``spark_default`` pointed at the cluster, as the env var a deployment would set."""
    host, port = c.url.rsplit(":", 1)
    conn = {
        "conn_type": "spark",
        "host": host,
        "port": int(port),
        "extra": {"deploy-mode": "client"},
    }
    return {"AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(conn)}


def rows(spark, uri: str) -> list[tuple]:
    return [tuple(r) for r in spark.read.format("delta").load(uri).orderBy("session_id").collect()]


def test_catch_up_dag_runs_on_the_two_worker_cluster_and_equals_local(
    spark_cluster, airflow_home, tmp_path, spark
):
    data = tmp_path / "data"
    landing = data / "landing" / "clickstream"
    generate("clickstream", str(landing), events=2000, keys=50, seed=21)
    (run,) = run_dags(
        airflow_home,
        [{"dag_id": f"catchup_{JOB}", "conf": {"run_quality": False}}],
        tmp_path / "cluster_dag.log",
        data=data,
        timeout=900,
        env=_conn(spark_cluster),
    )
    assert run["state"] == "success", run
    assert run["tasks"]["catch_up"] == "success", run["tasks"]
    assert set(run["tasks"].values()) <= {"success", "skipped"}, run["tasks"]  # quality: off
    log = (tmp_path / "cluster_dag.log").read_text()
    assert f"--master {spark_cluster.url}" in log  # the provider submitted to the cluster

    # The master ran the application; each worker ran at least one of its executors.
    status = spark_cluster.master_json()
    apps = [
        a
        for a in status["completedapps"] + status["activeapps"]
        if a["name"] == f"statekeeper-{JOB}"
    ]
    assert len(apps) == 1, status
    per_worker = _executors(spark_cluster, apps[0]["id"])
    assert all(n >= 1 for n in per_worker.values()) and len(per_worker) == 2, per_worker

    # The same input on local[2], in-process: the same rows.
    from spark_jobs.contract.spec import load_spec
    from spark_jobs.jobs.runner import run_job

    spec = load_spec(JOB).with_overrides(
        input=str(landing),
        output=str(tmp_path / "local_out"),
        checkpoint=str(tmp_path / "local_ck"),
    )
    run_job(spec, spark=spark)
    on_cluster = rows(spark, str(data / "tables" / JOB))
    assert on_cluster, "the cluster run wrote no sessions: the comparison would prove nothing"
    assert on_cluster == rows(spark, spec.output)


CONTINUOUS = "service_health"  # transformWithStateInPandas with timers: Python on the executors


def _apps(c: clustermod.Cluster, name: str, key: str = "activeapps") -> list[dict]:
    return [a for a in c.master_json().get(key, []) if a["name"] == name]


def _rows_read(ckpt: Path) -> int:
    """Input lines the query processed (per batch id its last progress record: a batch that is
    re-run counts once)."""
    from spark_jobs.runtime.progress import read_progress

    return sum({r["batchId"]: r["numInputRows"] for r in read_progress(str(ckpt))}.values())


def _running_on_both_workers(c: clustermod.Cluster, name: str) -> str | None:
    """The id of the running application ``name`` once each worker runs one of its executors;
    None before."""
    apps = _apps(c, name)
    if len(apps) == 1 and all(n >= 1 for n in _executors(c, apps[0]["id"], running=True).values()):
        return str(apps[0]["id"])
    return None


def test_supervised_continuous_job_runs_on_the_cluster_and_stops(
    spark_cluster, airflow_home, tmp_path
):
    landing = tmp_path / "landing" / "service-logs"
    ckpt = tmp_path / "checkpoints" / CONTINUOUS  # under the roots of data=tmp_path
    conf = {
        "trigger": "processing-time:5s",
        "poll_seconds": 1,
        "input": str(landing),
        "output": str(tmp_path / "tables" / CONTINUOUS),
        "checkpoint": str(ckpt),
    }
    # A short watch: the driver outlives the task (its own session); the next run takes over.
    supervise = {"dag_id": f"supervise_{CONTINUOUS}", "conf": {**conf, "watch_minutes": 0.1}}
    log, name, env = tmp_path / "airflow.log", f"statekeeper-{CONTINUOUS}", _conn(spark_cluster)
    driver_log = ckpt / "_statekeeper" / "driver.log"
    generate("service-logs", str(landing), events=200, seed=3)
    try:
        (first,) = run_dags(airflow_home, [supervise], log, data=tmp_path, env=env)
        assert first["state"] == "success", first
        assert first["returns"]["supervise"]["events"][0]["what"] == "launched", first
        assert f"--master {spark_cluster.url}" in log.read_text()  # submitted to the cluster

        # Its query runs with an executor on each worker, and reads what had landed ...
        wait_for(
            f"the driver's executors on both workers (driver log {driver_log})",
            lambda: _running_on_both_workers(spark_cluster, name),
            240,
        )
        # Generous: a first batch took 90-150 s when the machine's load average was 20.
        wait_for("the first 200 lines", lambda: _rows_read(ckpt) == 200, 300)
        # ... and a file landing while it runs.
        generate("service-logs", str(landing), events=100, seed=3)
        wait_for("the 100 lines landed while it ran", lambda: _rows_read(ckpt) == 300, 180)

        # stop: the driver ends, its application finishes and no executor holds a core.
        (stopped,) = run_dags(
            airflow_home,
            [{"dag_id": f"supervise_{CONTINUOUS}", "conf": {**conf, "action": "stop"}}],
            log,
            data=tmp_path,
            env=env,
        )
        assert stopped["state"] == "success", stopped
        # SIGTERM, or SIGKILL when the running batch outlasts the grace period (a loaded CI)
        result = stopped["returns"]["supervise"]["result"]
        assert result.startswith(("stopped driver", "killed driver")), stopped
        assert holder(ckpt) is None
        wait_for("the application to finish", lambda: not _apps(spark_cluster, name), 30)
        done = _apps(spark_cluster, name, "completedapps")
        assert len(done) == 1 and all(a["state"] == "FINISHED" for a in done), done
        wait_for(
            "every core free",
            lambda: all(w["coresused"] == 0 for w in spark_cluster.master_json()["workers"]),
            30,
        )
    finally:
        cleanup(ckpt)
