"""Set-up compiles the project's JVM classes (the parse, the log store) into a jar named by a hash
of their sources: built once, built again (and the old one removed) when a source changes, and
every failure one line."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from spark_jobs.contract import jvm, paths
from spark_jobs.contract.errors import UserError
from spark_jobs.runtime import own_jar

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A project root holding the JVM sources and the real jar list, with a cache holding
    Spark's jars alone (the log store compiles against Delta's)."""
    for rel in (*jvm.JVM_SOURCES, jvm.SPARK_LIST):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    monkeypatch.setenv("STATEKEEPER_HOME", str(tmp_path))
    paths.jars_dir().mkdir(parents=True)
    for coord in jvm.coordinates():
        name = jvm.jar_name(coord)
        (paths.jars_dir() / name).symlink_to(ROOT / ".cache" / "jars" / name)
    return tmp_path


def _own_jars() -> list[Path]:
    return list(paths.jars_dir().glob("statekeeper-*.jar"))


def test_the_jar_is_built_once_per_source_and_an_old_one_removed(project):
    jar = own_jar.build()

    assert jar.parent == paths.jars_dir() and jar.name.startswith(jvm.OWN_JAR_PREFIX)
    with zipfile.ZipFile(jar) as z:
        assert {
            "statekeeper/ParseLine.class",
            "statekeeper/LocalListLogStore.class",
            "statekeeper/LandingNameFilter.class",
        } <= set(z.namelist())
    made = jar.stat().st_mtime_ns
    assert own_jar.build() == jar and jar.stat().st_mtime_ns == made  # nothing to do

    source = project / jvm.LOG_STORE_SOURCE
    source.write_text(source.read_text() + "\n// an edit\n")
    again = own_jar.build()

    assert again != jar and again.is_file() and not jar.exists()
    assert _own_jars() == [again]
    assert not list(paths.jars_dir().glob(".*.part"))


def test_spark_is_not_given_jars_without_the_projects_own(project):
    with pytest.raises(UserError, match=r"the project's jar statekeeper-jvm-\w+\.jar .*make setup"):
        jvm.jar_paths()


def test_a_jar_the_parse_had_alone_is_removed(project):
    old = paths.jars_dir() / "statekeeper-parse-0123456789ab.jar"
    old.write_bytes(b"an earlier release's jar")

    jar = own_jar.build()

    assert _own_jars() == [jar]


def test_a_source_that_does_not_compile_is_one_line(project):
    source = project / jvm.PARSER_SOURCE
    source.write_text(source.read_text().replace("return true;", "return 1;", 1))

    with pytest.raises(UserError, match=r"could not compile .*ParseLine\.java:\d+: .*") as e:
        own_jar.build()

    assert "\n" not in str(e.value)
    assert not _own_jars()


def test_a_jre_without_javac_is_named(project, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jre"))

    with pytest.raises(UserError, match="javac not found: .*JDK 17"):
        own_jar.build()
