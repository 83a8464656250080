"""docker-compose.yaml, checked as far as it can be without a Docker engine: it parses, has every
service with a healthcheck, the shared volumes, and the Spark connection wiring; no secret is in
it (each is required from the git-ignored .env that `make env` writes with random values), ports
are on 127.0.0.1, containers run as a non-root user, and the header tells the real login."""

import base64
import json
import re
from pathlib import Path

import pytest
import yaml

from scripts import make_env

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
    assert set(compose["volumes"]) == {
        "postgres-db",
        "statekeeper-data",
        "airflow-auth",
        "kafka-data",
    }


def test_image_bakes_the_lock_and_delta_jars():
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    assert "uv pip sync --system requirements.lock" in dockerfile
    assert "python -m spark_jobs.runtime.jars fetch" in dockerfile
    assert "openjdk-17" in dockerfile


REQUIRED = re.compile(r"^\$\{([A-Z0-9_]+):\?[^}]+\}$")


def test_no_secret_in_the_file_each_is_required_from_the_uncommitted_env(compose):
    text = (ROOT / "docker-compose.yaml").read_text()
    env = compose["x-airflow-common"]["environment"]
    for key in (
        "AIRFLOW__API_AUTH__JWT_SECRET",
        "AIRFLOW__API__SECRET_KEY",
        "AIRFLOW__CORE__FERNET_KEY",
    ):
        assert REQUIRED.match(env[key]), (key, env[key])
    pg = compose["services"]["postgres"]["environment"]["POSTGRES_PASSWORD"]
    assert REQUIRED.match(pg) and pg.split(":?")[0] in env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
    assert "airflow:airflow@" not in text and "change-me" not in text
    assert ".env" in (ROOT / ".gitignore").read_text().splitlines()
    example = (ROOT / ".env.example").read_text()
    names = make_env.required(ROOT / "docker-compose.yaml")
    assert set(names) >= {"POSTGRES_PASSWORD", "AIRFLOW_JWT_SECRET", "AIRFLOW_FERNET_KEY"}
    for name in names:  # documented, without a value
        assert re.search(rf"^{name}=$", example, re.M), name


def test_make_env_writes_random_secrets_once(tmp_path):
    first, second = tmp_path / "a.env", tmp_path / "b.env"
    names = make_env.write_env(first, ROOT / "docker-compose.yaml")
    make_env.write_env(second, ROOT / "docker-compose.yaml")
    a, b = (
        dict(ln.split("=", 1) for ln in f.read_text().splitlines()[1:]) for f in (first, second)
    )
    assert list(a) == names and all(len(v) >= 32 for v in a.values())
    assert all(a[n] != b[n] for n in names)  # random each time
    assert len(base64.urlsafe_b64decode(a["AIRFLOW_FERNET_KEY"])) == 32  # a valid Fernet key
    assert first.stat().st_mode & 0o077 == 0  # readable by its owner only
    with pytest.raises(SystemExit, match="exists; keeping it"):
        make_env.write_env(first, ROOT / "docker-compose.yaml")


def test_ports_on_localhost_non_root_and_the_header_tells_the_real_login(compose):
    for name, svc in compose["services"].items():
        for port in svc.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), (name, port)
        if name not in ("postgres", "kafka"):  # these images drop to their own users themselves
            assert svc.get("user") == "50000:0", name
    assert "USER 50000" in (ROOT / "docker" / "Dockerfile").read_text()
    header = "".join(
        line
        for line in (ROOT / "docker-compose.yaml").read_text().splitlines(True)
        if line.startswith("#")
    )
    assert "admin / admin" not in header and "(admin" not in header
    passwords = compose["x-airflow-common"]["environment"][
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"
    ]
    assert f"cat {passwords}" in header  # how to read the generated password
    api = compose["services"]["airflow-apiserver"]
    assert any(v.endswith(":" + str(Path(passwords).parent)) for v in api["volumes"])


def test_kafka_service_is_kraft_and_feeds_the_example_spec(compose):
    from spark_jobs.contract.kafka import parse
    from spark_jobs.contract.spec import parse_spec

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


def test_spark_rpc_is_authenticated_with_the_secret_from_env(compose):
    """Master, worker (and the executors it starts) and every driver share spark.authenticate's
    secret, required from .env like the others: never written in the file."""
    services = compose["services"]
    opts = [
        services["spark-master"]["environment"]["SPARK_DAEMON_JAVA_OPTS"],
        services["spark-worker"]["environment"]["SPARK_DAEMON_JAVA_OPTS"],
        compose["x-airflow-common"]["environment"]["SPARK_SUBMIT_OPTS"],
    ]
    for opt in opts:
        flags = dict(f.split("=", 1) for f in opt.split(" -D") if "=" in f)
        assert (
            flags["-Dspark.authenticate" if opt.startswith("-D") else "spark.authenticate"]
            == "true"
        )
        assert REQUIRED.match(flags["spark.authenticate.secret"]), opt
        assert flags["spark.authenticate.secret"].startswith("${SPARK_AUTH_SECRET:?")
    assert "SPARK_AUTH_SECRET" in make_env.required(ROOT / "docker-compose.yaml")


def test_make_env_adds_a_missing_secret_and_keeps_the_others(tmp_path):
    env = tmp_path / ".env"
    env.write_text("# old\nPOSTGRES_PASSWORD=keep-me\n")
    env.chmod(0o600)
    added = make_env.write_env(env, ROOT / "docker-compose.yaml")
    values = dict(ln.split("=", 1) for ln in env.read_text().splitlines() if "=" in ln)
    assert values["POSTGRES_PASSWORD"] == "keep-me"  # never replaced: it guards stored data
    assert "POSTGRES_PASSWORD" not in added and "SPARK_AUTH_SECRET" in added
    assert len(values["SPARK_AUTH_SECRET"]) >= 32
    with pytest.raises(SystemExit, match="exists; keeping it"):
        make_env.write_env(env, ROOT / "docker-compose.yaml")  # nothing missing: nothing to do
