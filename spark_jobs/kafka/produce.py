"""``generate --out kafka://...``: put generated lines on a topic, creating it when missing.

The Python client (confluent-kafka, librdkafka underneath) rather than Kafka's Java producer: the
generator is Python, a JVM start per call would cost seconds, and librdkafka speaks every security
protocol a real cluster asks for. Records go round-robin over the partitions by line number, so a
call spreads evenly and the same call always lays records out the same way.
"""

from __future__ import annotations

from collections.abc import Iterable

from spark_jobs.contract.errors import UserError
from spark_jobs.contract.kafka import KafkaUri, partitions
from spark_jobs.contract.kafka import admin_client as _admin

DEFAULT_PARTITIONS = 3
TIMEOUT = 30.0  # seconds for topic creation and the final flush


def ensure_topic(target: KafkaUri, n: int = DEFAULT_PARTITIONS, timeout: float = TIMEOUT) -> int:
    """Create the topic with ``n`` partitions if missing; its partition count either way."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    have = partitions(target, timeout)
    if have:
        return have
    # replication_factor -1: the cluster's default.replication.factor (1 on the local broker)
    admin = _admin(target.bootstrap)  # held until the result: a dropped client cancels it
    fut = admin.create_topics([NewTopic(target.topic, n, -1)])[target.topic]
    try:
        fut.result(timeout)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:  # lost a race: fine
            raise UserError(f"cannot create topic {target}: {exc.args[0].str()}") from exc
    return partitions(target, timeout) or n


def produce(target: KafkaUri, lines: Iterable[str], timeout: float = TIMEOUT) -> int:
    """Send each line as one record's value (no key); the count sent. Idempotent producer with
    acks=all, so a retry inside the client never writes a record twice."""
    from confluent_kafka import Producer

    n_parts = ensure_topic(target)
    errors: list[str] = []

    def on_delivery(err, _msg) -> None:  # type: ignore[no-untyped-def]
        if err is not None:
            errors.append(err.str())

    producer = Producer(
        {
            "bootstrap.servers": target.bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 20,
            "log_level": 0,
        }
    )
    sent = 0
    for i, line in enumerate(lines):
        while True:
            try:
                producer.produce(
                    target.topic, line.encode(), partition=i % n_parts, on_delivery=on_delivery
                )
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.5)
        producer.poll(0)
        sent += 1
    left = producer.flush(timeout)
    if left or errors:
        why = errors[0] if errors else f"{left} records not acknowledged within {timeout:g} s"
        raise UserError(f"producing to {target} failed: {why}")
    return sent
