"""Where things live. The one place that knows the project root and the layout under it."""

from __future__ import annotations

import os
from pathlib import Path

# Project files Statekeeper keeps inside a Spark checkpoint (CONTRACTS.md section 4).
STATEKEEPER_DIR = "_statekeeper"
PROGRESS_FILE = "progress.jsonl"
LOCK_FILE = "lock"
BINDING_FILE = "job.json"
QUARANTINE_CHECKPOINT = "quarantine"  # the quarantine query's own checkpoint, under _statekeeper/
QUARANTINE_TABLE = "_quarantine"  # under the job's output


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


def cache_dir() -> Path:
    return project_root() / ".cache"


def jars_dir() -> Path:
    return cache_dir() / "jars"


def ivy_dir() -> Path:
    return cache_dir() / "ivy"


def broker_jars_dir() -> Path:
    """The local Kafka broker's jars: its own JVM's classpath, never Spark's."""
    return cache_dir() / "kafka-broker"


def kafka_dir() -> Path:
    """The local broker's log dirs, config, pid file and log (``kafka up``)."""
    return data_dir() / "kafka"


def statekeeper_dir(checkpoint: str) -> str:
    return join(checkpoint, STATEKEEPER_DIR)


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
