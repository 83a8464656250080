"""``kafka://HOST:PORT[,HOST:PORT...]/TOPIC``: the one place that reads and writes Kafka URIs, and
the one rule for which clusters a job may be pointed at.

A spec's ``kafka_options`` (SASL credentials, truststore passwords) are meant for the cluster(s)
its ``inputs`` name. An input given at run time (``run --input``, a DAG's ``input`` param, the
backfill form) may therefore name another topic on such a cluster, never another cluster: anyone
who may trigger a DAG could otherwise send the job's credentials to a broker of their own, or
make the worker dial any host.

What a topic holds (:func:`partitions`, :func:`end_offsets`) is read here too, through the Python
client (confluent-kafka, imported only when called): the backfill plan on the Airflow side and
``generate --out kafka://`` on the Spark side ask the same questions of a topic, and neither
needs Spark for them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

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


def cluster_of(uri: str) -> str:
    """The cluster a ``kafka://`` URI names, comparable as a string: its HOST:PORT set, sorted,
    hosts lower-cased (DNS ignores case), so ``b:1,a:1`` and ``A:1,b:1`` are one cluster."""
    return ",".join(sorted({h.lower() for h in parse(uri).bootstrap.split(",")}))


def clusters_of(uris: Iterable[str]) -> tuple[str, ...]:
    """The clusters (:func:`cluster_of`) of the Kafka URIs among ``uris``."""
    return tuple(sorted({cluster_of(u) for u in uris if is_kafka(u)}))


def check_cluster(uri: str, named: Iterable[str], job: str) -> None:
    """A one-line UserError unless ``uri`` is on a cluster of ``named`` (the spec's own, from
    :func:`clusters_of` its inputs). A different topic on the same cluster is fine."""
    own = tuple(named)
    if cluster_of(uri) in own:
        return
    has = f"reads Kafka at {' and '.join(own)}" if own else "names no Kafka cluster in its spec"
    raise UserError(
        f"input {uri}: job {job} {has}; an input given at run time may name another topic on the "
        "spec's own cluster (the same HOST:PORT set), never another cluster (the spec's "
        "kafka_options would go with it): put that cluster in the job's spec inputs instead"
    )


def admin_client(bootstrap: str) -> Any:  # a confluent_kafka AdminClient
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})


def partitions(target: KafkaUri, timeout: float = 30.0) -> int:
    """The topic's partition count; 0 when it does not exist."""
    from confluent_kafka import KafkaException

    try:
        meta = admin_client(target.bootstrap).list_topics(topic=target.topic, timeout=timeout)
    except KafkaException as exc:
        raise UserError(f"Kafka at {target.bootstrap} does not answer: {exc}") from exc
    t = meta.topics.get(target.topic)
    if t is None or t.error is not None:
        return 0
    return len(t.partitions)


def watermarks(target: KafkaUri, timeout: float = 10.0) -> dict[str, tuple[int, int]]:
    """The topic's (oldest, end) offset per partition now (``{"0": (0, 123), ...}``): what it
    still holds; {} when it does not exist. A broker that does not answer is a
    :class:`UserError`."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    n = partitions(target, timeout)
    if not n:
        return {}
    c = Consumer(
        {
            "bootstrap.servers": target.bootstrap,
            "group.id": "statekeeper-plan",
            "enable.auto.commit": False,
            "log_level": 0,
        }
    )
    try:
        out = {}
        for p in range(n):
            low, high = c.get_watermark_offsets(TopicPartition(target.topic, p), timeout)
            out[str(p)] = (int(low), int(high))
        return out
    except KafkaException as exc:
        raise UserError(f"Kafka at {target.bootstrap} does not answer: {exc}") from exc
    finally:
        c.close()


def end_offsets(target: KafkaUri, timeout: float = 10.0) -> dict[str, int]:
    """The topic's end offset per partition now (``{"0": 123, ...}``); {} when it does not
    exist. A broker that does not answer is a :class:`UserError`."""
    return {p: end for p, (_, end) in watermarks(target, timeout).items()}
