"""Jars fetched from Maven Central are pinned by SHA-256 in include/spark/jars.txt and
include/kafka/broker-jars.txt and checked on fetch: a jar that differs (or one nobody pinned) is
deleted and the fetch fails with one line naming it. Run on copies of the cached jars in a
project folder of the test's own (no network, no JVM)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from spark_jobs.contract import jvm, paths
from spark_jobs.contract.errors import UserError
from spark_jobs.runtime import jars

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]


def test_every_cached_jar_has_its_pinned_digest():
    spark, broker = jars.spark_list(), jars.broker_list()
    assert len(spark.pins) == len(spark.coords) == 6  # every coordinate pinned
    assert len(broker.pins) > len(broker.coords)  # its dependencies too
    for pins, folder in ((spark, paths.jars_dir()), (broker, paths.broker_jars_dir())):
        for name, digest in pins.pins.items():
            assert len(digest) == 64
            if (folder / name).is_file():  # fetched by set-up
                assert jars.sha256(folder / name) == digest, name


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A project root whose cache holds copies of the fetched jars."""
    for rel in (jvm.SPARK_LIST, jars.BROKER_LIST):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    cached = tmp_path / ".cache" / "jars"
    shutil.copytree(paths.jars_dir(), cached, ignore=shutil.ignore_patterns(".*"))
    monkeypatch.setenv("STATEKEEPER_HOME", str(tmp_path))
    return tmp_path


def test_an_altered_spark_jar_fails_the_fetch_and_is_deleted(project):
    jar = project / ".cache" / "jars" / "delta-storage-4.4.0.jar"
    with open(jar, "ab") as fh:
        fh.write(b"\0")  # one byte more than Maven Central's
    with pytest.raises(UserError) as err:
        jars.fetch_spark()
    line = str(err.value)
    assert "\n" not in line and line.startswith("jar delta-storage-4.4.0.jar has sha256:")
    assert "include/spark/jars.txt" in line
    assert not jar.exists()  # never put on a classpath


def test_an_unpinned_or_altered_broker_jar_fails_the_fetch(project):
    folder = project / ".cache" / "kafka-broker"
    shutil.copytree(ROOT / ".cache" / "kafka-broker", folder, ignore=shutil.ignore_patterns(".*"))
    pins = jars.broker_list()
    jars.check_broker(folder, pins)  # as fetched: fine
    (folder / "evil-1.0.jar").write_bytes(b"PK")
    with pytest.raises(UserError, match="jar evil-1.0.jar .* has no pin in"):
        jars.check_broker(folder, pins)
    with open(folder / "snakeyaml-2.4.jar", "ab") as fh:
        fh.write(b"\0")
    with pytest.raises(UserError, match="jar snakeyaml-2.4.jar has sha256:.* not the sha256:"):
        jars.check_broker(folder, pins)
    with pytest.raises(UserError, match="did not resolve snakeyaml-2.4.jar"):
        jars.check_broker(folder, pins)  # deleted above: now missing


def test_a_malformed_pin_line_is_one_line(tmp_path):
    bad = tmp_path / "jars.txt"
    bad.write_text("io.delta:delta-storage:4.4.0 md5:abc\n")
    with pytest.raises(UserError, match=r"jars.txt:1: 'md5:abc' is not sha256:HEX"):
        jars.read_list(bad)
