"""A class-data-sharing archive of the classes a local Spark driver loads, made once at set-up.

Every ``python -m spark_jobs ...`` call, test process and benchmark that starts Spark starts a
driver JVM, which loads and verifies some 20,000 classes (Spark, Scala, Jackson, Delta...) from
jars before it runs a line of the job. JDK 17's dynamic CDS archive (``-XX:SharedArchiveFile``)
keeps those classes parsed and verified in one file the JVM maps at start: the session and its
first queries start seconds sooner (``python -m bench --only startup`` measures it).

The archive is a cache, never a dependency:

- its name carries a hash of what it was made with (the JVM, pyspark's jars, the cached jars),
  so a changed JVM or jar set looks for another file, and `make setup` makes that one;
- the JVM checks the archive itself and ignores one that does not match, silently;
- it is used only by drivers this process launches (not under spark-submit, whose driver is
  started by its own command line); ``STATEKEEPER_JVM_ARCHIVE=0`` turns it off.

    python -m spark_jobs.runtime.jvm_archive build    # what `make setup` runs (no-op when made)

The archive's name and the options that map it are the contract's (:mod:`spark_jobs.contract.jvm`):
the spark-submit command on the Airflow side passes them too. Building it is this module's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from spark_jobs.contract.jvm import (  # the archive's name and options: the contract's
    CHECK,
    DUMP_TO,
    archive_path,
    intact,
    size_file,
)


def _driver(command: str, env: dict[str, str]) -> tuple[int, str, str]:
    """Run one of :mod:`spark_jobs.runtime.jvm_archive_drivers` in a child process: (exit code,
    stdout, stderr); a child that hangs counts as failed, so set-up goes on without an archive."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "spark_jobs.runtime.jvm_archive_drivers", command],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
    except subprocess.TimeoutExpired:
        return 1, "", f"the {command} driver did not finish in 600 s"
    return done.returncode, done.stdout, done.stderr


def _loads(archive: Path) -> bool:
    """A Spark driver starts and runs a query with ``archive`` mapped."""
    code, out, _ = _driver("check", {CHECK: str(archive)})
    return code == 0 and "archive ok" in out


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


def build() -> Path | None:
    """Make the archive for this JVM and jar set unless it exists; returns it, or None (with a
    warning) if it could not be made: Spark then starts without it."""
    final = archive_path()
    if intact(final):
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    for old in final.parent.glob("driver-*"):  # made for another JVM or jar set, or cut off
        old.unlink(missing_ok=True)
    tmp = final.with_suffix(".part")
    tmp.unlink(missing_ok=True)
    code, out, err = _driver("train", {DUMP_TO: str(tmp)})
    pids = [int(w.split()[1]) for w in out.splitlines() if w.startswith("jvm-pid ")]
    # The JVM writes the archive as it exits, after the Python side has returned.
    made = code == 0 and pids and _wait_gone(pids[0], 120) and tmp.is_file()
    if not made or not _loads(tmp):
        why = (err.strip().splitlines() or ["no output"])[-1] if not made else "unusable"
        print(f"warning: no JVM class archive (Spark starts without it): {why}", file=sys.stderr)
        for leftover in final.parent.glob(f"{tmp.name}*"):
            leftover.unlink(missing_ok=True)
        return None
    size_file(final).write_text(str(tmp.stat().st_size))
    tmp.rename(final)  # used only once whole, checked and its size recorded
    return final


if __name__ == "__main__":
    if sys.argv[1:2] != ["build"]:
        sys.exit("usage: python -m spark_jobs.runtime.jvm_archive build")
    made = build()
    print(f"JVM class archive: {made or 'none'}")
