"""The spark-submit command Statekeeper builds itself from a Spark connection (not the provider's
private builder): the master URL as the provider documents it, the package, jars and run
arguments, and one-line refusals for a connection it cannot honour. Real Connection objects and
the venv's real spark-submit; nothing is submitted."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit


def _conn(host: str, port: int | None = None, conn_type: str = "spark", **extra: str):
    from airflow.sdk import Connection

    return Connection(
        conn_id="spark_default", conn_type=conn_type, host=host, port=port, extra=json.dumps(extra)
    )


@pytest.mark.parametrize(
    ("conn", "master"),
    [
        (_conn("local[2]"), "local[2]"),  # the embedded default
        (
            _conn("spark://spark-master", 7077, **{"deploy-mode": "client"}),
            "spark://spark-master:7077",
        ),
        (_conn("spark-master", 7077), "spark://spark-master:7077"),  # the scheme from conn_type
        (_conn("yarn"), "yarn"),
        (_conn("k8s://https://api.example", 6443), "k8s://https://api.example:6443"),
    ],
)
def test_the_master_url_comes_from_the_connection(conn, master):
    from statekeeper.spark_submit import SparkTarget

    assert SparkTarget.from_connection(conn).master == master


def test_the_command_ships_the_package_and_jars_and_ends_with_the_run_arguments(
    monkeypatch, tmp_path
):
    from spark_jobs.contract import jvm
    from statekeeper.spark_submit import SparkTarget, application

    monkeypatch.setenv("STATEKEEPER_DATA", str(tmp_path))  # a driver's crash report goes there
    monkeypatch.setattr(jvm, "java_options", lambda: "-XX:SharedArchiveFile=/c/d.jsa")
    monkeypatch.setenv(jvm.EXTRA, "-XX:TieredStopAtLevel=1")  # a deployment's own, after it

    target = SparkTarget.from_connection(_conn("k8s://https://api", 6443, namespace="jobs"))
    path = str(Path(sys.executable).parent)  # the venv's bin: pyspark's spark-submit
    args = ["run", "sessions", "--checkpoint", "/data/checkpoints/sessions"]

    def command(**more: bool) -> list[str]:
        return target.command(
            application(),
            args,
            name="statekeeper-sessions",
            py_files="/z.zip",
            jars="/a.jar,/b.jar",
            path=path,
            **more,
        )

    cmd = command()
    assert Path(cmd[0]) == Path(path) / "spark-submit" and os.access(cmd[0], os.X_OK)
    flags = dict(zip(cmd[1:-5:2], cmd[2:-5:2], strict=True))
    assert flags == {
        "--master": "k8s://https://api:6443",
        "--name": "statekeeper-sessions",
        "--conf": "spark.kubernetes.namespace=jobs",
        "--deploy-mode": "client",
        "--py-files": "/z.zip",
        "--jars": "/a.jar,/b.jar",
        # the driver runs here
        "--driver-java-options": f"-XX:ErrorFile={tmp_path}/jvm-crashes/hs_err_pid%p.log "
        "-XX:SharedArchiveFile=/c/d.jsa -XX:TieredStopAtLevel=1",
    }
    assert cmd[-5:] == [application(), *args]
    monkeypatch.setattr(jvm, "java_options", lambda: "")  # none made, none set: no option
    monkeypatch.setattr(jvm, "crash_report_option", lambda: "")
    monkeypatch.delenv(jvm.EXTRA)
    cmd = command()
    assert "--driver-java-options" not in cmd
    cmd = command(quick_compiler=True)  # a short run's driver
    assert cmd[cmd.index("--driver-java-options") + 1] == jvm.QUICK_COMPILER
    assert application().endswith("spark_jobs/__main__.py") and Path(application()).is_file()


@pytest.mark.parametrize(
    ("extra", "refused"),
    [
        (
            {"deploy-mode": "cluster"},
            "deploy-mode 'cluster'; Statekeeper's driver runs in client mode",
        ),
        ({"spark-binary": "/bin/sh"}, "spark-binary '/bin/sh' is not one of spark-submit"),
        ({"principal": "me@REALM"}, "extra principal is not passed on by Statekeeper's submit"),
    ],
)
def test_a_connection_it_cannot_honour_is_refused_in_one_line(extra, refused):
    from statekeeper.spark_submit import BadSparkConnection, SparkTarget

    with pytest.raises(BadSparkConnection) as err:
        SparkTarget.from_connection(_conn("spark://m", 7077, **extra))
    assert refused in str(err.value) and "\n" not in str(err.value)


def test_a_missing_spark_submit_is_named(tmp_path):
    from statekeeper.spark_submit import BadSparkConnection, SparkTarget

    with pytest.raises(BadSparkConnection, match="spark-submit is not on PATH"):
        SparkTarget("local[2]").command(
            "app.py", [], name="n", py_files="", jars="", path=str(tmp_path)
        )


def test_the_runners_reason_is_the_last_statekeeper_line():
    from statekeeper.hooks import SubmitResult

    tail = [
        "WARN something",
        "statekeeper: first",
        "INFO x",
        "  statekeeper: checkpoint in use",
        "bye",
    ]
    assert SubmitResult(3, tail).reason == "statekeeper: checkpoint in use"
    assert SubmitResult(1, ["java.lang.OutOfMemoryError"]).reason == ""
    crashed = [  # HotSpot's banner, as a driver JVM that crashed printed it (its runner's gone)
        "#  SIGSEGV (0xb) at pc=0x00007fc04898ff14 (sent by kill), pid=14991, tid=14991",
        "# An error report file with more information is saved as:",
        "# /srv/statekeeper/.data/jvm-crashes/hs_err_pid14991.log",
        "#",
        "# If you would like to submit a bug report, please visit:",
    ]
    assert SubmitResult(134, crashed).reason == (
        "the driver JVM crashed (its report: /srv/statekeeper/.data/jvm-crashes/"
        "hs_err_pid14991.log); run again to go on"
    )


def test_a_planned_catch_up_with_little_to_read_is_submitted_with_the_quick_compiler(tmp_path):
    from statekeeper.submit import quick_compiler

    land = tmp_path / "land"
    land.mkdir()
    (land / "a.json").write_text('{"x": 1}\n')
    planned = {
        "arguments": ["run", "sessions"],
        "checkpoint": str(tmp_path / "ck"),  # none yet: the run reads the whole folder
        "table": str(tmp_path / "out"),
        "inputs": [str(land)],
        "available_now": True,
    }
    assert quick_compiler(planned)
    assert not quick_compiler({**planned, "available_now": False})  # a continuous run
    assert not quick_compiler({**planned, "inputs": ["kafka://localhost:9092/t"]})
    old = {k: v for k, v in planned.items() if k not in ("inputs", "available_now")}
    assert not quick_compiler(old)  # deferred by an earlier release: as before
