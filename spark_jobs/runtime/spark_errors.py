"""Which errors are Spark's, told apart by type: a query that stopped, a plan Spark refused, a JVM
call that threw. A run turns these into one line; any other exception is a bug in our code and
keeps its traceback.

Imports pyspark: only code that runs Spark imports this module.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlparse

from py4j.protocol import Py4JError, Py4JJavaError, Py4JNetworkError
from pyspark.errors import PySparkException

# pyspark converts the JVM's errors it knows (StreamingQueryException, AnalysisException,
# IllegalArgumentException, ...) into PySparkException subclasses, which its own errors are too;
# a JVM error it does not convert reaches Python as py4j's Py4JJavaError.
SPARK_ERRORS: tuple[type[Exception], ...] = (PySparkException, Py4JJavaError)

# The driver's JVM gone under a run (a crash, a kill, the kernel short of memory): py4j's calls
# then fail on the socket, with its own error or the operating system's.
GATEWAY_ERRORS: tuple[type[Exception], ...] = (Py4JNetworkError, ConnectionError)

# Stopping a query can also meet a gateway that went with the JVM.
STOP_ERRORS: tuple[type[Exception], ...] = (PySparkException, Py4JError, ConnectionError)


TRACEBACK = "Traceback (most recent call last)"
LINE_LIMIT = 300  # a failed run's whole line, "job X failed: " included


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def _python_error(lines: list[str]) -> int | None:
    """Where the exception line that ends a Python traceback (``ValueError: ...``) is: the first
    line that is not indented and not a traceback heading; the frames are indented."""
    for i, line in enumerate(lines):
        if (
            line.strip()
            and not line[0].isspace()
            and not line.startswith(("Traceback", "During", "The above"))
        ):
            return i
    return None


# A JVM error that reached Python code running in the JVM's callback (the batch's function of
# foreachBatch): py4j's line names only the call, and the JVM exception follows it, opened by
# ": ". Its class is named without its package.
PY4J_CALL = "py4j.protocol.Py4JJavaError: An error occurred while calling"
_PACKAGE = re.compile(r"^(?:[a-z_][\w$]*\.)+(?=[A-Z])")
# Spark's wrappers, said shorter so the cause under them fits the line.
_WRAPPERS = (
    (re.compile(r" Query \[id = [^\]]*\] terminated with exception:"), " the query stopped:"),
    (
        re.compile(
            r"(\[FOREACH_BATCH_USER_FUNCTION_ERROR\]) An error occurred in the user provided "
            r"function in foreach batch sink\. Reason:(?: An exception was raised by the Python "
            r"Proxy\. Return Message:?)?"
        ),
        r"\1 in the batch's function:",
    ),
    (
        re.compile(
            r"Job aborted due to stage failure: .*?most recent failure: Lost task [^()]*"
            r"\(TID \d+\)(?: \([^()]*\))?:"
        ),
        "a task failed:",
    ),
)
# A JVM message may go on over a few lines (Delta lists a violating row's values) before its
# stack's frames.
_FRAME = re.compile(r"^\s*(?:at |Caused by|\.\.\. \d+ more|===|Traceback)")
MESSAGE_LINES = 4


def _tidy(text: str) -> str:
    text = " ".join(text.split())
    for pattern, by in _WRAPPERS:
        text = pattern.sub(by, text)
    return text


def _message(lines: list[str]) -> str:
    """An error's first line and the lines its message goes on over, as one line."""
    taken = [lines[0]]
    for line in lines[1:MESSAGE_LINES]:
        if not line.strip() or _FRAME.match(line):
            break
        taken.append(line)
    return _tidy(" ".join(taken))


def _jvm_cause(lines: list[str], limit: int) -> str | None:
    """For ``lines`` that open with py4j's line of a failed call: the JVM exception after it."""
    if len(lines) > 1 and lines[1].startswith(": "):
        return _one_line([_PACKAGE.sub("", lines[1][2:]), *lines[2:]], limit)
    return None


def _joined(before: str, error: str, limit: int) -> str:
    """``before: error`` in ``limit`` characters, the error (the cause) cut last."""
    error = _clip(error, limit)
    room = limit - len(error) - 2
    return f"{_clip(before, room)}: {error}" if room > 1 else error


def _one_line(lines: list[str], limit: int) -> str | None:
    for i, raw in enumerate(lines):
        line = " ".join(raw.split())
        # A StreamingQueryException's description goes on with "=== Streaming Query ===" blocks.
        if not line or line.startswith("==="):
            continue
        if TRACEBACK not in line:
            if PY4J_CALL in line:  # the call's failure on this very line, its cause after it
                cause = _jvm_cause([line, *lines[i + 1 :]], limit)
                if cause:
                    return _joined(_tidy(line.split(PY4J_CALL)[0]).rstrip(" :"), cause, limit)
            return _clip(_message(lines[i:]), limit)
        before = _tidy(line.split(TRACEBACK)[0]).rstrip(" :")
        at = _python_error(lines[i + 1 :])
        if at is None:
            return _clip(before, limit)
        rest = lines[i + 1 + at :]
        error = (_jvm_cause(rest, limit) if rest[0].startswith(PY4J_CALL) else None) or _tidy(
            rest[0]
        )
        return _joined(before, error, limit)
    return None


def reason(exc: BaseException, limit: int = LINE_LIMIT) -> str:
    """The error in one line of at most ``limit`` characters: the first meaningful line, and
    when it opens a Python traceback, the Python error that ends it instead of the frames; when
    that error is py4j's "An error occurred while calling", the JVM exception it carries (so a
    Delta write failing inside the batch's function is named by Delta's own condition). Spark's
    wrappers are said shorter (:data:`_WRAPPERS`); the whole trace stays in Spark's log."""
    if isinstance(exc, Py4JJavaError):
        # Its own text only names the call ("An error occurred while calling o42.x"); the
        # JVM exception's says what went wrong.
        text = _PACKAGE.sub("", str(exc.java_exception.toString()))
    else:
        text = str(exc)
    return _one_line(text.splitlines(), limit) or type(exc).__name__


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
