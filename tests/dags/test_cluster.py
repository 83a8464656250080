"""A real Spark standalone cluster (master + two workers, pyspark's own ``spark-class``, 127.0.0.1),
reached by the unchanged DAGs through ``spark_default`` pointed at it.

- Catch-up: ``sessions`` runs; the master's and workers' JSON status pages show the application's
  executors ran on both workers; the executors ran the venv's Python (pandas: the system Python
  has none) and Delta's jars (they wrote the Delta table); the table equals ``local[2]``'s.

One application, not two: the supervisor's continuous driver reaches a cluster through the
command this test proves (``SparkJobsSubmitHook.command``: ``spark_default``, the same driver
options; ``launch`` only detaches it), and what the supervisor adds (launch, watch, stop,
restart a killed driver, never a second one) is its own logic, independent of the master:
``test_supervisor.py`` proves it on ``local[2]``. A second application here cost about two
minutes of a quiet machine and four of a loaded CI run.
"""

from __future__ import annotations

import json

import pytest
from airflow_env import run_dags
from drivers import wait_for

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


def _executors(c: clustermod.Cluster, app_id: str) -> dict[str, int]:
    """worker web UI -> executors of ``app_id`` it ran (running or finished)."""
    out = {}
    for ui in c.worker_webuis:
        w = clustermod.fetch_json(f"{ui}/json/")
        ex = w.get("executors", []) + w.get("finishedexecutors", [])
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
    # The driver ended with the task: the master files the application as finished and every
    # core is free again (what the next run, or a relaunched continuous driver, needs).
    (done,) = wait_for(
        "the application to finish",
        lambda: [
            a for a in spark_cluster.master_json()["completedapps"] if a["id"] == apps[0]["id"]
        ],
        30,
    )
    assert done["state"] == "FINISHED", done
    wait_for(
        "every core free",
        lambda: all(w["coresused"] == 0 for w in spark_cluster.master_json()["workers"]),
        30,
    )

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
