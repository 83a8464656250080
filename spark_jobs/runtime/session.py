"""The SparkSession every job, test and benchmark uses: Delta, the state store, the cached jars."""

from __future__ import annotations

import logging
import os
import sys
from typing import TYPE_CHECKING, Any

from spark_jobs.contract import jvm, network, paths
from spark_jobs.contract import table_settings as tables
from spark_jobs.contract.spark_confs import CHANGELOG_CONF, STATE_STORE_PROVIDERS, spec_confs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from spark_jobs.contract.spec import JobSpec


CODEGEN_CACHE = "spark.sql.codegen.cache.maxEntries"


def base_confs() -> dict[str, str]:
    return {
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.streaming.stateStore.providerClass": STATE_STORE_PROVIDERS["rocksdb"],
        CHANGELOG_CONF: "true",
        # Every table Statekeeper creates gets the sink settings (change feed, log retention...).
        **tables.session_defaults(),
        "spark.sql.adaptive.enabled": "false",
        # Spark keeps the classes it generates for a plan in one cache per JVM, 100 by default,
        # least recently used out. A micro-batch of a job (parse, quarantine, stateful step,
        # Delta's write or MERGE and its log) needs more than 100, so every batch evicted the
        # classes the next one needed and compiled 45 to 64 again. With room for 1,000: 2 or 3
        # a batch; a continuous user_counts with 21-line batches went from a median batch of
        # 3.7 s to 2.4 s. A static setting: it applies when the session starts.
        CODEGEN_CACHE: "1000",
        # Delta rebuilds a table's snapshot (its log) with this many tasks before each write and
        # read. The default, 50, cost ~5 s per micro-batch on two cores for a log of a few
        # commits. The log is replayed from its last checkpoint (at most ten commits behind), so
        # one task suffices: against two, the rebuild behind every idempotent write took 0.58 s
        # of task time instead of 1.07 s (CPU 0.41 s against 0.58 s; 16 appends, two runs each).
        # A table of very many files (millions of actions) replays faster with more: set it
        # with --conf.
        "spark.databricks.delta.snapshotPartitions": "1",
        # Python workers must connect back within this; the default 15 s fails runs on a
        # loaded machine ("Python worker failed to connect back") for no fault of the job.
        "spark.python.authenticate.socketTimeout": "120s",
        # Not INT96 (nanoseconds): delta-rs, Polars and DuckDB read microsecond timestamps only.
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        # pyspark's worker daemon with the fix that lets state schemas hold arrays (typed state)
        "spark.python.daemon.module": "spark_jobs.runtime.pydaemon",
        # On by default, PySpark wraps every DataFrame and Column call to record the Python line
        # that made it (for an error's "DataFrame" context): a Python stack walk and four py4j
        # round trips per call. Building a job's plan made 3,426 round trips, 1,336 without it;
        # a run with nothing to read took 1.32 s in a warm session, 0.86 s without (medians of
        # 8, interleaved). Our errors are one-line reasons, not a user's DataFrame lines.
        "spark.python.sql.dataFrameDebugging.enabled": "false",
        # A line that gives a key twice is read with its last value, by the parse's first tier
        # (Jackson) as by Spark's JSON reader. The exact tier's parse_json refused such a line
        # whole, so one that was also wrong elsewhere was quarantined as "malformed JSON"
        # rather than for its real fault (spark_jobs/io/events.py).
        "spark.sql.variant.allowDuplicateKeys": "true",
        # Spark's catalog makes an empty spark-warehouse/ where a command runs (table maintain's
        # OPTIMIZE and VACUUM by path go through it): in a user's project, or an Airflow
        # worker's folder. No job keeps a table there; it goes with the data.
        "spark.sql.warehouse.dir": str(paths.data_dir() / "spark-warehouse"),
        # Delta's log store for local tables, listing a table's log by name before it reads any
        # file's status: a log of a day of one-second batches (~360,000 entries) cost Delta's
        # own store ~4 s a listing, at least one a write (docs/tables.md, the project's jar).
        jvm.LOG_STORE_CONF: jvm.LOG_STORE_CLASS,
        # Landing files whose names Spark cannot read as one file (a glob character made it read
        # every other file of the batch twice) are left out of every listing, and the run names
        # them (paths.UNREADABLE_NAME_CHARS; docs/jobs.md, "Landing files").
        jvm.NAME_FILTER_CONF: jvm.NAME_FILTER_CLASS,
    }


def _log_options(log_file: str | None, quick_compiler: bool = False) -> str:
    """Spark's log to ``log_file`` (default: $STATEKEEPER_SPARK_LOG or /tmp), console quiet, and
    the driver's own options (:func:`spark_jobs.contract.jvm.driver_options`)."""
    target = log_file or os.environ.get("STATEKEEPER_SPARK_LOG", "/tmp/statekeeper-spark.log")
    props = paths.project_root() / "include" / "spark" / "log4j2.properties"
    jvm_options = jvm.driver_options(quick_compiler)
    return f"-Dlog4j2.configurationFile=file:{props} -Dstatekeeper.log.file={target} {jvm_options}"


def build_session(
    app_name: str = "statekeeper",
    spec: JobSpec | None = None,
    conf: dict[str, str] | None = None,
    master: str | None = None,
    log_file: str | None = None,
    quick_compiler: bool = False,
) -> SparkSession:
    """A session for ``spec`` (or a generic one), with ``conf`` applied last.

    Under spark-submit the master and jars come from the submit command; locally the master is
    ``$STATEKEEPER_SPARK_MASTER`` or ``local[2]`` and Delta's jars come from ``./.cache/jars``.
    ``quick_compiler``: a driver JVM started here gets the JVM's quick compiler only (a short
    run, :func:`spark_jobs.contract.jvm.quick_compiler`).
    """
    # Python workers must run the venv's interpreter, or they cannot import pyarrow and pandas.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # pyspark's own pandas calls raise FutureWarnings in every Python worker; they are not ours.
    os.environ.setdefault("PYTHONWARNINGS", "ignore::FutureWarning,ignore::DeprecationWarning")
    from pyspark.sql import SparkSession

    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    builder = SparkSession.builder.appName(app_name)
    settings = base_confs()
    if not under_submit:
        master = master or os.environ.get("STATEKEEPER_SPARK_MASTER", "local[2]")
        builder = builder.master(master)
        settings.update(network.driver_confs(master))  # under spark-submit: its --conf
        settings["spark.driver.extraJavaOptions"] = _log_options(log_file, quick_compiler)
        settings["spark.jars"] = ",".join(jvm.jar_paths())
        settings["spark.driver.memory"] = os.environ.get("STATEKEEPER_DRIVER_MEMORY", "2g")
    if spec is not None:
        settings.update(spec_confs(spec))
    settings.update(conf or {})
    for k, v in settings.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    _quiet_accumulator_server(spark)
    _quiet_gateway_loss()
    spark.sparkContext.setLogLevel(os.environ.get("STATEKEEPER_SPARK_LOG_LEVEL", "ERROR"))
    # getOrCreate reuses a live session (tests): runtime SQL confs must still follow the spec.
    # Static ones (the extensions, the codegen cache: Spark says which) and the catalog took
    # effect when it started.
    gateway = spark._jvm
    assert gateway is not None  # a classic session (not Spark Connect)
    static = gateway.org.apache.spark.sql.internal.SQLConf.isStaticConfigKey
    for k, v in settings.items():
        runtime = k.startswith("spark.sql.") or k.startswith(tables.SESSION_DEFAULTS_PREFIX)
        if runtime and "catalog" not in k and not static(k):
            spark.conf.set(k, v)
    return spark


def _quiet_accumulator_server(spark: SparkSession) -> None:
    """pyspark's accumulator server (a thread serving the JVM) prints a traceback when the JVM
    goes away mid-request; the run says that in its own line (``spark_errors.GATEWAY_ERRORS``),
    so the server stays quiet about it. Any other error of the server's is printed as before."""
    server = getattr(spark.sparkContext, "_accumulatorServer", None)
    if server is None or getattr(server, "statekeeper_quiet", False):
        return
    loud = server.handle_error

    def handle_error(request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], EOFError | ConnectionError):
            loud(request, client_address)

    server.handle_error = handle_error
    server.statekeeper_quiet = True


class _GatewayLossFilter(logging.Filter):
    """Drops py4j's report of a call that met a gateway gone away: py4j logs it with
    ``logging.exception`` on the root logger (two chained tracebacks on stderr, Python's
    fallback handler), then raises the error that the run turns into its one line
    (``spark_errors.GATEWAY_ERRORS``). Every other record passes. A logger's filters see only
    the records logged on it, so the records of py4j's own loggers (and any other) never reach
    this one."""

    def filter(self, record: logging.LogRecord) -> bool:
        from spark_jobs.runtime.spark_errors import GATEWAY_ERRORS

        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, GATEWAY_ERRORS)


def _quiet_gateway_loss() -> None:
    root = logging.getLogger()
    if not any(isinstance(f, _GatewayLossFilter) for f in root.filters):
        root.addFilter(_GatewayLossFilter())
