"""What a driver JVM is started with, named once: the jars Spark needs (pinned in
``include/spark/jars.txt``, fetched into ``.cache/jars`` by ``make setup``) and the driver's class
archive (its name keyed by the JVM and the jars, its options). Both the session builder (Spark
side) and the spark-submit command (Airflow side) read them; fetching the jars
(:mod:`spark_jobs.runtime.jars`) and building the archive (:mod:`spark_jobs.runtime.jvm_archive`)
stay on the Spark side. Nothing here imports pyspark.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from spark_jobs.contract import paths
from spark_jobs.contract.errors import UserError

SPARK_LIST = Path("include") / "spark" / "jars.txt"
# The project's own JVM classes: the parse's first tier (a Spark UDF; docs/jobs.md), the file
# listing's filter of landing names (docs/jobs.md) and Delta's log store for local files
# (docs/tables.md). Compiled at set-up (:mod:`spark_jobs.runtime.
# own_jar`) into one jar in the jars cache, named by a hash of the sources, so an edited source
# is never run as the old class.
JVM_DIR = Path("spark_jobs") / "io" / "jvm" / "statekeeper"
PARSER_SOURCE = JVM_DIR / "ParseLine.java"
LOG_STORE_SOURCE = JVM_DIR / "LocalListLogStore.java"
NAME_FILTER_SOURCE = JVM_DIR / "LandingNameFilter.java"
JVM_SOURCES = (PARSER_SOURCE, LOG_STORE_SOURCE, NAME_FILTER_SOURCE)
PARSER_CLASS = "statekeeper.ParseLine"
LOG_STORE_CLASS = "statekeeper.LocalListLogStore"
LOG_STORE_CONF = "spark.delta.logStore.file.impl"  # Delta's store for file: URIs
NAME_FILTER_CLASS = "statekeeper.LandingNameFilter"
NAME_FILTER_CONF = "spark.hadoop.mapreduce.input.pathFilter.class"  # Spark's file index reads it
OWN_JAR_PREFIX = "statekeeper-jvm-"


# -- the jars ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class JarList:
    """A jars file: the Maven coordinates to download, each pinned by the SHA-256 its jar must
    have (``GROUP:ARTIFACT:VERSION sha256:HEX`` a line)."""

    path: Path
    coords: list[str]
    pins: dict[str, str]  # jar file name -> SHA-256


def read_list(path: Path) -> JarList:
    coords: list[str] = []
    pins: dict[str, str] = {}
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != 2 or words[0].count(":") != 2:
            raise UserError(f"{path}:{n}: not 'GROUP:ARTIFACT:VERSION sha256:HEX'")
        if not words[1].startswith("sha256:"):
            raise UserError(f"{path}:{n}: {words[1]!r} is not sha256:HEX")
        coords.append(words[0])
        pins[jar_name(words[0])] = words[1].removeprefix("sha256:")
    return JarList(path, coords, pins)


def spark_list() -> JarList:
    return read_list(paths.project_root() / SPARK_LIST)


def coordinates() -> list[str]:
    return spark_list().coords


def jar_name(coord: str) -> str:
    _group, artifact, version = coord.split(":")
    return f"{artifact}-{version}.jar"


def jar_paths() -> list[str]:
    """The cached jars for ``spark.jars``; a one-line error when set-up has not fetched them."""
    out = []
    for coord in coordinates():
        p = paths.jars_dir() / jar_name(coord)
        if not p.is_file():
            raise UserError(f"Spark jar {p.name} is not in {paths.jars_dir()}; run `make setup`")
        out.append(str(p))
    own = own_jar()
    if not own.is_file():
        raise UserError(f"the project's jar {own.name} is not in {own.parent}; run `make setup`")
    return [*out, str(own)]


def own_jar() -> Path:
    """Where the project's compiled classes (:data:`JVM_SOURCES`) are, named by a hash of the
    sources."""
    digest = hashlib.sha256()
    for rel in JVM_SOURCES:
        digest.update(rel.name.encode() + b"\0" + (paths.project_root() / rel).read_bytes())
    return paths.jars_dir() / f"{OWN_JAR_PREFIX}{digest.hexdigest()[:12]}.jar"


# -- the driver's class archive (spark_jobs.runtime.jvm_archive builds it) ----------------------
OFF = "STATEKEEPER_JVM_ARCHIVE"
# The training run dumps here (set by build() for its child process only).
DUMP_TO = "STATEKEEPER_JVM_ARCHIVE_DUMP"
CHECK = "STATEKEEPER_JVM_ARCHIVE_CHECK"  # the check run maps the new archive before it is kept
# A deployment's own options for every driver JVM, after the archive's: e.g. -Xss or, for short
# commands and test suites, QUICK_COMPILER (docs/jobs.md says what that trades).
EXTRA = "STATEKEEPER_DRIVER_JAVA_OPTIONS"
# CDS reports a mismatched archive (or a class it cannot keep) as a warning on stdout; the
# archive is optional, so those lines are noise to a user.
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off -Xlog:class+path=off"


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java") or "java"
    return os.path.realpath(java)


def pyspark_jars(what: str) -> Path:
    """The folder of the jars pyspark ships, found without importing it (the Airflow side names
    the class archive too); ``what`` says what cannot be done without pyspark."""
    found = importlib.util.find_spec("pyspark")
    if found is None or found.origin is None:
        raise UserError(f"pyspark is not installed: {what}")
    return Path(found.origin).parent / "jars"


def key() -> str:
    """What the archive was made with: the JVM binary, pyspark's jars, the cached jars."""
    spark_jars = sorted(p.name for p in pyspark_jars("no JVM class archive").glob("*.jar"))
    ours = sorted(Path(p).name for p in jar_paths())
    parts = [_java(), importlib.metadata.version("pyspark"), *spark_jars, *ours]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def archive_path() -> Path:
    return paths.cache_dir() / "jvm" / f"driver-{key()}.jsa"


def java_options() -> str:
    """The driver's JVM options for the archive: dumping (the training run), using it, or none."""
    dump, check = os.environ.get(DUMP_TO), os.environ.get(CHECK)
    if dump:
        return f"-XX:ArchiveClassesAtExit={dump} {_QUIET}"
    if check:  # a crash here is the check failing: its report goes beside the candidate
        return f"-XX:SharedArchiveFile={check} -XX:ErrorFile={check}.hs_err_%p.log {_QUIET}"
    if os.environ.get(OFF) == "0":
        return ""
    try:
        path = archive_path()
    except Exception:  # jars not fetched yet, no pyspark: no archive, the JVM starts as before
        return ""
    return f"-XX:SharedArchiveFile={path} {_QUIET}" if intact(path) else ""


# -- the compiler -------------------------------------------------------------------------------
# The JVM's quick compiler only (C1 without profiling; no C2). On two cores the optimising
# compiler competes with a short driver for a core and is done too late to pay back: a catch-up
# of 2,000 new events took 11.7 s instead of 16.3 s, one of 1M events (150 MB) 24.7 s instead of
# 26.4 s, but one of 3M events (450 MB) 43.7 s instead of 35.6 s (whole processes, interleaved).
# With the quick compiler alone the JVM reserves 48 MB for compiled code instead of 240: a run of
# user_counts on 3,000 small files (30 batches) filled it after 22 s, the JVM stopped compiling
# ("CodeCache is full. Compiler has been disabled") and ran the rest interpreted: 89.7 s
# instead of 74.9 s with the 240 MB both compilers get. Reserved address space only.
QUICK_COMPILER = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
# The most an available-now run may have left to read for its driver to start with the quick
# compiler: well below where it stopped paying (between 150 and 450 MB above).
QUICK_MAX_BYTES = 64 * 2**20


def quick_compiler(available_now: bool, pending_bytes: int | None) -> bool:
    """Whether a run's driver starts with :data:`QUICK_COMPILER`: a run that ends when it has
    read what is there, with a known backlog of at most :data:`QUICK_MAX_BYTES`. A continuous
    run's driver lives for hours (the optimising compiler pays back); an unknown backlog (a
    Kafka topic) may be large."""
    return available_now and pending_bytes is not None and pending_bytes <= QUICK_MAX_BYTES


def driver_options(quick: bool = False) -> str:
    """Every driver JVM's options: where its crash report goes, the class archive's,
    :data:`QUICK_COMPILER` for a short run (:func:`quick_compiler`), then a deployment's own
    (``$STATEKEEPER_DRIVER_JAVA_OPTIONS``: the last of a repeated option wins, so
    ``-XX:TieredStopAtLevel=4`` there keeps both compilers)."""
    options = (
        crash_report_option(),
        java_options(),  # the archive's check sends its crash report beside the candidate: later
        QUICK_COMPILER if quick else "",
        os.environ.get(EXTRA, "").strip(),
    )
    return " ".join(x for x in options if x)


CRASH_REPORT = "hs_err_pid%p.log"  # the JVM's own name for it; %p: the JVM's pid


def crash_report_option() -> str:
    """``-XX:ErrorFile`` in :func:`spark_jobs.contract.paths.jvm_crash_dir` (made here: the JVM
    does not make folders). "" when it cannot be made: the JVM then writes its report where it
    always does, in its working folder (else /tmp)."""
    folder = paths.jvm_crash_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return ""
    return f"-XX:ErrorFile={folder / CRASH_REPORT}"


def size_file(archive: Path) -> Path:
    return archive.with_suffix(".size")


def intact(archive: Path) -> bool:
    """The archive is the file a checked build wrote. The JVM maps the file without comparing
    its length to its header: a cut-off archive would crash every driver (SIGBUS), not be
    ignored."""
    try:
        return archive.stat().st_size == int(size_file(archive).read_text())
    except (OSError, ValueError):
        return False
