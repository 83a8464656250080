"""docker-compose.yaml, checked as far as it can be without a Docker engine: it parses, has every
service with a healthcheck, the shared volumes, and the Spark connection wiring."""

import json
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
AIRFLOW = (
    "airflow-init",
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
)


@pytest.fixture(scope="module")
def compose():
    return yaml.safe_load((ROOT / "docker-compose.yaml").read_text())


def test_services_and_healthchecks(compose):
    services = compose["services"]
    assert set(services) == {"postgres", *AIRFLOW, "spark-master", "spark-worker", "kafka"}
    for name, svc in services.items():
        if name != "airflow-init":
            assert "healthcheck" in svc and svc["healthcheck"]["test"], name
    for name in AIRFLOW[1:]:
        deps = services[name]["depends_on"]
        assert deps["airflow-init"]["condition"] == "service_completed_successfully"
        assert deps["postgres"]["condition"] == "service_healthy"
    assert services["spark-worker"]["depends_on"]["spark-master"]["condition"] == "service_healthy"


def test_shared_volumes_and_connection_wiring(compose):
    services = compose["services"]
    for name in (*AIRFLOW, "spark-master", "spark-worker"):
        assert "statekeeper-data:/data" in services[name]["volumes"], name
    env = services["airflow-scheduler"]["environment"]
    conn = json.loads(env["AIRFLOW_CONN_SPARK_DEFAULT"])
    assert (conn["conn_type"], conn["host"], conn["port"]) == (
        "spark",
        "spark://spark-master",
        7077,
    )
    assert "--port 7077" in " ".join(services["spark-master"]["command"])
    assert "spark://spark-master:7077" in " ".join(services["spark-worker"]["command"])
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].endswith("@postgres/airflow")
    assert env["STATEKEEPER_DATA"] == "/data"
    assert set(compose["volumes"]) == {"postgres-db", "statekeeper-data", "kafka-data"}


def test_image_bakes_the_lock_and_delta_jars():
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    assert "uv pip sync --system requirements.lock" in dockerfile
    assert "python -m spark_jobs.runtime.jars fetch" in dockerfile
    assert "openjdk-17" in dockerfile


def test_kafka_service_is_kraft_and_feeds_the_example_spec(compose):
    from spark_jobs.kafka.uri import parse
    from spark_jobs.runtime.spec import parse_spec

    kafka = compose["services"]["kafka"]
    assert kafka["image"].startswith("apache/kafka:")
    env = kafka["environment"]
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"  # KRaft, no ZooKeeper
    assert "PLAINTEXT://kafka:9092" in env["KAFKA_ADVERTISED_LISTENERS"]
    scheduler = compose["services"]["airflow-scheduler"]
    assert scheduler["depends_on"]["kafka"]["condition"] == "service_healthy"
    mount = next(v for v in scheduler["volumes"] if "examples/kafka" in v)
    src, dest, _mode = mount.split(":")
    assert dest == "/opt/statekeeper/include/jobs/sessions.yaml"  # replaces the folder spec
    raw = yaml.safe_load((ROOT / src).read_text())
    spec = parse_spec(raw, src)
    target = parse(spec.inputs["clickstream"])
    assert (target.bootstrap, spec.name) == ("kafka:9092", "sessions")
