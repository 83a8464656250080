"""Kafka without a broker: URIs, secrets kept out of what is shown, the lag arithmetic, the health
warning, and validate reading a checkpoint's Kafka offsets (synthetic checkpoints, no Spark)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from spark_jobs.checkpoints.synthetic import make_checkpoint
from spark_jobs.checkpoints.validate import validate_checkpoint
from spark_jobs.contract.errors import UserError
from spark_jobs.contract.kafka import parse
from spark_jobs.contract.lag import source_lag
from spark_jobs.contract.spec import load_spec, parse_spec
from spark_jobs.io.sources import check_input
from spark_jobs.kafka import source
from statekeeper.health import Thresholds, assess

pytestmark = pytest.mark.unit


def test_uris_parse_and_malformed_ones_are_one_line_errors():
    u = parse("kafka://a.example:9092,10.0.0.2:9093/click.stream-1")
    assert (u.bootstrap, u.topic) == ("a.example:9092,10.0.0.2:9093", "click.stream-1")
    for bad in (
        "kafka://host/t",
        "kafka://h:1/",
        "kafka://h:1",
        "kafka://h:1/a/b",
        "kafka://h:x/t",
    ):
        with pytest.raises(UserError) as err:
            parse(bad)
        assert "\n" not in str(err.value)


def test_check_input_takes_a_kafka_uri_without_looking_for_a_folder():
    check_input("kafka://127.0.0.1:9/not-there", "sessions")  # no broker, no folder: fine
    with pytest.raises(UserError, match="kafka://HOST:PORT"):
        check_input("kafka://127.0.0.1/t", "sessions")


def test_secrets_are_passed_through_but_never_shown(monkeypatch):
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required password="hunter2";'
    raw = {
        "inputs": {"clickstream": "kafka://broker:9093/clicks"},
        "output": "o",
        "checkpoint": "c",
        "watermark": "10 minutes",
        "max_offsets_per_trigger": 500,
        "kafka_options": {
            "security.protocol": "SASL_SSL",
            "sasl.jaas.config": "${SK_JAAS}",
            "ssl.truststore.password": "s3cret",
        },
    }
    spec = parse_spec(raw, "spec.yaml", default_name="sessions")
    monkeypatch.setenv("SK_JAAS", jaas)
    opts = source.consumer_options(spec, spec.input)
    assert opts["kafka.sasl.jaas.config"] == jaas and opts["kafka.security.protocol"] == "SASL_SSL"
    shown = json.dumps(spec.to_dict()) + repr(spec)
    assert "hunter2" not in shown and "s3cret" not in shown and "SASL_SSL" in shown
    assert spec.max_offsets_per_trigger == 500 and spec.fail_on_data_loss
    monkeypatch.delenv("SK_JAAS")
    with pytest.raises(UserError, match="SK_JAAS"):
        source.consumer_options(spec, spec.input)


def test_a_multi_input_job_takes_one_topic_per_kind():
    spec = replace(load_spec("order_payments"), kafka_clusters=("h:1",))  # its spec names h:1
    with pytest.raises(UserError, match="KIND=kafka://"):
        spec.with_overrides(input="kafka://h:1/orders")
    two = spec.with_overrides(input=["orders=kafka://h:1/o", "payments=kafka://h:1/p"])
    assert two.inputs == {"orders": "kafka://h:1/o", "payments": "kafka://h:1/p"}


SECURED = {
    "inputs": {"clickstream": "kafka://b-1.example:9096,b-2.example:9096/clicks"},
    "output": "o",
    "checkpoint": "c",
    "watermark": "10 minutes",
    "kafka_options": {"security.protocol": "SASL_SSL", "sasl.jaas.config": "x"},
}


def test_a_run_time_input_may_name_another_topic_but_never_another_cluster():
    spec = parse_spec(SECURED, "spec.yaml", default_name="sessions")
    # the same HOST:PORT set, in any order and case: another topic of the spec's own cluster
    moved = spec.with_overrides(input="kafka://B-2.example:9096,b-1.example:9096/clicks-replay")
    assert moved.inputs == {
        "clickstream": "kafka://B-2.example:9096,b-1.example:9096/clicks-replay"
    }
    for elsewhere in (
        "kafka://evil.example:9096/clicks",  # someone's own broker
        "kafka://b-1.example:9096/clicks",  # a part of the set is another set
        "kafka://b-1.example:9096,b-2.example:9096,evil.example:9096/clicks",
        "clickstream=kafka://evil.example:9096/clicks",
    ):
        with pytest.raises(UserError, match="never another cluster") as err:
            spec.with_overrides(input=elsewhere)
        assert "\n" not in str(err.value) and "b-1.example:9096,b-2.example:9096" in str(err.value)
    # a spec that reads a folder names no cluster: no Kafka input at run time at all
    with pytest.raises(UserError, match="names no Kafka cluster"):
        load_spec("sessions").with_overrides(input="kafka://127.0.0.1:9092/clicks")
    with pytest.raises(UserError, match="names no Kafka cluster"):
        load_spec("order_payments").with_overrides(
            input=["orders=kafka://h:1/o", "payments=kafka://h:1/p"]
        )


def test_kafka_options_go_only_to_a_cluster_the_spec_names_and_the_defaults_yield_to_them():
    spec = parse_spec(SECURED, "spec.yaml", default_name="sessions")
    own = "kafka://b-2.example:9096,b-1.example:9096/other"
    opts = source.consumer_options(spec, own)
    assert opts["kafka.sasl.jaas.config"] == "x"
    assert opts["kafka.isolation.level"] == "read_committed"  # aborted transactions stay out
    assert opts["kafka.fetch.max.wait.ms"] == "10"  # not Kafka's 500 ms wait per task
    # a spec put together in code (not through overrides) still cannot send them elsewhere
    rogue = replace(spec, inputs={"clickstream": "kafka://evil.example:9096/clicks"})
    with pytest.raises(UserError, match="never another cluster"):
        source.consumer_options(rogue, rogue.input)
    # without options there is nothing to leak; the spec may still say read_uncommitted
    plain = replace(
        rogue, kafka_options={"isolation.level": "read_uncommitted", "fetch.max.wait.ms": "500"}
    )
    named = source.consumer_options(
        replace(plain, kafka_clusters=("evil.example:9096",)), plain.input
    )
    assert named["kafka.isolation.level"] == "read_uncommitted"
    assert named["kafka.fetch.max.wait.ms"] == "500"


def test_a_changed_cluster_or_topic_id_is_one_line_with_a_fix():
    from spark_jobs.kafka.ids import refusal

    spec = parse_spec(SECURED, "spec.yaml", default_name="sessions")
    bound = {"cluster_id": "C1", "topic": "clicks", "topic_id": "T1"}
    assert refusal(spec, "clickstream", bound, dict(bound)) is None
    assert refusal(spec, "clickstream", {}, dict(bound)) is None  # nothing recorded yet
    assert refusal(spec, "clickstream", bound, {**bound, "topic_id": None}) is None  # deleted
    topic = refusal(spec, "clickstream", bound, {**bound, "topic_id": "T2"})
    assert topic and "\n" not in topic and "re-created" in topic and "T1" in topic
    assert "--new-checkpoint-for-existing-table" in topic and "new --checkpoint" in topic
    cluster = refusal(spec, "clickstream", bound, {**bound, "cluster_id": "C2", "topic_id": "T9"})
    assert cluster and "cluster C2" in cluster and "original cluster" in cluster


def _progress(latest: dict, end: dict) -> dict:
    return {
        "batchId": 3,
        "numInputRows": 10,
        "timestamp": "2026-03-15T12:00:00Z",
        "sources": [
            {"description": "KafkaV2[Subscribe[t]]", "latestOffset": latest, "endOffset": end},
            {
                "description": "FileStreamSource",
                "latestOffset": None,
                "endOffset": {"logOffset": 4},
            },
        ],
    }


def test_lag_is_latest_minus_processed_per_partition_and_files_have_none():
    rec = _progress({"t": {"0": 10, "1": 7, "2": 5}}, {"t": {"0": 4, "1": 7, "2": 5}})
    assert source_lag(rec) == {"t": {"behind": 6, "partitions": {"0": 6, "1": 0, "2": 0}}}
    assert source_lag({"sources": [{"latestOffset": None, "endOffset": {"logOffset": 4}}]}) == {}


def test_health_carries_the_lag_and_warns_when_it_keeps_growing():
    recs = [_progress({"t": {"0": 10 * i}}, {"t": {"0": 5 * i}}) for i in range(1, 5)]
    h = assess(recs, True, Thresholds(), now=1.0, started_at=None)
    assert h.lag == {"t": 20}
    assert any(w.startswith("falling behind") for w in h.warnings)
    steady = [_progress({"t": {"0": 10 * i}}, {"t": {"0": 10 * i}}) for i in range(1, 5)]
    h = assess(steady, True, Thresholds(), now=1.0)
    assert h.lag == {"t": 0} and not any(w.startswith("falling") for w in h.warnings)


def _kafka_offsets(root: Path, line: str) -> None:
    for f in (root / "offsets").iterdir():
        version, meta, _ = f.read_text().split("\n", 2)
        f.write_text(f"{version}\n{meta}\n{line}")


def test_validate_reads_kafka_offsets_and_catches_a_changed_source(tmp_path):
    ckpt = make_checkpoint(tmp_path / "ckpt", batches=3, partitions=4)
    on_kafka = replace(
        load_spec("sessions"),
        shuffle_partitions=4,
        inputs={"clickstream": "kafka://127.0.0.1:9092/clicks"},
    )
    codes = {f.code for f in validate_checkpoint(str(ckpt), on_kafka).findings}
    assert "SOURCE_CHANGED" in codes  # written from a folder, now pointed at a topic
    _kafka_offsets(ckpt, json.dumps({"clicks": {"0": 5, "1": 6, "2": 7}}))
    assert not {f.code for f in validate_checkpoint(str(ckpt), on_kafka).findings} & {
        "SOURCE_CHANGED",
        "KAFKA_OFFSETS_UNREADABLE",
    }
    other_topic = replace(on_kafka, inputs={"clickstream": "kafka://127.0.0.1:9092/other"})
    found = {f.code: f for f in validate_checkpoint(str(ckpt), other_topic).findings}
    assert "clicks" in found["SOURCE_CHANGED"].message
    _kafka_offsets(ckpt, json.dumps({"clicks": {"0": "x"}}))
    codes = {f.code for f in validate_checkpoint(str(ckpt), on_kafka).findings}
    assert "KAFKA_OFFSETS_UNREADABLE" in codes


def test_the_backfill_form_checks_a_kafka_input_before_anything_runs(tmp_path):
    from statekeeper.backfill import BadBackfillParams, plan_backfill

    with pytest.raises(BadBackfillParams, match="kafka://HOST:PORT"):
        plan_backfill({"job": "sessions", "input": "kafka://nohost/t", "mode": "append"}, tmp_path)
    # a cluster the job's spec does not name is refused before anything dials it
    with pytest.raises(BadBackfillParams, match="input: .*never another cluster"):
        plan_backfill(
            {"job": "sessions", "input": "kafka://127.0.0.1:9/t", "mode": "append"}, tmp_path
        )
    with pytest.raises(BadBackfillParams, match="one topic per input"):
        plan_backfill(
            {"job": "order_payments", "input": "kafka://h:1/t", "mode": "append"}, tmp_path
        )
