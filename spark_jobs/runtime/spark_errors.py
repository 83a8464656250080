"""Which errors are Spark's, told apart by type: a query that stopped, a plan Spark refused, a JVM
call that threw. A run turns these into one line; any other exception is a bug in our code and
keeps its traceback.

Imports pyspark: only code that runs Spark imports this module.
"""

from __future__ import annotations

from py4j.protocol import Py4JError, Py4JJavaError
from pyspark.errors import PySparkException

# pyspark converts the JVM's errors it knows (StreamingQueryException, AnalysisException,
# IllegalArgumentException, ...) into PySparkException subclasses, which its own errors are too;
# a JVM error it does not convert reaches Python as py4j's Py4JJavaError.
SPARK_ERRORS: tuple[type[Exception], ...] = (PySparkException, Py4JJavaError)

# Stopping a query can also meet a gateway that went with the JVM (Py4JNetworkError is a
# Py4JError).
STOP_ERRORS: tuple[type[Exception], ...] = (PySparkException, Py4JError)


def reason(exc: BaseException) -> str:
    """The error's first meaningful line, at most 400 characters."""
    if isinstance(exc, Py4JJavaError):
        # Its own text only names the call ("An error occurred while calling o42.x"); the
        # JVM exception's says what went wrong.
        text = str(exc.java_exception.toString())
    else:
        text = str(exc)
    for line in text.splitlines():
        line = line.strip()
        # A StreamingQueryException's description goes on with "=== Streaming Query ===" blocks.
        if line and not line.startswith("==="):
            return line[:400]
    return type(exc).__name__
