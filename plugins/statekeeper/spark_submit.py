"""The spark-submit command line of a Statekeeper job, built from the ``spark_default`` connection.

Our own code rather than the Spark provider's hook: its command builder, process handle and log
tail are private attributes that change between provider releases, and Statekeeper needs all
three (the detached supervisor launch, the runner's exit code, its one-line reason). The
connection is read the way the provider documents it: ``host`` is the master URL (``local[2]``,
``spark://HOST`` with ``port``, ``yarn``, ``k8s://https://...``), extras ``deploy-mode``,
``queue``, ``namespace`` and ``spark-binary``.

The driver always runs where the task runs (client mode): it holds the checkpoint's writer lock,
which the two-driver guard and the supervisor read on this host.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import Any

from airflow.sdk.exceptions import AirflowFailException

from spark_jobs.contract import network, paths

SPARK_BINARIES = ("spark-submit", "spark2-submit", "spark3-submit")
# Extras of the provider's connection form that only matter for cluster-mode tracking, which
# Statekeeper never uses; any other extra would be silently dropped, so it is refused instead.
IGNORED_EXTRAS = ("rest-scheme", "rest-port", "yarn_resourcemanager_webapp_address")


class BadSparkConnection(AirflowFailException):
    """The Spark connection cannot run a Statekeeper driver: fix it; retrying does not help."""


@dataclass(frozen=True)
class SparkTarget:
    """Where spark-submit sends a job: the master URL and the few options we pass on."""

    master: str
    binary: str = "spark-submit"
    queue: str | None = None
    namespace: str | None = None

    @classmethod
    def from_connection(cls, conn: Any) -> SparkTarget:
        """A Spark connection (``conn_type``, ``host``, ``port``, ``extra_dejson``) as a target;
        a one-line ``BadSparkConnection`` for what it cannot be."""
        where = f"connection {conn.conn_id}"
        host = str(conn.host or "")
        if conn.conn_type == "spark" and host and ("://" in host or not conn.port):
            master = host  # the master URL typed in whole (local[2], spark://h, yarn, k8s://...)
        else:
            master = f"{conn.conn_type}://{host}"
        if conn.port:
            master = f"{master}:{conn.port}"
        extra = dict(conn.extra_dejson or {})
        deploy = extra.pop("deploy-mode", None) or "client"
        if deploy != "client":
            raise BadSparkConnection(
                f"{where}: deploy-mode {deploy!r}; Statekeeper's driver runs in client mode (it "
                "holds the checkpoint's lock on this host): set deploy-mode to client or remove it"
            )
        binary = str(extra.pop("spark-binary", None) or "spark-submit")
        if binary not in SPARK_BINARIES:
            raise BadSparkConnection(
                f"{where}: spark-binary {binary!r} is not one of {', '.join(SPARK_BINARIES)}"
            )
        queue, namespace = extra.pop("queue", None), extra.pop("namespace", None)
        unused = sorted(
            k for k, v in extra.items() if v not in (None, "") and k not in IGNORED_EXTRAS
        )
        if unused:
            raise BadSparkConnection(
                f"{where}: extra {', '.join(unused)} is not passed on by Statekeeper's submit "
                "(it reads deploy-mode, queue, namespace, spark-binary); remove it"
            )
        return cls(master, binary, queue or None, namespace or None)

    def command(
        self,
        application: str,
        args: list[str],
        *,
        name: str,
        py_files: str,
        jars: str,
        path: str,
        quick_compiler: bool = False,
    ) -> list[str]:
        """The spark-submit argv; the binary is looked up on ``path`` (the PATH it will run with).
        ``quick_compiler``: the driver's JVM compiles with its quick compiler only."""
        exe = shutil.which(self.binary, path=path)
        if exe is None:
            raise BadSparkConnection(
                f"{self.binary} is not on PATH ({path}); install pyspark in the workers' Python or "
                "set the connection's spark-binary"
            )
        cmd = [exe, "--master", self.master, "--name", name]
        for key, value in network.driver_confs(self.master).items():
            cmd += ["--conf", f"{key}={value}"]  # a local driver listens on loopback only
        if self.namespace:
            cmd += ["--conf", f"spark.kubernetes.namespace={self.namespace}"]
        if self.queue:
            cmd += ["--queue", self.queue]
        cmd += ["--deploy-mode", "client", "--py-files", py_files, "--jars", jars]
        from spark_jobs.contract import jvm

        # The driver runs here (client mode): it maps the class archive `make setup` made here.
        jvm_options = jvm.driver_options(quick_compiler)
        if jvm_options:
            cmd += ["--driver-java-options", jvm_options]
        return [*cmd, application, *args]


def application() -> str:
    """The script spark-submit runs: ``python -m spark_jobs`` as a file."""
    return str(paths.project_root() / "spark_jobs" / "__main__.py")
