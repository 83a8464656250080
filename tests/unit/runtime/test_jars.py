"""Jars are downloaded from Maven Central (or a mirror with its layout) by the coordinates pinned
in include/spark/jars.txt and include/kafka/broker-jars.txt, each checked against its SHA-256: a
jar that differs (or one nobody pinned) is deleted and the fetch fails with one line naming it.
Run on copies of the cached jars, served by a real HTTP server on this machine as a Maven
repository (no internet, no JVM)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
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
    # the broker's list is written out whole: the three it starts from and their dependencies
    assert len(broker.pins) == len(broker.coords) > 3
    for top in ("org.apache.kafka:kafka_2.13:4.1.1", "org.slf4j:slf4j-api:2.0.17"):
        assert top in broker.coords
    for pins, folder in ((spark, paths.jars_dir()), (broker, paths.broker_jars_dir())):
        for name, digest in pins.pins.items():
            assert len(digest) == 64
            if (folder / name).is_file():  # fetched by set-up
                assert jars.sha256(folder / name) == digest, name


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A project root with the real jar lists, and a cache holding only the project's own jar,
    which set-up compiled (tests/unit/runtime/test_own_jar.py compiles one)."""
    for rel in (jvm.SPARK_LIST, jars.BROKER_LIST, *jvm.JVM_SOURCES):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    built = jvm.own_jar()
    monkeypatch.setenv("STATEKEEPER_HOME", str(tmp_path))
    paths.jars_dir().mkdir(parents=True)
    shutil.copy(built, paths.jars_dir() / built.name)
    return tmp_path


@pytest.fixture
def mirror(tmp_path, monkeypatch) -> Iterator[tuple[Path, list[str]]]:
    """A Maven repository on 127.0.0.1 holding copies of the jars set-up cached, in Maven's
    layout; ``STATEKEEPER_MAVEN_REPO`` points at it. Yields its folder and the paths asked."""
    repo = tmp_path / "repo"
    cached = {**_cached(jars.spark_list(), ROOT / ".cache" / "jars")}
    cached |= _cached(jars.broker_list(), ROOT / ".cache" / "kafka-broker")
    for coord, jar in cached.items():
        group, artifact, version = coord.split(":")
        to = repo / group.replace(".", "/") / artifact / version / jar.name
        to.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(jar, to)
    asked: list[str] = []

    class Handler(SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, directory=str(repo), **kwargs)

        def do_GET(self) -> None:
            asked.append(self.path)
            super().do_GET()

        def log_message(self, *args: object) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv(jars.REPO_ENV, f"http://127.0.0.1:{server.server_address[1]}/")
    try:
        yield repo, asked
    finally:
        server.shutdown()


def _cached(pins: jvm.JarList, folder: Path) -> dict[str, Path]:
    out = {c: folder / jvm.jar_name(c) for c in pins.coords}
    missing = [p.name for p in out.values() if not p.is_file()]
    assert not missing, f"set-up did not cache {missing}"
    return out


def test_a_fetch_downloads_every_pinned_jar_by_its_coordinate_once(project, mirror):
    _repo, asked = mirror
    got = jars.fetch()
    spark, broker = jars.spark_list(), jars.broker_list()
    own = jvm.own_jar()
    assert sorted(p.name for p in got) == sorted([*spark.pins, *broker.pins, own.name])
    got.remove(own)
    assert "/io/delta/delta-storage/4.4.0/delta-storage-4.4.0.jar" in asked
    assert len(asked) == len(spark.coords) + len(broker.coords)
    for p in got:
        assert jars.sha256(p) == {**spark.pins, **broker.pins}[p.name]
    assert jars.broker_classpath().count(":") == len(broker.coords) - 1
    assert not list(project.rglob(".*.part"))
    jars.fetch()  # everything there and intact: nothing asked again
    assert len(asked) == len(spark.coords) + len(broker.coords)


def test_an_altered_download_fails_the_fetch_and_nothing_is_kept(project, mirror):
    repo, _asked = mirror
    served = repo / "io/delta/delta-storage/4.4.0/delta-storage-4.4.0.jar"
    with open(served, "ab") as fh:
        fh.write(b"\0")  # one byte more than Maven Central's
    with pytest.raises(UserError) as err:
        jars.fetch_spark()
    line = str(err.value)
    assert "\n" not in line and line.startswith("jar delta-storage-4.4.0.jar has sha256:")
    assert "include/spark/jars.txt" in line
    cache = project / ".cache" / "jars"
    assert not (cache / "delta-storage-4.4.0.jar").exists()  # never put on a classpath
    assert not list(cache.glob(".*.part"))


def test_an_altered_cached_jar_fails_the_next_fetch_and_is_deleted(project, mirror):
    jars.fetch_spark()
    jar = project / ".cache" / "jars" / "delta-spark_2.13-4.4.0.jar"
    with open(jar, "ab") as fh:
        fh.write(b"\0")
    with pytest.raises(UserError, match="^jar delta-spark_2.13-4.4.0.jar has sha256:"):
        jars.fetch_spark()
    assert not jar.exists()
    jars.fetch_spark()  # fetched again, whole
    assert jar.is_file()


def test_a_missing_jar_on_the_repository_is_one_line_and_a_nonzero_exit(project, mirror):
    repo, _asked = mirror
    (repo / "org/apache/commons/commons-pool2/2.13.1/commons-pool2-2.13.1.jar").unlink()
    with pytest.raises(UserError) as err:
        jars.fetch_spark()
    line = str(err.value)
    assert "\n" not in line
    assert line.startswith("could not download http://127.0.0.1:") and "404" in line
    assert jars.REPO_ENV in line
    done = subprocess.run(
        [sys.executable, "-m", "spark_jobs.runtime.jars", "fetch", "spark"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("error: could not download") and done.stderr.count("\n") == 1


def test_a_broker_folder_from_another_list_is_fetched_again(project, mirror):
    folder = project / ".cache" / "kafka-broker"
    jars.fetch_broker()
    stale = folder / "kafka_2.13-4.0.0.jar"  # what an older list had pinned
    stale.write_bytes(b"PK")
    (folder / jars.BROKER_COMPLETE).write_text("kafka_2.13-4.0.0.jar\n")
    (folder / "snakeyaml-2.4.jar").unlink()
    jars.fetch_broker()
    assert not stale.exists()  # never beside the pinned jars on the broker's classpath
    broker = jars.broker_list()
    assert sorted(p.name for p in folder.glob("*.jar")) == sorted(broker.pins)
    for name, digest in broker.pins.items():
        assert jars.sha256(folder / name) == digest, name


def test_an_altered_broker_jar_fails_the_fetch_and_is_fetched_again(project, mirror):
    folder = project / ".cache" / "kafka-broker"
    jars.fetch_broker()
    (folder / jars.BROKER_COMPLETE).unlink()  # a cut-off fetch: the folder is checked again
    jar = folder / "snakeyaml-2.4.jar"
    with open(jar, "ab") as fh:
        fh.write(b"\0")
    with pytest.raises(UserError, match="^jar snakeyaml-2.4.jar has sha256:.* not the sha256:"):
        jars.fetch_broker()
    assert not jar.exists() and not (folder / jars.BROKER_COMPLETE).exists()
    with pytest.raises(UserError, match="not in"):
        jars.broker_classpath()  # no broker starts on a folder the fetch did not finish
    jars.fetch_broker()
    assert jars.sha256(jar) == jars.broker_list().pins[jar.name]
    assert jar.name in jars.broker_classpath()


def test_a_malformed_pin_line_is_one_line(tmp_path):
    bad = tmp_path / "jars.txt"
    bad.write_text("io.delta:delta-storage:4.4.0 md5:abc\n")
    with pytest.raises(UserError, match=r"jars.txt:1: 'md5:abc' is not sha256:HEX"):
        jars.read_list(bad)
    bad.write_text("# a comment\n\nio.delta:delta-storage:4.4.0\n")
    with pytest.raises(UserError, match=r"jars.txt:3: not 'GROUP:ARTIFACT:VERSION sha256:HEX'"):
        jars.read_list(bad)
