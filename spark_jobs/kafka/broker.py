"""The local single-node Kafka broker for development and tests (``python -m spark_jobs kafka``).

KRaft, combined broker and controller, bound to 127.0.0.1, run from the jars ``make setup``
cached (``.cache/kafka-broker``) in its own JVM: ``kafka.tools.StorageTool format --standalone``
once, then ``kafka.Kafka server.properties``. Everything it keeps is under one home folder
(``<data>/kafka`` by default): ``server.properties``, ``logs/`` (the topics), ``broker.pid`` and
``broker.log``. The controller's port is chosen once, at format time, and kept: the quorum's
voter record names it.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from spark_jobs.contract import paths
from spark_jobs.contract.errors import UserError
from spark_jobs.runtime import jars

DEFAULT_PORT = 9092
HOST = "127.0.0.1"
START_TIMEOUT = 90.0  # seconds; ~5 s on an idle machine, far more when Spark jobs share the cores
STOP_TIMEOUT = 30.0
PID_FILE = "broker.pid"
LOG_FILE = "broker.log"
PROPS_FILE = "server.properties"
JVM_OPTS = ("-Xms128m", "-Xmx512m", "-XX:+UseSerialGC")  # a dev broker on a shared 2-core box


@dataclass(frozen=True)
class Status:
    running: bool
    port: int | None = None
    pid: int | None = None
    home: str = ""

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    def line(self) -> str:
        if self.running:
            return f"kafka running at {self.bootstrap} (pid {self.pid}, data {self.home})"
        return f"kafka stopped (data {self.home})"


def _home(home: Path | None) -> Path:
    return Path(home) if home is not None else paths.kafka_dir()


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=1.0):
            return True
    except OSError:
        return False


def _read_pid(home: Path) -> dict | None:
    p = home / PID_FILE
    try:
        return dict(json.loads(p.read_text()))
    except (OSError, ValueError):
        return None


def _is_ours(info: dict, home: Path) -> bool:
    """The pid file's process is alive, is the broker started for this home, and is the same
    process (start time): a recycled pid after a reboot or crash is not mistaken for it."""
    import psutil

    try:
        proc = psutil.Process(int(info["pid"]))
        cmd = proc.cmdline()
        same_start = abs(proc.create_time() - float(info["started"])) < 1.0
    except (psutil.Error, KeyError, TypeError, ValueError):
        return False
    return same_start and "kafka.Kafka" in cmd and str(home / PROPS_FILE) in cmd


def status(home: Path | None = None) -> Status:
    h = _home(home)
    info = _read_pid(h)
    if info and _is_ours(info, h):
        return Status(True, int(info["port"]), int(info["pid"]), str(h))
    return Status(False, home=str(h))


def _properties(home: Path, port: int, controller_port: int) -> str:
    return "\n".join(
        [
            "# Written by `python -m spark_jobs kafka up`: a single-node KRaft dev broker on loopback.",
            "process.roles=broker,controller",
            "node.id=1",
            f"controller.quorum.bootstrap.servers={HOST}:{controller_port}",
            f"listeners=PLAINTEXT://{HOST}:{port},CONTROLLER://{HOST}:{controller_port}",
            f"advertised.listeners=PLAINTEXT://{HOST}:{port}",
            "controller.listener.names=CONTROLLER",
            "inter.broker.listener.name=PLAINTEXT",
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            f"log.dirs={home / 'logs'}",
            "num.partitions=3",
            "offsets.topic.replication.factor=1",
            "offsets.topic.num.partitions=3",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "share.coordinator.state.topic.replication.factor=1",
            "share.coordinator.state.topic.min.isr=1",
            "group.initial.rebalance.delay.ms=0",
            "auto.create.topics.enable=false",
            "",
        ]
    )


def _controller_port(props: Path) -> int | None:
    if not props.is_file():
        return None
    for line in props.read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "controller.quorum.bootstrap.servers":
            return int(value.rsplit(":", 1)[1])
    return None


def _java(classpath: str, home: Path) -> list[str]:
    log_conf = paths.project_root() / "include" / "kafka" / "log4j2.properties"
    return [
        "java",
        *JVM_OPTS,
        f"-Dlog4j2.configurationFile={log_conf}",
        f"-Dkafka.logs.dir={home}",
        "-cp",
        classpath,
    ]


def cluster_id() -> str:
    """A random KRaft cluster id, as ``kafka-storage random-uuid`` makes one: 16 random bytes in
    URL-safe base64, never starting with ``-`` (the storage tool would read it as an option, and
    one id in 64 did: "argument --cluster-id/-t: expected one argument")."""
    while True:
        made = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not made.startswith("-"):
            return made


def _format(classpath: str, home: Path, props: Path) -> None:
    cmd = [
        *_java(classpath, home),
        "kafka.tools.StorageTool",
        "format",
        "--standalone",
        "-t",
        cluster_id(),
        "-c",
        str(props),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise UserError(f"formatting the Kafka broker's storage in {home} failed: {tail[0]}")


def up(
    port: int = DEFAULT_PORT, home: Path | None = None, timeout: float = START_TIMEOUT
) -> Status:
    """Start the broker and return once it answers Kafka requests; a no-op when it runs."""
    h = _home(home)
    now = status(h)
    if now.running:
        if now.port != port:
            raise UserError(
                f"the local Kafka broker already runs at {now.bootstrap}; "
                "`python -m spark_jobs kafka down` first to move it"
            )
        return now
    classpath = jars.broker_classpath()
    if _accepts(port):
        raise UserError(f"port {port} on {HOST} is taken by another program; pass --port")
    h.mkdir(parents=True, exist_ok=True)
    props = h / PROPS_FILE
    formatted = (h / "logs" / "meta.properties").is_file()
    controller = _controller_port(props) if formatted else None
    if controller is None or _accepts(controller):
        if formatted:
            raise UserError(
                f"the local broker's controller port is missing or taken; delete {h} to start "
                "afresh (its topics are lost)"
            )
        controller = free_port()
    props.write_text(_properties(h, port, controller))
    if not formatted:
        _format(classpath, h, props)
    log = h / LOG_FILE
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [*_java(classpath, h), "kafka.Kafka", str(props)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C in the shell that started it does not stop it
        )
    import psutil

    started = psutil.Process(proc.pid).create_time()
    (h / PID_FILE).write_text(json.dumps({"pid": proc.pid, "port": port, "started": started}))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            (h / PID_FILE).unlink(missing_ok=True)
            raise UserError(f"the Kafka broker exited with code {proc.returncode}; see {log}")
        if _accepts(port) and _answers(port):
            return Status(True, port, proc.pid, str(h))
        time.sleep(0.5)
    _stop_pid(proc.pid)
    (h / PID_FILE).unlink(missing_ok=True)
    raise UserError(f"the Kafka broker did not accept connections within {timeout:g} s; see {log}")


def _answers(port: int) -> bool:
    """A bound socket is not a ready broker: ask it for metadata, as any client would."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": f"{HOST}:{port}", "log_level": 0})
    try:
        return len(admin.list_topics(timeout=3).brokers) > 0
    except KafkaException:  # the broker is still starting: not ready yet
        return False


def _stop_pid(pid: int, timeout: float = STOP_TIMEOUT) -> None:
    import psutil

    try:
        proc = psutil.Process(pid)
        proc.send_signal(signal.SIGTERM)  # a controlled shutdown flushes the topics' logs
        proc.wait(timeout)
    except psutil.NoSuchProcess:
        return
    except psutil.TimeoutExpired:
        os.kill(pid, signal.SIGKILL)
        psutil.Process(pid).wait(10)


def down(home: Path | None = None) -> Status:
    """Stop the broker this home started (if it runs) and forget its pid; topics are kept."""
    h = _home(home)
    now = status(h)
    if now.running and now.pid is not None:
        _stop_pid(now.pid)
    (h / PID_FILE).unlink(missing_ok=True)
    return Status(False, home=str(h))
