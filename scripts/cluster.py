"""A Spark standalone cluster on this machine: one master and N workers on 127.0.0.1.

``python -m scripts.cluster up`` (``make cluster``) starts them with pyspark's own ``spark-class``
on free ports, waits (bounded) until the master's JSON status page lists every worker ALIVE,
records pids and ports under ``<data>/cluster/`` and prints the master URL; ``down``
(``make cluster-down``) stops exactly the recorded processes; ``status`` prints the master's
JSON summary. The tests use :func:`start` / :func:`stop` the same way.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from spark_jobs.contract import paths
from spark_jobs.contract.env import cli_env

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
STATE_FILE = "cluster.json"


@dataclass
class Cluster:
    url: str  # spark://127.0.0.1:PORT, what spark_default points at
    webui: str  # http://127.0.0.1:PORT, the master's status pages (JSON under /json/)
    folder: str
    pids: dict[str, int] = field(default_factory=dict)  # role -> pid (each its own session)
    worker_webuis: list[str] = field(default_factory=list)

    def master_json(self, timeout: float = 5.0) -> dict[str, Any]:
        return fetch_json(f"{self.webui}/json/", timeout)


def default_folder() -> Path:
    return paths.data_dir() / "cluster"


def spark_home() -> Path:
    """The pyspark install of this interpreter: it has ``bin/spark-class`` and the jars."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fetch_json(url: str, timeout: float = 5.0) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (our own 127.0.0.1)
        return dict(json.loads(resp.read().decode()))


def _env(folder: Path) -> dict[str, str]:
    env = cli_env()  # executors start the same interpreter as the driver
    env.update(
        SPARK_HOME=str(spark_home()),
        SPARK_LOCAL_IP="127.0.0.1",
        # The daemons only schedule; executors get their own memory from the worker's budget.
        SPARK_DAEMON_MEMORY=os.environ.get("STATEKEEPER_CLUSTER_DAEMON_MEMORY", "256m"),
        SPARK_LOG_DIR=str(folder / "logs"),
        SPARK_WORKER_DIR=str(folder / "work"),
    )
    return env


def _spawn(folder: Path, role: str, args: list[str]) -> int:
    cmd = [str(spark_home() / "bin" / "spark-class"), *args]
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    with open(folder / "logs" / f"{role}.log", "ab") as log:
        proc = subprocess.Popen(
            cmd,
            env=_env(folder),
            cwd=str(folder),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stop() ends it and its JVM together
        )
    (folder / f"{role}.pid").write_text(str(proc.pid))
    return proc.pid


def _wait(what: str, check: Any, timeout: float, pids: dict[str, int]) -> Any:
    deadline = time.time() + timeout
    last: Exception | None = None
    while time.time() < deadline:
        dead = [r for r, p in pids.items() if not _alive(p)]
        if dead:
            raise RuntimeError(f"{', '.join(dead)} exited while waiting for {what}")
        try:
            got = check()
            if got:
                return got
        # Not listening yet (OSError), or listening before it answers: a young master's web UI
        # has served its HTML page for /json/ (ValueError), and a reply can be cut short
        # (HTTPException). Either is asked again; a daemon that died is caught above.
        except (OSError, ValueError, http.client.HTTPException) as exc:
            last = exc
        time.sleep(0.5)
    raise TimeoutError(f"{what} not ready after {timeout:.0f}s ({last})")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (our own exited child not yet reaped) counts as gone.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def start(
    folder: Path | None = None,
    workers: int = 2,
    cores: int = 1,
    memory: str = "2g",
    timeout: float = 120.0,
) -> Cluster:
    """Start a master and ``workers`` workers (``cores`` / ``memory`` each); stop them all and
    raise if they are not registered within ``timeout`` seconds."""
    folder = (folder or default_folder()).resolve()
    existing = read_state(folder)
    if existing is not None and all(_alive(p) for p in existing.pids.values()):
        return existing  # `make cluster` twice: the running one
    stop(folder)
    folder.mkdir(parents=True, exist_ok=True)
    port, ui = free_port(), free_port()
    cluster = Cluster(
        url=f"spark://127.0.0.1:{port}", webui=f"http://127.0.0.1:{ui}", folder=str(folder)
    )
    try:
        cluster.pids["master"] = _spawn(
            folder,
            "master",
            [MASTER_CLASS, "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)],
        )
        _write_state(folder, cluster)
        _wait(
            "the master",
            lambda: cluster.master_json(2).get("status") == "ALIVE",
            timeout,
            cluster.pids,
        )
        for i in range(1, workers + 1):
            wui = free_port()
            cluster.worker_webuis.append(f"http://127.0.0.1:{wui}")
            cluster.pids[f"worker-{i}"] = _spawn(
                folder,
                f"worker-{i}",
                [
                    WORKER_CLASS,
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(free_port()),
                    "--webui-port",
                    str(wui),
                    "--cores",
                    str(cores),
                    "--memory",
                    memory,
                    "--work-dir",
                    str(folder / "work" / f"worker-{i}"),
                    cluster.url,
                ],
            )
            _write_state(folder, cluster)

        def all_alive() -> bool:
            ws = cluster.master_json(2).get("workers", [])
            return sum(1 for w in ws if w.get("state") == "ALIVE") >= workers

        _wait(f"{workers} workers", all_alive, timeout, cluster.pids)
    except BaseException:
        stop(folder)
        raise
    return cluster


def _write_state(folder: Path, cluster: Cluster) -> None:
    tmp = folder / f".{STATE_FILE}.tmp"
    tmp.write_text(json.dumps(asdict(cluster), indent=1))
    os.replace(tmp, folder / STATE_FILE)


def read_state(folder: Path | None = None) -> Cluster | None:
    f = (folder or default_folder()) / STATE_FILE
    if not f.is_file():
        return None
    return Cluster(**json.loads(f.read_text()))


def _ours(pid: int, folder: Path) -> bool:
    """Only a process we started: a spark-class daemon whose working folder is ``folder`` (a pid
    file left from a reboot may name someone else's process now)."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return False
    return ("deploy.master.Master" in cmd or "deploy.worker.Worker" in cmd) and cwd == folder


def stop(folder: Path | None = None, timeout: float = 30.0) -> list[str]:
    """Stop the recorded daemons (workers first), SIGTERM then SIGKILL after ``timeout``.
    Returns the roles stopped; a no-op when nothing runs."""
    folder = (folder or default_folder()).resolve()
    pid_files = sorted(folder.glob("*.pid"), key=lambda p: p.stem == "master")
    stopped = []
    for pf in pid_files:
        pid = int(pf.read_text().strip() or 0)
        if pid and _alive(pid) and _ours(pid, folder):
            os.killpg(pid, signal.SIGTERM)
            deadline = time.time() + timeout
            while _alive(pid) and time.time() < deadline:
                _reap(pid)
                time.sleep(0.2)
            if _alive(pid):
                os.killpg(pid, signal.SIGKILL)
                while _alive(pid) and time.time() < deadline + 10:
                    _reap(pid)
                    time.sleep(0.2)
            stopped.append(pf.stem)
        pf.unlink()
    (folder / STATE_FILE).unlink(missing_ok=True)
    return stopped


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass  # not our child (started by an earlier `make cluster`): init reaps it


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scripts.cluster", description=__doc__)
    ap.add_argument("action", choices=["up", "down", "status"])
    ap.add_argument("--folder", type=Path, default=None, help="pids, logs (default .data/cluster)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cores", type=int, default=1, help="cores per worker")
    ap.add_argument("--memory", default="2g", help="memory per worker (its executors' budget)")
    ap.add_argument("--timeout", type=float, default=120.0)
    a = ap.parse_args(argv)
    c: Cluster | None
    try:
        if a.action == "up":
            c = start(a.folder, a.workers, a.cores, a.memory, a.timeout)
            print(c.url)
            print(f"status: {c.webui}/json/  logs: {c.folder}/logs", file=sys.stderr)
        elif a.action == "down":
            print("stopped: " + (", ".join(stop(a.folder, a.timeout)) or "nothing was running"))
        else:
            c = read_state(a.folder)
            if c is None:
                print("statekeeper: no cluster running (make cluster)", file=sys.stderr)
                return 1
            j = c.master_json()
            workers = [(w["host"], w["state"], w["cores"], w["memory"]) for w in j["workers"]]
            print(json.dumps({"url": c.url, "status": j["status"], "workers": workers}))
    except (RuntimeError, TimeoutError, OSError) as exc:
        print(f"statekeeper: cluster {a.action} failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
