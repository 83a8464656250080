"""Where a checkpoint may be: the one rule that ``run --checkpoint``, every ``checkpoint`` and
``table`` command, ``publish`` and the DAGs' ``checkpoint`` param apply alike, so a folder the
guard lets through is one the run accepts.

A path is resolved as a spec path is (:func:`spark_jobs.contract.paths.given`), then must lie
strictly inside a checkpoint root: ``<data>/checkpoints``, ``<data>/backfill`` (a backfill's own
checkpoint), the folders listed in ``$STATEKEEPER_CHECKPOINT_ROOTS``, and the folders holding the
job specs' own checkpoints. A path outside (``..``, a symlink, a typo'd absolute path) is refused
with the same line whoever was given it, before anything is read or written. Inside a root, a
Delta table, a job's output or Airflow's home is still no checkpoint.
"""

from __future__ import annotations

import os
from pathlib import Path

from spark_jobs.contract import delta, paths
from spark_jobs.contract.errors import UserError
from spark_jobs.contract.spec import load_all


def spec_checkpoint_folders() -> tuple[str, ...]:
    """The folders holding the specs' checkpoints (a spec may keep its checkpoint anywhere),
    never the data folder or one above it: that also holds the tables, the landing folders and
    Airflow's home."""
    try:
        specs = load_all()
    except UserError:
        specs = []  # a broken spec elsewhere must not block maintenance of this checkpoint
    data = paths.data_dir().resolve()
    out = []
    for s in specs:
        parent = (
            s.checkpoint.rsplit("/", 1)[0]
            if "://" in s.checkpoint
            else str(Path(s.checkpoint).parent)
        )
        if "://" in parent or not data.is_relative_to(Path(parent).resolve()):
            out.append(parent)
    return tuple(dict.fromkeys(out))


def not_checkpoints() -> list[str]:
    """Folders that are never checkpoints even under a root: Airflow's home and the tables."""
    out = [str(paths.data_dir() / "airflow")]
    if os.environ.get("AIRFLOW_HOME"):
        out.append(os.environ["AIRFLOW_HOME"])
    try:
        out += [s.output for s in load_all()]
    except UserError:
        pass  # the Delta table check below still stands
    return out


def check_is_checkpoint(ck: str, what: str = "checkpoint") -> None:
    """Refuse a folder that is (or is inside) a Delta table, a job's output or Airflow's home."""
    for other in not_checkpoints():
        o = paths.given(other).rstrip("/")
        if ck == o or ck.startswith(o + "/"):
            raise UserError(
                f"{what} {ck} lies in {o}, which is not a checkpoint folder; name a checkpoint"
            )
    local = paths.local_path(ck)
    if local is None:
        return
    for folder in (local, *local.parents):
        if delta.exists(str(folder)):
            raise UserError(f"{what} {ck} is inside the Delta table {folder}, not a checkpoint")


def checkpoint_path(uri: str, what: str = "checkpoint") -> str:
    """The checkpoint ``uri`` names, resolved and normalised, as every command may use it: inside
    a checkpoint root and not a table; else a one-line refusal that starts with ``what`` (how
    the path was given: the commands' ``checkpoint``, the DAG guard's ``param checkpoint:``)."""
    ck = paths.confine(uri, "checkpoints", what, spec_checkpoint_folders())
    check_is_checkpoint(ck, what)
    return ck
