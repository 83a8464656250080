"""Set-up compiles the parse's JVM part into a jar named by a hash of its source: built once,
built again (and the old one removed) when the source changes, and every failure one line."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from spark_jobs.contract import jvm, paths
from spark_jobs.contract.errors import UserError
from spark_jobs.runtime import parser_jar

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A project root holding the parse's source and the real jar list, with an empty cache."""
    for rel in (jvm.PARSER_SOURCE, jvm.SPARK_LIST):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    monkeypatch.setenv("STATEKEEPER_HOME", str(tmp_path))
    return tmp_path


def test_the_jar_is_built_once_per_source_and_an_old_one_removed(project):
    jar = parser_jar.build()

    assert jar.parent == paths.jars_dir() and jar.name.startswith("statekeeper-parse-")
    with zipfile.ZipFile(jar) as z:
        assert "statekeeper/ParseLine.class" in z.namelist()
    made = jar.stat().st_mtime_ns
    assert parser_jar.build() == jar and jar.stat().st_mtime_ns == made  # nothing to do

    source = project / jvm.PARSER_SOURCE
    source.write_text(source.read_text() + "\n// an edit\n")
    again = parser_jar.build()

    assert again != jar and again.is_file() and not jar.exists()
    assert not list(paths.jars_dir().glob(".*.part"))


def test_spark_is_not_given_jars_without_the_parse(project):
    paths.jars_dir().mkdir(parents=True)
    for coord in jvm.coordinates():  # Spark's cached jars, so that only the parse's is missing
        name = jvm.jar_name(coord)
        (paths.jars_dir() / name).symlink_to(ROOT / ".cache" / "jars" / name)

    with pytest.raises(UserError, match=r"the parse's jar statekeeper-parse-\w+\.jar .*make setup"):
        jvm.jar_paths()


def test_a_source_that_does_not_compile_is_one_line(project):
    source = project / jvm.PARSER_SOURCE
    source.write_text(source.read_text().replace("return true;", "return 1;", 1))

    with pytest.raises(UserError, match=r"could not compile .*ParseLine\.java: .*") as e:
        parser_jar.build()

    assert "\n" not in str(e.value)
    assert not list(paths.jars_dir().glob("*.jar"))


def test_a_jre_without_javac_is_named(project, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jre"))

    with pytest.raises(UserError, match="javac not found: .*JDK 17"):
        parser_jar.build()
