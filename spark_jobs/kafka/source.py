"""Spark's Kafka source behind ``read_lines``: options from the spec, secrets kept out of logs,
and a lost-data failure turned into one line with a fix.

The spec's ``kafka_options`` are Kafka consumer properties (``security.protocol``,
``sasl.jaas.config``, ``ssl.truststore.location``...), passed through to Spark as
``kafka.<name>``; a value may name an environment variable as ``${NAME}`` so a secret lives in
the deployment, not in the spec. Nothing here logs a value whose name looks secret, and the
options go only to a cluster the spec itself names (``contract.kafka.check_cluster``).

Records are read ``read_committed``: a transactional producer's aborted records never reach the
tables (Kafka's own default, ``read_uncommitted``, hands them out like any other).
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from spark_jobs.contract.errors import UserError
from spark_jobs.contract.kafka import SCHEME, check_cluster, parse

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from spark_jobs.contract.spec import JobSpec

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# Spark's marks for a checkpoint whose next offsets are gone from the topic (its
# kafka-error-conditions.json): deleted, re-created, or aged out by retention.
DATA_LOSS_MARKS = (
    "KAFKA_DATA_LOSS",
    "Some data may have been lost",
    "LOST_TOPIC_PARTITIONS_IN_END_OFFSET",
)
# Consumer properties the source sets unless kafka_options names them itself.
# fetch.max.wait.ms: how long the broker holds a fetch that has nothing to return yet (Kafka's
# default, 500 ms). Every task of a batch pays it once: when a poll hands back records, the
# consumer at once sends the next fetch (Kafka's pipelining), which finds nothing past the batch's
# end and is held; Spark's reader then asks for the partition's offset range (ListOffsets), and
# the broker answers one connection's requests in order, so that answer waits out the hold. A
# continuous 21-record batch over 3 partitions: read stage 1.66 s of task time with 500 ms, 0.40 s
# with 50 ms; 10 ms took its batch from 1.55-1.62 s to 1.44-1.47 s (side by side, consumer debug
# log: each task's first read 57-63 ms with 50). The number of fetches does not change (two per
# task); only a poll waiting for records not yet written would repeat them, every 10 ms.
DEFAULT_OPTIONS = {"kafka.isolation.level": "read_committed", "kafka.fetch.max.wait.ms": "10"}


def _expand(name: str, value: Any, where: str) -> str:
    def env(m: re.Match[str]) -> str:
        if m.group(1) not in os.environ:
            raise UserError(
                f"{where}: kafka_options.{name} needs environment variable {m.group(1)}, "
                "which is not set"
            )
        return os.environ[m.group(1)]

    return _ENV.sub(env, str(value))


def consumer_options(spec: JobSpec, uri: str) -> dict[str, str]:
    """``kafka.<property>`` options for Spark reading ``uri``: the defaults, then the spec's
    ``kafka_options`` with ``${ENV}`` references filled in. A one-line UserError when the spec has
    options and ``uri`` is on a cluster its inputs do not name: they are never sent there."""
    if spec.kafka_options:
        check_cluster(uri, spec.kafka_clusters, spec.name)
    out = dict(DEFAULT_OPTIONS)
    for name, value in spec.kafka_options.items():
        key = name if name.startswith("kafka.") else f"kafka.{name}"
        out[key] = _expand(name, value, spec.path or f"job {spec.name}")
    return out


def read_lines(spark: SparkSession, spec: JobSpec, uri: str) -> DataFrame:
    """(value, source_file) of every record of the topic; ``source_file`` is
    ``kafka://TOPIC/PARTITION/OFFSET``. A new checkpoint starts at the earliest offsets."""
    from pyspark.sql import functions as F

    target = parse(uri)
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", target.bootstrap)
        .option("subscribe", target.topic)
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", str(spec.fail_on_data_loss).lower())
        .options(**consumer_options(spec, uri))
    )
    if spec.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", spec.max_offsets_per_trigger)
    # A null value (a tombstone) becomes an empty line, which the parse quarantines like any
    # other line that is not an event.
    source = F.concat(
        F.lit(SCHEME),
        F.col("topic"),
        F.lit("/"),
        F.col("partition").cast("string"),
        F.lit("/"),
        F.col("offset").cast("string"),
    )
    return reader.load().select(
        F.coalesce(F.col("value").cast("string"), F.lit("")).alias("value"),
        source.alias("source_file"),
    )


def data_loss_line(spec: JobSpec, text: str) -> str | None:
    """The one-line failure for a topic truncated or deleted under a job; None for others. (A
    re-created topic is refused before Spark starts, by its id: spark_jobs.kafka.ids.)"""
    if not any(m in text for m in DATA_LOSS_MARKS):
        return None
    topics = ", ".join(str(parse(u)) for u in spec.inputs.values() if u.startswith(SCHEME))
    return (
        f"job {spec.name}: Kafka no longer holds records its checkpoint has not read yet from "
        f"{topics} (truncated by retention, or deleted); nothing was written. "
        "Fix: restore the topic's records, or accept the gap by running once with "
        f"fail_on_data_loss: false in {spec.path or 'the spec'}, or start a new checkpoint"
    )
