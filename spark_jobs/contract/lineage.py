"""OpenLineage facts both sides share: whether a transport is configured, and how a job's
inputs and tables are named as datasets (the Airflow task that submits a run and the run's own
streaming events name them alike, so a lineage backend joins them).

Naming follows OpenLineage's conventions: a Kafka topic is ``kafka://HOST:PORT`` + the topic, a
local folder ``file`` + its absolute path, an object-store path ``SCHEME://BUCKET`` + the key.
"""

from __future__ import annotations

import os
from pathlib import Path

from spark_jobs.contract import paths
from spark_jobs.contract.spec import JobSpec

KAFKA = "kafka://"


def configured() -> bool:
    """Whether an OpenLineage transport is configured the client's standard ways (and
    ``OPENLINEAGE_DISABLED`` is not true); without one nothing is emitted."""
    if os.environ.get("OPENLINEAGE_DISABLED", "").strip().lower() == "true":
        return False
    if os.environ.get("OPENLINEAGE_URL"):
        return True
    if any(k.startswith("OPENLINEAGE__TRANSPORT") and v for k, v in os.environ.items()):
        return True
    files = (
        os.environ.get("OPENLINEAGE_CONFIG"),
        "openlineage.yml",
        "~/.openlineage/openlineage.yml",
    )
    return any(f and Path(f).expanduser().is_file() for f in files)


def dataset(uri: str) -> tuple[str, str]:
    """(namespace, name) of a landing folder, a Kafka topic or a table."""
    if uri.startswith(KAFKA):
        bootstrap, _, topic = uri[len(KAFKA) :].partition("/")
        return f"{KAFKA}{bootstrap.split(',')[0]}", topic
    full = paths.resolve(uri)
    local = paths.local_path(full)
    if local is not None:
        return "file", str(local)
    scheme, rest = full.split("://", 1)
    bucket, _, key = rest.partition("/")
    return f"{scheme}://{bucket}", key


def inputs(spec: JobSpec) -> list[tuple[str, str]]:
    return [dataset(u) for u in spec.inputs.values()]


def outputs(spec: JobSpec) -> list[tuple[str, str]]:
    """The job's Delta tables: its output and its quarantine."""
    return [dataset(spec.output), dataset(spec.quarantine)]
