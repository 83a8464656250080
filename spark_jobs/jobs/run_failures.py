"""A failed run's one line: what Spark raised while a job ran, said as what went wrong and what
to do, with Spark's wrappers (the query, ``foreachBatch``, py4j) peeled off. The whole trace
stays in Spark's log beside the checkpoint."""

from __future__ import annotations

import os
import re
from pathlib import Path

from spark_jobs.contract import paths
from spark_jobs.contract.errors import JobFailed
from spark_jobs.contract.spec import JobSpec
from spark_jobs.io import watermarks
from spark_jobs.runtime import spark_errors

# Spark's refusals of a state row other than the stored one (a release that changed it)
STATE_SCHEMA_ERRORS = (
    "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE",
    "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE",
)


def failure(spec: JobSpec, exc: BaseException) -> JobFailed:
    """The one-line failure for an error Spark raised while ``spec`` ran (the detail stays in
    Spark's log)."""
    from spark_jobs.kafka.source import data_loss_line

    text = str(exc)
    lost = data_loss_line(spec, text)
    if lost:
        return JobFailed(lost)
    head = f"job {spec.name} failed: "
    if any(c in text for c in STATE_SCHEMA_ERRORS):  # the code's state row changed
        return JobFailed(
            f"{head}the job's state row no longer matches the one its checkpoint "
            f"{spec.checkpoint} holds; run python -m spark_jobs upgrade plan {spec.name} to see "
            "the change and how to migrate the state (docs/upgrades.md)"
        )
    damaged = re.search(r"CANNOT_LOAD_STATE_STORE[.\w]*", text)
    if damaged:  # Spark's reason is buried under the foreachBatch and py4j wrappers
        return JobFailed(
            f"{head}Spark could not load its state from checkpoint {spec.checkpoint} "
            f"({damaged.group(0)}: a state file is damaged or missing; Spark's log has which); "
            f"restore a snapshot: python -m spark_jobs checkpoint restore {spec.name} "
            f"--checkpoint {spec.checkpoint}"
        )
    unreadable = spark_errors.unreadable_file(text)
    if unreadable:
        return JobFailed(head + unreadable_line(spec, *unreadable))
    if watermarks.REDEFINED in text:  # Spark's hint (a config) is not the fix for our jobs
        return JobFailed(
            f"{head}its build sets a watermark where the runner already set one (the job "
            "declares watermarks); ask with spark_jobs.io.watermarks.on(stream, column, seconds) "
            "instead of withWatermark (docs/jobs.md, Adding a job)"
        )
    return JobFailed(head + spark_errors.reason(exc, spark_errors.LINE_LIMIT - len(head)))


def jvm_gone(spec: JobSpec, since: float) -> JobFailed:
    """The one line for a run whose driver JVM went away under it (:func:`jvm_gone_reason`)."""
    return JobFailed(
        f"job {spec.name} failed: {jvm_gone_reason(since)}. A batch it did not commit runs "
        "again at the next run, once: nothing is lost or doubled"
    )


def jvm_gone_reason(since: float) -> str:
    """Which way a driver JVM went away: the crash report it wrote since ``since``
    (:func:`spark_jobs.contract.jvm.crash_report_option`), else a kill (by hand, or the kernel's
    when memory ran out), which leaves none."""
    reports = []
    for report in paths.jvm_crash_dir().glob("hs_err_pid*.log"):
        try:
            made = report.stat().st_mtime
        except FileNotFoundError:
            continue  # removed since the folder was listed
        if made >= since:
            reports.append((made, report))
    if reports:
        return f"its driver JVM went away mid-run: it crashed (its report: {max(reports)[1]})"
    return (
        "its driver JVM went away mid-run: it was killed (it wrote no crash report: a kill by "
        "hand, or the kernel's short of memory)"
    )


def unreadable_line(spec: JobSpec, path: str, cause: str) -> str:
    """What to do about a file Spark could not read. A landing file (a truncated ``.json.gz``, a
    file without read rights) failed its batch before the batch committed; the batch is re-run
    from its plan, which lists the file by name: a whole copy at that path is read then, and a
    file moved away is skipped (its name counts as read, so only a new name brings its lines)."""
    if not any(_under(path, uri) for uri in spec.inputs.values()):
        return (
            f"cannot read file {path} ({cause}); Spark's log beside the checkpoint has the detail"
        )
    return (
        f"cannot read landing file {path} ({cause}); its batch did not commit, so nothing is "
        "lost. Put a whole copy at that path and run again, or move the file away: the batch "
        "then runs without it, and its lines are read only if landed again under a new name"
    )


def _under(path: str, uri: str) -> bool:
    """Whether the file ``path`` Spark named lies in the landing folder ``uri`` (as given, or
    with its links resolved)."""
    folder = paths.local_path(uri)
    if folder is None:
        return path.startswith(uri.rstrip("/") + "/")
    file = Path(os.path.abspath(path))
    return any(file.is_relative_to(f) for f in (Path(os.path.abspath(folder)), folder.resolve()))
