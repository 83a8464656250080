"""An archive that is not whole is never handed to a JVM: it would crash it (SIGBUS), not be
ignored (:mod:`spark_jobs.contract.jvm`)."""

import pytest

from spark_jobs.contract import jvm as jvm_archive

pytestmark = pytest.mark.unit


def test_an_archive_that_is_not_whole_is_not_used(tmp_path, monkeypatch):
    archive = tmp_path / "driver-x.jsa"
    monkeypatch.setattr(jvm_archive, "archive_path", lambda: archive)
    monkeypatch.delenv(jvm_archive.OFF, raising=False)
    assert jvm_archive.java_options() == ""  # none made
    archive.write_bytes(b"x" * 100)
    assert jvm_archive.java_options() == ""  # no recorded size: a build that did not finish
    jvm_archive.size_file(archive).write_text("100")
    assert f"-XX:SharedArchiveFile={archive}" in jvm_archive.java_options()
    archive.write_bytes(b"x" * 60)  # cut off later
    assert jvm_archive.java_options() == ""
    archive.write_bytes(b"x" * 100)
    monkeypatch.setenv(jvm_archive.OFF, "0")
    assert jvm_archive.java_options() == ""


def test_a_deployments_own_driver_options_follow_the_archives(tmp_path, monkeypatch):
    archive = tmp_path / "driver-x.jsa"
    monkeypatch.setattr(jvm_archive, "archive_path", lambda: archive)
    monkeypatch.delenv(jvm_archive.OFF, raising=False)
    monkeypatch.delenv(jvm_archive.EXTRA, raising=False)
    assert jvm_archive.driver_options() == ""  # no archive, nothing set
    monkeypatch.setenv(jvm_archive.EXTRA, "  -XX:TieredStopAtLevel=1 ")
    assert jvm_archive.driver_options() == "-XX:TieredStopAtLevel=1"
    archive.write_bytes(b"x" * 10)
    jvm_archive.size_file(archive).write_text("10")
    options = jvm_archive.driver_options()
    assert options.startswith(f"-XX:SharedArchiveFile={archive} ")
    assert options.endswith(" -XX:TieredStopAtLevel=1")
