"""Where a path someone gives may point: the one rule that the commands' options (``run --input
/--output/--checkpoint``, ``generate --out``, ``quality --table/--checkpoint``, ``publish
--output/--staged``, every ``checkpoint`` and ``table`` command, ``upgrade``) and the DAGs' params
apply alike, so a path the DAG guard lets through is one the command accepts
(:data:`PATH_OPTIONS`, :func:`given_path`). A landing folder or a table must lie inside a root of
its kind (:func:`spark_jobs.contract.paths.roots`); a job's own paths, from its spec, are its
operator's configuration and always allowed.

A checkpoint is resolved as a spec path is (:func:`spark_jobs.contract.paths.given`), then must
lie strictly inside a checkpoint root: ``<data>/checkpoints``, ``<data>/backfill`` (a backfill's own
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
from spark_jobs.contract.kafka import is_kafka
from spark_jobs.contract.spec import JobSpec, load_all


def _specs() -> list[JobSpec]:
    """Every spec, or none when one is broken: a broken spec elsewhere must not block
    maintenance of this checkpoint (the Delta table check still stands)."""
    try:
        return load_all()
    except UserError:
        return []


def spec_checkpoint_folders(specs: list[JobSpec] | None = None) -> tuple[str, ...]:
    """The folders holding the checkpoints of ``specs`` (default: every spec; a spec may keep
    its checkpoint anywhere), never the data folder or one above it: that also holds the
    tables, the landing folders and Airflow's home."""
    specs = _specs() if specs is None else specs
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


def not_checkpoints(specs: list[JobSpec] | None = None) -> list[str]:
    """Folders that are never checkpoints even under a root: Airflow's home and the tables of
    ``specs`` (default: every spec)."""
    out = [str(paths.data_dir() / "airflow")]
    if os.environ.get("AIRFLOW_HOME"):
        out.append(os.environ["AIRFLOW_HOME"])
    return out + [s.output for s in (_specs() if specs is None else specs)]


def check_is_checkpoint(
    ck: str, what: str = "checkpoint", specs: list[JobSpec] | None = None
) -> None:
    """Refuse a folder that is (or is inside) a Delta table, a job's output or Airflow's home."""
    for other in not_checkpoints(specs):
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


# option or param -> (kind of root, whether the root itself is allowed). An input may be a
# landing root (a multi-input job reads one folder per kind under it); tables_root holds <job>
# tables; a checkpoint is held to checkpoint_path's rule.
PATH_OPTIONS: dict[str, tuple[str, bool]] = {
    "input": ("landing", True),
    "output": ("tables", False),
    "checkpoint": ("checkpoints", False),
    "tables_root": ("tables", True),
}


def given_path(name: str, uri: str, what: str | None = None, own: tuple[str, ...] = ()) -> str:
    """``uri`` given as option or param ``name`` (a key of :data:`PATH_OPTIONS`), resolved and
    normalised, if its rule lets it through; else a one-line refusal starting with ``what`` (by
    default ``--name``). ``own``: the job's own paths of this kind (its spec's), always allowed.
    A ``kafka://`` input is the spec's business (``contract.kafka.check_cluster``)."""
    what = what or f"--{name.replace('_', '-')}"
    if name == "checkpoint":
        return checkpoint_path(uri, what)
    if name == "input" and is_kafka(uri):
        return uri
    kind, allow_root = PATH_OPTIONS[name]
    why = paths.outside_roots(uri, kind, allow_root=allow_root)  # also: a URL above its bucket
    if why and not _is_own(uri, own):
        raise UserError(f"{what} {why}")
    return paths.given(uri)


def _is_own(uri: str, own: tuple[str, ...]) -> bool:
    """Whether ``uri`` names one of the job's own paths ``own`` (its spec's; Kafka aside)."""
    try:
        return paths.given(uri) in {paths.given(o) for o in own if not is_kafka(o)}
    except UserError:
        return False  # a URL above its bucket is no one's path


def checkpoint_path(uri: str, what: str = "checkpoint") -> str:
    """The checkpoint ``uri`` names, resolved and normalised, as every command may use it: inside
    a checkpoint root and not a table; else a one-line refusal that starts with ``what`` (how
    the path was given: the commands' ``checkpoint``, the DAG guard's ``param checkpoint:``)."""
    specs = _specs()  # read once for both rules
    ck = paths.confine(uri, "checkpoints", what, spec_checkpoint_folders(specs))
    check_is_checkpoint(ck, what, specs)
    return ck
