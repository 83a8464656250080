"""Which errors are Spark's, told apart by type: a query that stopped, a plan Spark refused, a JVM
call that threw. A run turns these into one line; any other exception is a bug in our code and
keeps its traceback.

Imports pyspark: only code that runs Spark imports this module.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlparse

from py4j.protocol import Py4JError, Py4JJavaError
from pyspark.errors import PySparkException

# pyspark converts the JVM's errors it knows (StreamingQueryException, AnalysisException,
# IllegalArgumentException, ...) into PySparkException subclasses, which its own errors are too;
# a JVM error it does not convert reaches Python as py4j's Py4JJavaError.
SPARK_ERRORS: tuple[type[Exception], ...] = (PySparkException, Py4JJavaError)

# Stopping a query can also meet a gateway that went with the JVM (Py4JNetworkError is a
# Py4JError).
STOP_ERRORS: tuple[type[Exception], ...] = (PySparkException, Py4JError)


TRACEBACK = "Traceback (most recent call last)"
LINE_LIMIT = 300  # a failed run's whole line, "job X failed: " included


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def _python_error(lines: list[str]) -> str | None:
    """The exception line that ends a Python traceback (``ValueError: ...``): the first line after
    it that is not indented and not a traceback heading; the frames are indented."""
    for line in lines:
        if (
            line.strip()
            and not line[0].isspace()
            and not line.startswith(("Traceback", "During", "The above"))
        ):
            return line.strip()
    return None


def reason(exc: BaseException, limit: int = LINE_LIMIT) -> str:
    """The error in one line of at most ``limit`` characters: the first meaningful line, and
    when it opens a Python worker's traceback, the Python error that ends it instead of the
    frames (the whole trace stays in Spark's log)."""
    if isinstance(exc, Py4JJavaError):
        # Its own text only names the call ("An error occurred while calling o42.x"); the
        # JVM exception's says what went wrong.
        text = str(exc.java_exception.toString())
    else:
        text = str(exc)
    lines = text.splitlines()
    for i, raw in enumerate(lines):
        line = " ".join(raw.split())
        # A StreamingQueryException's description goes on with "=== Streaming Query ===" blocks.
        if not line or line.startswith("==="):
            continue
        if TRACEBACK not in line:
            return _clip(line, limit)
        before = line.split(TRACEBACK)[0].rstrip(" :")
        error = _python_error(lines[i + 1 :])
        if error is None:
            return _clip(before, limit)
        error = _clip(" ".join(error.split()), limit)
        room = limit - len(error) - 2
        return f"{_clip(before, room)}: {error}" if room > 1 else error
    return type(exc).__name__


# Spark could not read one of a batch's files (a truncated gzip, a file without read rights, one
# gone between the listing and the read); the JVM exception that caused it says why.
_READ_FILE = re.compile(
    r"\[FAILED_READ_FILE[.\w]*\] Encountered error while reading file (.+?)\.\s"
)
_CAUSE = re.compile(r"Caused by: (?:[\w$]+\.)*([\w$]+(?:Exception|Error)(?::[^\n]*)?)")


def unreadable_file(text: str) -> tuple[str, str] | None:
    """The file a failed read named (a local path for a ``file:`` URL, else the URL, decoded)
    and the cause under it (``EOFException: Unexpected end of input stream``), from a failed
    query's whole text; None when the failure was no file read."""
    read = _READ_FILE.search(text)
    if read is None:
        return None
    url = unquote(read.group(1))
    path = urlparse(url).path if url.startswith("file:") else url
    cause = _CAUSE.search(text, read.end())
    return path, _clip(" ".join(cause.group(1).split()), 100) if cause else "no cause given"
