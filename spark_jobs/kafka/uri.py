"""``kafka://HOST:PORT[,HOST:PORT...]/TOPIC``: the one place that reads and writes Kafka URIs."""

from __future__ import annotations

import re
from dataclasses import dataclass

from spark_jobs.contract.errors import UserError

SCHEME = "kafka://"
_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")  # Kafka's own rule for topic names
_HOST_PORT = re.compile(r"^[A-Za-z0-9.\-]+:\d{1,5}$|^\[[0-9A-Fa-f:]+\]:\d{1,5}$")


@dataclass(frozen=True)
class KafkaUri:
    bootstrap: str  # "host:port,host:port", as Kafka clients take it
    topic: str

    def __str__(self) -> str:
        return f"{SCHEME}{self.bootstrap}/{self.topic}"


def is_kafka(uri: str) -> bool:
    return str(uri).startswith(SCHEME)


def parse(uri: str) -> KafkaUri:
    """A one-line UserError for anything but ``kafka://HOST:PORT[,HOST:PORT...]/TOPIC``."""
    usage = f"{uri!r} is not kafka://HOST:PORT[,HOST:PORT...]/TOPIC"
    if not is_kafka(uri):
        raise UserError(usage)
    servers, sep, topic = uri[len(SCHEME) :].partition("/")
    hosts = [h.strip() for h in servers.split(",")]
    if not sep or not topic or not all(_HOST_PORT.match(h) for h in hosts):
        raise UserError(usage)
    if not _TOPIC.match(topic):
        raise UserError(f"{uri!r}: topic {topic!r} may use only letters, digits, '.', '_' and '-'")
    return KafkaUri(",".join(hosts), topic)


def record_source(topic: str, partition: int, offset: int) -> str:
    """How a Kafka record names itself where a file line gives its file: the quarantine's
    ``source_file`` for a bad value, so it can be found again with any Kafka tool."""
    return f"kafka://{topic}/{partition}/{offset}"
