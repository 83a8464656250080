"""An archive that is not whole is never handed to a JVM: it would crash it (SIGBUS), not be
ignored (:mod:`spark_jobs.contract.jvm`)."""

import os
import shlex
import signal
import subprocess

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
    monkeypatch.setattr(jvm_archive, "crash_report_option", lambda: "")
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


def test_a_short_run_gets_the_quick_compiler_before_a_deployments_own(monkeypatch):
    monkeypatch.setattr(jvm_archive, "crash_report_option", lambda: "")
    monkeypatch.setattr(jvm_archive, "java_options", lambda: "-XX:SharedArchiveFile=/c/d.jsa")
    monkeypatch.delenv(jvm_archive.EXTRA, raising=False)
    assert jvm_archive.driver_options() == "-XX:SharedArchiveFile=/c/d.jsa"  # a long run's
    quick = jvm_archive.driver_options(quick=True)
    assert quick == f"-XX:SharedArchiveFile=/c/d.jsa {jvm_archive.QUICK_COMPILER}"
    # a deployment that wants both compilers back says so after it: the JVM takes the last
    monkeypatch.setenv(jvm_archive.EXTRA, "-XX:TieredStopAtLevel=4")
    assert jvm_archive.driver_options(quick=True).endswith(
        f"{jvm_archive.QUICK_COMPILER} -XX:TieredStopAtLevel=4"
    )


@pytest.mark.parametrize(
    ("available_now", "pending", "quick"),
    [
        (True, 0, True),  # nothing new: the driver only starts and stops
        (True, jvm_archive.QUICK_MAX_BYTES, True),
        (True, jvm_archive.QUICK_MAX_BYTES + 1, False),  # a large catch-up: C2 pays back
        (True, None, False),  # a backlog nobody measured (a Kafka topic) may be large
        (False, 0, False),  # a continuous run lives for hours
    ],
)
def test_only_an_available_now_run_with_a_small_known_backlog_is_short(
    available_now, pending, quick
):
    assert jvm_archive.quick_compiler(available_now, pending) is quick


def _code_cache_bytes(options: str) -> int:
    """The ReservedCodeCacheSize a real JVM started with ``options`` settles on."""
    import shlex
    import subprocess

    flags = subprocess.run(
        [jvm_archive._java(), *shlex.split(options), "-XX:+PrintFlagsFinal", "-version"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    line = next(x for x in flags.splitlines() if " ReservedCodeCacheSize " in x)
    return int(line.split("=")[1].split()[0])


def test_the_quick_compiler_keeps_the_code_space_of_both_compilers():
    """The quick compiler alone shrinks the JVM's compiled-code space to 48 MB, which a catch-up
    of many small batches filled: the JVM then stopped compiling and ran interpreted."""
    both = _code_cache_bytes("")
    assert _code_cache_bytes("-XX:TieredStopAtLevel=1") < both  # the JVM's own choice
    assert _code_cache_bytes(jvm_archive.QUICK_COMPILER) >= both


def test_a_crashing_driver_jvm_reports_in_the_data_folder_not_where_it_was_started(
    tmp_path, monkeypatch
):
    """A real JVM started with the drivers' options and crashed (SIGSEGV, as native code in
    RocksDB once did at a driver's exit) writes its report under the data folder; the folder it
    was started from (a user's, a worker's) gets nothing."""
    monkeypatch.setenv("STATEKEEPER_DATA", str(tmp_path / "data"))
    monkeypatch.setattr(jvm_archive, "java_options", lambda: "")  # the archive: not the point
    options = jvm_archive.driver_options()
    assert (tmp_path / "data" / "jvm-crashes").is_dir()  # made: the JVM makes no folder
    source = tmp_path / "Idle.java"
    source.write_text(
        "class Idle { public static void main(String[] a) throws Exception {"
        ' System.out.println("up"); System.out.flush(); Thread.sleep(120000); } }'
    )
    cwd = tmp_path / "started-here"
    cwd.mkdir()
    java = subprocess.Popen(
        ["java", *shlex.split(options), str(source)],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert java.stdout is not None and java.stdout.readline().strip() == "up"
        os.kill(java.pid, signal.SIGSEGV)
        java.wait(60)
    finally:
        java.kill()
    assert java.returncode != 0
    assert (tmp_path / "data" / "jvm-crashes" / f"hs_err_pid{java.pid}.log").is_file()
    assert list(cwd.iterdir()) == []
