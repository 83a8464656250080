"""Compiling the project's JVM classes (:data:`spark_jobs.contract.jvm.JVM_SOURCES`: the parse's
first tier, Delta's log store for local files) into one jar.

``make setup`` runs it through ``python -m spark_jobs.runtime.jars fetch``, after Spark's jars
are cached; it is a no-op when the jar for the current sources exists. It needs a JDK's
``javac`` (17 or later) and nothing from the network: the sources compile against the jars
pyspark ships and the cached Delta jars. The jar is written under a temporary name and renamed,
so a cut-off build or two builds at once never leave half a jar.
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
from spark_jobs.contract.jvm import (
    JVM_SOURCES,
    OWN_JAR_PREFIX,
    coordinates,
    jar_name,
    own_jar,
    pyspark_jars,
)

JAVA_RELEASE = "17"  # the oldest JVM the project runs on


def _javac() -> str:
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "javac" if home else None
    if found is not None and found.is_file():
        return str(found)
    javac = shutil.which("javac")
    if javac is None:
        raise UserError(
            "javac not found: set-up compiles the project's JVM classes and needs a JDK 17 "
            "(Debian: openjdk-17-jdk-headless), not only a JRE"
        )
    return javac


def build() -> Path:
    """The project's jar for the current sources, compiled unless it exists."""
    jar = own_jar()
    if jar.is_file():
        return jar
    sources = [str(paths.project_root() / rel) for rel in JVM_SOURCES]
    classpath = [str(pyspark_jars("cannot compile the project's JVM classes") / "*")]
    # the cached jars of Spark's list (Delta's: the log store extends Delta's), fetched before
    classpath += [str(paths.jars_dir() / jar_name(c)) for c in coordinates()]
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=OWN_JAR_PREFIX) as tmp:
        classes = Path(tmp) / "classes"
        done = subprocess.run(
            [_javac(), "--release", JAVA_RELEASE, "-cp", os.pathsep.join(classpath)]
            + ["-d", str(classes), *sources],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            first = (done.stderr.strip().splitlines() or ["no output"])[0]
            raise UserError(f"could not compile the project's JVM classes: {first}")
        part = jar.with_name(f".{jar.name}.{os.getpid()}.part")
        with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as z:
            for f in sorted(classes.rglob("*.class")):
                z.write(f, f.relative_to(classes).as_posix())
        part.rename(jar)
    # an older source's classes are never beside the new ones (statekeeper-parse-*: the jar's
    # name while it held the parse alone)
    for prefix in (OWN_JAR_PREFIX, "statekeeper-parse-"):
        for stale in jar.parent.glob(f"{prefix}*.jar"):
            if stale != jar:
                stale.unlink(missing_ok=True)
    return jar
