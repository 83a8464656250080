"""Where things live. The one place that knows the project root, the layout under it, how a
path given by a spec, a command or a DAG param is resolved, and which folders such paths may
name (the roots).

Imports neither Spark nor Airflow: the Airflow plugin (the two-driver guard, the DAG param checks)
and the Spark side (the spec loader) resolve every path here, so they always mean the same folder.
"""

from __future__ import annotations

import os
import re
from fnmatch import fnmatchcase
from pathlib import Path

from spark_jobs.contract.errors import UserError

# Project files Statekeeper keeps inside a Spark checkpoint (docs/contracts.md §4).
STATEKEEPER_DIR = "_statekeeper"
PROGRESS_FILE = "progress.jsonl"
LOCK_FILE = "lock"
BINDING_FILE = "job.json"
PENDING_FILE = "pending.json"  # a restore, rollback or repartition cut short: runs refuse
MAINTENANCE_FILE = "maintenance.json"  # the last `table maintain` report of the job's tables
PLAN_FILE = "plan.json"  # the last `upgrade plan` of the job (the DAGs run one before each submit)
QUARANTINE_CHECKPOINT = "quarantine"  # the quarantine query's own checkpoint, under _statekeeper/
PREVIEW_DIR = "preview"  # upgrade preview's shadow checkpoints and tables, under _statekeeper/
QUARANTINE_TABLE = "_quarantine"  # under the job's output
# The quality runs' results table (Delta, one row per expectation per run), under the job's output.
QUALITY_DIR = "_quality"
RESULTS_TABLE = "results"
# A published backfill's ledger entry, ``<live table>/_statekeeper/backfills/KEY.json``.
BACKFILLS_DIR = "backfills"
# Landing files the file source picks up; generate writes hidden temp files and renames them into
# place, and Spark's file source skips names starting with "." or "_".
LANDING_GLOB = "*.json*"
# Characters a landing file's name may not hold: every listing leaves such a file out (the
# project's Hadoop path filter, spark_jobs/io/jvm/statekeeper/LandingNameFilter.java, which
# holds the same set). Spark's file source read every other file of a batch holding a name with
# a glob character twice; a name with ":" fails its batch every time (docs/jobs.md).
UNREADABLE_NAME_CHARS = "[]{}?*\\:"
# The deployment's one event log (Delta): a row per committed batch and per operation.
EVENTS_TABLE = ".data/tables/_statekeeper_events"
# Event-time partitions found complete after a committed batch, and those a publish re-wrote
# (spark_jobs.contract.completeness): the Airflow side emits their asset events.
COMPLETENESS_FILE = "completeness.jsonl"
RECOMPLETIONS_FILE = "recompletions.jsonl"


def hidden_name(name: str) -> bool:
    """A landing name the file source never reads (``generate``'s temp files, ``_SUCCESS``): it
    starts with ``.`` or ``_`` (see :data:`LANDING_GLOB`)."""
    return name.startswith((".", "_"))


def landing_file(name: str) -> bool:
    """A file name the file source reads in a landing folder: named :data:`LANDING_GLOB`, and
    not hidden, with none of :data:`UNREADABLE_NAME_CHARS`. The one rule for every check that
    says what a run will or will not read."""
    return (
        not hidden_name(name)
        and fnmatchcase(name, LANDING_GLOB)
        and not any(c in UNREADABLE_NAME_CHARS for c in name)
    )


def project_root() -> Path:
    """The checkout: $STATEKEEPER_HOME, else the folder holding ``include/jobs``."""
    env = os.environ.get("STATEKEEPER_HOME")
    if env:
        return Path(env).resolve()
    here = Path(__file__).resolve().parents[2]
    if (here / "include" / "jobs").is_dir():
        return here
    return Path.cwd().resolve()


def specs_dir() -> Path:
    """Job specs: $STATEKEEPER_SPECS (tests, staging copies), else ``include/jobs``."""
    env = os.environ.get("STATEKEEPER_SPECS")
    return Path(env).resolve() if env else project_root() / "include" / "jobs"


def data_dir() -> Path:
    """The embedded default's files: $STATEKEEPER_DATA, else ``./.data``."""
    env = os.environ.get("STATEKEEPER_DATA")
    return Path(env).resolve() if env else project_root() / ".data"


def resolve(uri: str) -> str:
    """The one path resolver. URLs are left alone (trailing ``/`` dropped); a relative local path
    is under the project root, except ``.data/...``, which is under the data folder
    ($STATEKEEPER_DATA relocates every spec's files at once, e.g. to ``/data`` under
    docker-compose)."""
    if "://" in uri:
        return uri.rstrip("/")
    p = Path(uri).expanduser()
    if not p.is_absolute():
        parts = p.parts
        if parts and parts[0] == ".data":
            p = data_dir().joinpath(*parts[1:])
        else:
            p = project_root() / p
    return str(p)


# The roots: the folders a path given by someone (a DAG param, a command's option) may name, per
# kind of path. Each is ``<data>/<folder>`` for its folders plus the folders listed in its
# environment variable (``:``-separated, e.g. a mounted volume or a bucket URL). Checkpoints: the
# live ones and a backfill's own (``<data>/backfill/<job>/<key>/checkpoint``); tables: the live
# ones and a backfill's staged table beside its checkpoint (``<data>/backfill/<job>/<key>/table``).
ROOTS: dict[str, tuple[tuple[str, ...], str]] = {
    "landing": (("landing",), "STATEKEEPER_LANDING_ROOTS"),
    "tables": (("tables", "backfill"), "STATEKEEPER_TABLE_ROOTS"),
    "checkpoints": (("checkpoints", "backfill"), "STATEKEEPER_CHECKPOINT_ROOTS"),
    "snapshots": (("snapshots",), "STATEKEEPER_SNAPSHOT_ROOTS"),
}


def roots(kind: str) -> list[str]:
    """The roots of one kind of path (``landing``, ``tables``, ``checkpoints``, ``snapshots``)."""
    folders, env = ROOTS[kind]
    # ``:``-separated, but the ``:`` of ``scheme://`` does not separate.
    extra = [r for r in re.split(r":(?!//)", os.environ.get(env, "")) if r.strip()]
    return list(dict.fromkeys([*(str(data_dir() / f) for f in folders), *extra]))


def roots_env(*folders: str | Path) -> dict[str, str]:
    """The environment that makes ``folders`` roots of every kind, as an operator adds a mounted
    volume: for runs that keep their landing folders, tables and checkpoints in a folder of their
    own (a bench's work folder, a test's)."""
    joined = ":".join(str(f) for f in folders)
    return {env: joined for _, env in ROOTS.values()}


def normalise(uri: str) -> str:
    """An absolute, symlink-free local path, or the URL with ``.``/``..`` segments applied; a URL
    that climbs above its bucket raises ValueError."""
    local = local_path(uri)
    if local is not None:
        return str(Path(os.path.abspath(local.expanduser())).resolve())
    scheme, rest = uri.split("://", 1)
    out: list[str] = []
    for seg in rest.split("/"):
        if seg == "..":
            if len(out) <= 1:
                raise ValueError(f"{uri} climbs above its bucket")
            out.pop()
        elif seg not in ("", "."):
            out.append(seg)
    return f"{scheme}://{'/'.join(out)}"


def outside_roots(
    uri: str, kind: str, allow_root: bool = False, extra: tuple[str, ...] = ()
) -> str | None:
    """None when ``uri`` (resolved like a spec path) lies inside a root of ``kind`` or one of
    ``extra`` (or is one, with ``allow_root``); else the one-line reason, naming the roots and
    how to add one."""
    try:
        norm = normalise(resolve(uri))
    except ValueError as exc:
        return str(exc)
    allowed = list(dict.fromkeys([*roots(kind), *extra]))
    for root in allowed:
        r = normalise(root).rstrip("/")
        if norm.startswith(r + "/") or (allow_root and norm == r):
            return None
        if norm == r:  # "outside the roots (..., this root)" would read as a contradiction
            return f"{uri} is a {kind} root itself, shared by every job; use a folder under it"
    return (
        f"{uri} is outside the {kind} roots ({', '.join(allowed)}); use a path under one of "
        f"them or add its folder to ${ROOTS[kind][1]}"
    )


def given(uri: str) -> str:
    """A path someone gave (an option, a param), resolved as a spec path is and normalised; a URL
    that climbs above its bucket is a user error."""
    try:
        return normalise(resolve(uri))
    except ValueError as exc:
        raise UserError(str(exc)) from None


def confine(uri: str, kind: str, what: str, extra: tuple[str, ...] = ()) -> str:
    """``uri`` resolved and normalised, if strictly inside a root of ``kind`` (or ``extra``); else
    the one-line refusal naming ``what`` was given, the roots and the variable that adds one."""
    why = outside_roots(uri, kind, extra=extra)
    if why:
        raise UserError(f"{what} {why}")
    return given(uri)


def events_table() -> str:
    """The event log's Delta table, under the data folder like every ``.data`` path."""
    return resolve(EVENTS_TABLE)


def cache_dir() -> Path:
    return project_root() / ".cache"


def jars_dir() -> Path:
    return cache_dir() / "jars"


def broker_jars_dir() -> Path:
    """The local Kafka broker's jars: its own JVM's classpath, never Spark's."""
    return cache_dir() / "kafka-broker"


def jvm_crash_dir() -> Path:
    """Where a driver JVM that crashes writes its report (``hs_err_pid*.log``): the data folder,
    not the working folder of whoever started the run (a user's, an Airflow worker's)."""
    return data_dir() / "jvm-crashes"


def kafka_dir() -> Path:
    """The local broker's log dirs, config, pid file and log (``kafka up``)."""
    return data_dir() / "kafka"


def statekeeper_dir(checkpoint: str) -> str:
    return join(checkpoint, STATEKEEPER_DIR)


def quarantine_table(output: str) -> str:
    """The quarantine table of a job writing ``output``."""
    return join(output, QUARANTINE_TABLE)


def quarantine_checkpoint(checkpoint: str) -> str:
    """The quarantine query's own checkpoint, inside the job's."""
    return join(checkpoint, STATEKEEPER_DIR, QUARANTINE_CHECKPOINT)


def quality_dir(output: str) -> str:
    return join(output, QUALITY_DIR)


def results_uri(output: str) -> str:
    """The quality results table of a job writing ``output``."""
    return join(quality_dir(output), RESULTS_TABLE)


def backfill_ledger(table: str, key: str) -> str:
    """The ledger entry saying backfill ``key`` was published into ``table``."""
    return join(table, STATEKEEPER_DIR, BACKFILLS_DIR, f"{key}.json")


def default_snapshot_root(job: str) -> str:
    """Where a job's checkpoint snapshots go unless a command names another root."""
    return str(data_dir() / "snapshots" / job)


def join(uri: str, *parts: str) -> str:
    """Join path parts onto a local path or a URL without collapsing ``scheme://``."""
    out = uri.rstrip("/")
    for p in parts:
        out = f"{out}/{p.strip('/')}"
    return out


def local_path(uri: str) -> Path | None:
    """The local Path of a ``file:`` URI or plain path; None for remote URLs."""
    if uri.startswith("file://"):
        return Path(uri[len("file://") :])
    if "://" in uri:
        return None
    return Path(uri)
