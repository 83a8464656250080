"""The Kafka cluster id and topic id a checkpoint reads: recorded in its binding at the first run,
compared on every later one.

A checkpoint's offsets count the records of one topic on one cluster. A topic deleted and
re-created under its name starts again at offset 0: Spark notices only while the new topic is
shorter than the stored offsets (its data-loss check); once it has grown past them, the stored
offsets point into the new topic and its first records are skipped without a word. Kafka gives
every topic a new id (a UUID) when it is created, and every cluster its own id: comparing them
tells the topic a checkpoint read from another one of the same name.

The ids are read with Kafka's Java Admin client inside the Spark driver (py4j). It is on the
driver's classpath already (kafka-clients, under Spark's Kafka source), its JVM runs anyway, and
it takes the spec's ``kafka_options`` exactly as Spark's own consumers do (JAAS configs, JKS
truststores); librdkafka (confluent-kafka, in the venv) names and reads those differently, so a
secured cluster would need its options translated, and a mistranslation would fail only there.
"""

from __future__ import annotations

from typing import Any

from spark_jobs.contract import binding
from spark_jobs.contract.errors import ExitCode, UserError
from spark_jobs.contract.kafka import is_kafka, parse
from spark_jobs.kafka.source import consumer_options

TIMEOUT_MS = 30_000  # per admin request; a broker that does not answer in time is a user error


def lookup(spark: Any, spec: Any, uri: str) -> dict[str, str | None]:
    """``{"cluster_id", "topic", "topic_id"}`` as the broker reports them now; ``topic_id`` is
    None when the topic does not exist (yet): Spark then reads nothing from it."""
    from py4j.protocol import Py4JJavaError

    target = parse(uri)
    jvm = spark.sparkContext._jvm
    props = jvm.java.util.Properties()
    for key, value in consumer_options(spec, uri).items():
        props.setProperty(key.removeprefix("kafka."), value)
    props.setProperty("bootstrap.servers", target.bootstrap)
    ms = jvm.java.util.concurrent.TimeUnit.MILLISECONDS
    admin = None
    topic_id: str | None
    try:
        admin = jvm.org.apache.kafka.clients.admin.Admin.create(props)  # refuses bad options
        cluster_id = admin.describeCluster().clusterId().get(TIMEOUT_MS, ms)
        names = jvm.java.util.Collections.singletonList(target.topic)
        try:
            found = admin.describeTopics(names).allTopicNames().get(TIMEOUT_MS, ms)
            topic_id = str(found.get(target.topic).topicId().toString())
            if topic_id == str(jvm.org.apache.kafka.common.Uuid.ZERO_UUID.toString()):
                topic_id = None  # a broker older than topic ids (Kafka 2.8): nothing to compare
        except Py4JJavaError as exc:
            if "UnknownTopicOrPartitionException" not in str(exc.java_exception):
                raise
            topic_id = None
    except Py4JJavaError as exc:
        first = str(exc.java_exception).splitlines()[0]
        raise UserError(
            f"job {spec.name}: cannot read the cluster and topic ids from Kafka at "
            f"{target.bootstrap} ({first}); check that it runs and that the spec's kafka_options "
            "are right and let this host in"
        ) from None
    finally:
        if admin is not None:
            admin.close(jvm.java.time.Duration.ofSeconds(5))
    return {
        "cluster_id": None if cluster_id is None else str(cluster_id),
        "topic": target.topic,
        "topic_id": topic_id,
    }


def refusal(spec: Any, kind: str, bound: dict[str, Any], now: dict[str, Any]) -> str | None:
    """Why a checkpoint bound to ``bound`` must not read ``kind``'s topic as it is ``now``; None
    when it may. Ids the binding lacks (an older checkpoint, a topic not created yet) pass."""
    uri = parse(spec.inputs[kind])
    was, came = bound.get("cluster_id"), now.get("cluster_id")
    topic = bound.get("topic") or uri.topic
    start = f"job {spec.name}: checkpoint {spec.checkpoint} read topic {topic}"
    if was and came and was != came:
        return (
            f"{start} on Kafka cluster {was}, but {uri.bootstrap} now answers as cluster {came} "
            "(rebuilt, or another cluster at that address): the checkpoint's offsets mean nothing "
            "there, and reading on would skip or repeat records; nothing was written. Fix: point "
            "the input back at the original cluster, or read this one with a new --checkpoint "
            "into a new --output table"
        )
    was, came = bound.get("topic_id"), now.get("topic_id")
    if bound.get("topic") == now.get("topic") and was and came and was != came:
        return (
            f"{start} with id {was}, but {uri} now has id {came}: the topic was deleted and "
            "re-created, its offsets start again at 0, so the stored offsets would skip the new "
            "topic's first records (fail_on_data_loss: false would skip them too); "
            "nothing was written. Fix: the new topic's records were never read, so read them with "
            "a new --checkpoint (it starts at the earliest offset) into a new --output table, or "
            "into this table with --new-checkpoint-for-existing-table if the job's state may "
            "start empty (open sessions, running totals); replay the old topic's unread records "
            "first if they exist elsewhere"
        )
    return None


def check_and_record(spark: Any, spec: Any) -> None:
    """Refuse (one line, exit 4) a run whose broker reports another cluster id or topic id than
    the checkpoint's binding records; record the ids the binding lacks. Runs in the driver, after
    the session is built and before the query starts, so a refused run writes nothing."""
    kafka_inputs = [k for k, u in spec.inputs.items() if is_kafka(u)]
    if not kafka_inputs:
        return
    started = binding.has_state(spec.checkpoint)
    bound = binding.kafka_ids(spec.checkpoint) if started else {}
    record = dict(bound)
    for kind in kafka_inputs:
        now = lookup(spark, spec, spec.inputs[kind])
        old = bound.get(kind) or {}
        why = refusal(spec, kind, old, now)
        if why:
            raise UserError(why, exit_code=ExitCode.UNSAFE)
        same_topic = old.get("topic") == now["topic"]
        # An id the broker does not report now (a deleted topic: Spark's data-loss check
        # speaks) is kept, so the topic that may take its name later is still told apart.
        record[kind] = {
            "cluster_id": now["cluster_id"] or old.get("cluster_id"),
            "topic": now["topic"],
            "topic_id": now["topic_id"] or (old.get("topic_id") if same_topic else None),
        }
    if record != bound:
        binding.record_kafka_ids(spec.checkpoint, record)
