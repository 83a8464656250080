"""Compiling the parse's JVM part (:data:`spark_jobs.contract.jvm.PARSER_SOURCE`) into its jar.

``make setup`` runs it through ``python -m spark_jobs.runtime.jars fetch``; it is a no-op when
the jar for the current source exists. It needs a JDK's ``javac`` (17 or later) and nothing
from the network: the source compiles against the jars pyspark ships. The jar is written under
a temporary name and renamed, so a cut-off build or two builds at once never leave half a jar.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from spark_jobs.contract import paths
from spark_jobs.contract.errors import UserError
from spark_jobs.contract.jvm import PARSER_SOURCE, parser_jar, pyspark_jars

JAVA_RELEASE = "17"  # the oldest JVM the project runs on


def _javac() -> str:
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "javac" if home else None
    if found is not None and found.is_file():
        return str(found)
    javac = shutil.which("javac")
    if javac is None:
        raise UserError(
            "javac not found: set-up compiles the parse's JVM part and needs a JDK 17 "
            "(Debian: openjdk-17-jdk-headless), not only a JRE"
        )
    return javac


def build() -> Path:
    """The parse's jar for the current source, compiled unless it exists."""
    jar = parser_jar()
    if jar.is_file():
        return jar
    source = paths.project_root() / PARSER_SOURCE
    spark_jars = pyspark_jars("cannot compile the parse's JVM part")
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="statekeeper-parse-") as tmp:
        classes = Path(tmp) / "classes"
        done = subprocess.run(
            [
                _javac(),
                "--release",
                JAVA_RELEASE,
                "-cp",
                str(spark_jars / "*"),
                "-d",
                str(classes),
                str(source),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            first = (done.stderr.strip().splitlines() or ["no output"])[0]
            raise UserError(f"could not compile {PARSER_SOURCE}: {first}")
        part = jar.with_name(f".{jar.name}.{os.getpid()}.part")
        with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as z:
            for f in sorted(classes.rglob("*.class")):
                z.write(f, f.relative_to(classes).as_posix())
        part.rename(jar)
    for stale in jar.parent.glob("statekeeper-parse-*.jar"):
        if stale != jar:
            stale.unlink(missing_ok=True)  # an older source's class: never beside the new one
    return jar
