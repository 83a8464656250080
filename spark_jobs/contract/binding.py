"""A checkpoint remembers the job spec that wrote it and the tables it writes
(``_statekeeper/job.json``, a plain JSON object; fields this module does not know are kept).

Spark pins some choices in the checkpoint (shuffle partitions, state store provider, the
transformWithState time mode) and our state blobs depend on others (executor, parameters).
Changing one under a live checkpoint fails deep inside Spark or, worse, silently; we refuse it
up front with a one-line reason instead.

The tables: a committed checkpoint run into another table sends its pending input there, and
the table it filled never gets it; restore and rollback must put back the tables the checkpoint
wrote, whatever the spec says today. So the output and quarantine tables are recorded at the
first run (:func:`bind_tables`) and read back in one place (:func:`bound_tables`).

The file is replaced whole (a temporary file, fsync, rename): a kill mid-write leaves the old
binding or the new one, never a truncated one that would block every later command.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

from spark_jobs.contract import paths
from spark_jobs.contract.errors import ExitCode, UserError

TABLES = "tables"  # the record's field: {"output": URI, "quarantine": URI}
# The record's field: the last batch the checkpoint had committed when it was bound to its tables
# (-1 at its first run). A batch committed after it wrote the output table, which must then be
# there (:func:`bind_tables`). Absent in a record bound by an earlier release: then nothing is
# assumed until a run finds the table.
TABLES_SINCE = "tables_since_batch"
UPGRADES = "upgrades"  # the record's field: the changes ``upgrade migrate`` accepted, in order
DECLARATION = "declaration"  # the record's field: JobDef.declaration() (the state's key)
INPUTS = "inputs"  # the record's field: {kind: URI}, what the checkpoint's last run read
REBIND_FLAG = "--rebind-tables"


def binding_path(checkpoint: str) -> str:
    return paths.join(checkpoint, paths.STATEKEEPER_DIR, paths.BINDING_FILE)


def read_binding(checkpoint: str) -> dict[str, Any] | None:
    import fsspec

    fs, p = fsspec.core.url_to_fs(binding_path(checkpoint))
    if not fs.exists(p):
        return None
    try:
        return dict(json.loads(fs.cat_file(p)))
    except ValueError as exc:
        raise UserError(
            f"{binding_path(checkpoint)} is not valid JSON; restore it from a snapshot or delete it"
        ) from exc


def write_binding(checkpoint: str, record: dict[str, Any]) -> None:
    """Replace the binding with ``record`` atomically (a local file: temp, fsync, rename, fsync
    of the folder; an object store's put is whole already)."""
    text = json.dumps(record, indent=2, sort_keys=True, default=str)
    target = binding_path(checkpoint)
    local = paths.local_path(target)
    if local is None:
        import fsspec

        with fsspec.open(target, "w", auto_mkdir=True) as fh:
            fh.write(text)
        return
    local.parent.mkdir(parents=True, exist_ok=True)
    tmp = local.with_name(f".{local.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, local)
    finally:
        tmp.unlink(missing_ok=True)  # gone after the rename; left only by a failed write
    folder = os.open(local.parent, os.O_RDONLY)
    try:
        os.fsync(folder)  # the rename itself survives a power cut
    finally:
        os.close(folder)


def has_state(checkpoint: str) -> bool:
    """True once Spark has written to the checkpoint (a first batch planned)."""
    import fsspec

    fs, p = fsspec.core.url_to_fs(paths.join(checkpoint, "offsets"))
    return bool(fs.exists(p) and fs.ls(p))


def check_and_bind(
    checkpoint: str,
    fingerprint: dict[str, Any],
    where: str,
    declaration: dict[str, Any] | None = None,
    comparable: Callable[[dict[str, Any]], dict[str, Any]] = dict,
) -> None:
    """Refuse a spec (or a declaration: the key its state is kept per) that no longer matches
    its checkpoint; record them on first use. A declaration entry the checkpoint did not record
    (bound by an older release) is recorded, not compared."""
    old = read_binding(checkpoint)
    declaration = declaration or {}
    if old is not None and has_state(checkpoint):
        before = old.get("fingerprint", {})
        recorded = old.get(DECLARATION) or {}
        changed = changes(before, fingerprint, comparable) + [
            (k, recorded[k], v)
            for k, v in sorted(declaration.items())
            if k in recorded and recorded[k] != v
        ]
        if changed:
            k, was, now = changed[0]
            job = fingerprint.get("job") or before.get("job") or "JOB"
            raise UserError(
                f"checkpoint {checkpoint} was written with {k}={was!r} but {where} now gives "
                f"{k}={now!r}; run python -m spark_jobs upgrade plan {job} to see what the change "
                "does to the live state and how to apply it (docs/upgrades.md)"
            )
        if any(k not in recorded for k in declaration):
            write_binding(checkpoint, {**old, DECLARATION: {**declaration, **recorded}})
        return
    record = {
        "fingerprint": fingerprint,
        DECLARATION: declaration,
        "bound_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    write_binding(checkpoint, record)


def changes(
    before: dict[str, Any],
    after: dict[str, Any],
    comparable: Callable[[dict[str, Any]], dict[str, Any]] = dict,
) -> list[tuple[str, Any, Any]]:
    """``(name, recorded, declared)`` of each fingerprint entry that differs, a parameter by its
    own name (``params.threshold``), parameters compared as ``comparable`` makes them (the
    job's: defaults filled in, durations in seconds), shown as written."""
    out = []
    for k in sorted(set(before) | set(after)):
        b, a = before.get(k), after.get(k)
        if b == a:
            continue
        if k == "params" and isinstance(b, dict) and isinstance(a, dict):
            cb, ca = comparable(b), comparable(a)
            out += [
                (f"params.{p}", b.get(p, cb.get(p)), a.get(p, ca.get(p)))
                for p in sorted(set(cb) | set(ca))
                if cb.get(p) != ca.get(p)
            ]
        else:
            out.append((k, b, a))
    return out


def bound_tables(checkpoint: str) -> dict[str, str] | None:
    """The tables ``checkpoint`` writes, ``{"output", "quarantine"}``, as its binding records
    them; None when it records none (never run, or bound by a release before tables were
    recorded). Run, restore, rollback, repartition, publish and ``table maintain`` all ask here.
    A record naming the output alone (edited by hand) gets the quarantine every run gives that
    output, never the output itself: maintain would then compact the output twice and restore
    would reset it twice."""
    return _bound(read_binding(checkpoint) or {})


def _bound(record: dict[str, Any]) -> dict[str, str] | None:
    tables = record.get(TABLES)
    if not isinstance(tables, dict) or not tables.get("output"):
        return None
    out = str(tables["output"])
    return {
        "output": out,
        "quarantine": str(tables.get("quarantine") or paths.quarantine_table(out)),
    }


def same_table(a: str, b: str) -> bool:
    """Whether two spellings of a table URI name the same table."""
    try:
        return paths.normalise(a) == paths.normalise(b)
    except ValueError:
        return a.rstrip("/") == b.rstrip("/")


def last_commit(checkpoint: str) -> int:
    """The newest batch the checkpoint committed (-1: none)."""
    import fsspec

    fs, p = fsspec.core.url_to_fs(paths.join(checkpoint, "commits"))
    if not fs.exists(p):
        return -1
    names = (str(f).rstrip("/").rsplit("/", 1)[-1] for f in fs.ls(p, detail=False))
    return max((int(n) for n in names if n.isdigit()), default=-1)


def bind_tables(checkpoint: str, tables: dict[str, str], rebind: bool = False) -> None:
    """Refuse to run a committed checkpoint into other tables than it is bound to, or into its
    bound output when that table is gone although a batch committed after the binding wrote it
    (the run would start a new table without those rows, and an upsert job's totals would count
    from zero, in silence), unless ``rebind``. Record ``tables`` at its first run, when an older
    binding has none, or on a rebind (kept in the record's ``rebinds`` history; a rebind to the
    same tables starts a new table where the bound output was gone), with the last batch
    committed before (:data:`TABLES_SINCE`)."""
    from spark_jobs.contract import delta

    record = read_binding(checkpoint) or {}
    bound = bound_tables(checkpoint)
    if bound is not None and _same_tables(bound, tables):
        if delta.exists(tables["output"]):
            if TABLES_SINCE not in record:
                # bound by an earlier release: the table is there now, so later batches find it
                record[TABLES_SINCE] = last_commit(checkpoint)
                write_binding(checkpoint, record)
            return
        if not rebind:
            if (owed := owed_batches(checkpoint, record)) is not None:
                _, since, last = owed
                raise _gone(checkpoint, tables["output"], since, last)
            return  # no batch owes it rows yet: the run makes it
    committed = has_state(checkpoint)
    if bound is not None and committed:
        if not rebind:
            raise _moved(checkpoint, bound, tables)
        record.setdefault("rebinds", []).append(
            {
                "from": bound,
                "to": dict(tables),
                "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
        )
    record[TABLES] = dict(tables)
    record[TABLES_SINCE] = last_commit(checkpoint)
    write_binding(checkpoint, record)


def owed_batches(
    checkpoint: str, record: dict[str, Any] | None = None
) -> tuple[str, int, int] | None:
    """``(output, since, last)`` when the bound ``output`` table is gone although batches
    ``since + 1`` to ``last`` committed after the binding wrote it (their rows are lost with it);
    None while the table is there, nothing owes it rows, or the binding is of a release before
    :data:`TABLES_SINCE`. ``record``: the binding, when the caller has read it."""
    from spark_jobs.contract import delta

    record = (read_binding(checkpoint) or {}) if record is None else record
    since, bound = record.get(TABLES_SINCE), _bound(record)
    if bound is None or not isinstance(since, int) or delta.exists(bound["output"]):
        return None
    last = last_commit(checkpoint)
    return (bound["output"], since, last) if last > since else None


# The ways out when the bound output is gone (:func:`owed_batches`): the run's refusal and
# ``checkpoint validate``'s TABLE_GONE finding give the same.
GONE_FIX = (
    "put the table back at that path (from a backup), or rebuild it with a new --checkpoint "
    f"(reads all input again), or run with {REBIND_FLAG} to start a new table there from "
    "this checkpoint's next batch (docs/checkpoints.md)"
)


def table_gone_line(checkpoint: str, output: str, since: int, last: int) -> str:
    """What is lost when the bound output is gone (:func:`owed_batches`)."""
    return (
        f"output table {output} is gone, yet checkpoint {checkpoint} committed batches "
        f"{since + 1}..{last} into it: a run would start a new table without their rows"
    )


def _gone(checkpoint: str, output: str, since: int, last: int) -> UserError:
    line = f"{table_gone_line(checkpoint, output, since, last)}; {GONE_FIX}"
    return UserError(line, exit_code=ExitCode.UNSAFE)


def _same_tables(a: dict[str, str], b: dict[str, str]) -> bool:
    return all(same_table(a[k], b[k]) for k in ("output", "quarantine"))


def _moved(checkpoint: str, bound: dict[str, str], tables: dict[str, str]) -> UserError:
    return UserError(
        f"checkpoint {checkpoint} is bound to table {bound['output']} (it has written "
        f"there), not {tables['output']}: its pending input would go to "
        f"{tables['output']} and never reach {bound['output']}; write "
        f"{tables['output']} from a new --checkpoint, or pass {REBIND_FLAG} to send "
        "this checkpoint's next batches there (docs/checkpoints.md)",
        exit_code=ExitCode.UNSAFE,
    )


def check_tables(checkpoint: str, tables: dict[str, str]) -> None:
    """Refuse (exit 4), as a run without the rebind flag does, a committed checkpoint bound to
    other tables than ``tables``; writes nothing (``upgrade plan`` asks it)."""
    bound = bound_tables(checkpoint)
    if bound is not None and not _same_tables(bound, tables) and has_state(checkpoint):
        raise _moved(checkpoint, bound, tables)


def record_inputs(checkpoint: str, inputs: dict[str, str]) -> None:
    """Keep the inputs a run reads (its spec's, or its ``--input``), so the checkpoint commands
    check this checkpoint against the folders it reads (a backfill's, a replay's), not the
    spec's (:func:`adopt_inputs`)."""
    record = read_binding(checkpoint) or {}
    if record.get(INPUTS) != dict(inputs):
        record[INPUTS] = dict(inputs)
        write_binding(checkpoint, record)


def bound_inputs(checkpoint: str) -> dict[str, str] | None:
    """The inputs the checkpoint's last run read ({kind: URI}); None before any was recorded."""
    bound = (read_binding(checkpoint) or {}).get(INPUTS)
    return bound if isinstance(bound, dict) else None


def adopt_inputs(spec: Any) -> Any:
    """``spec`` reading what its checkpoint's last run read, when the binding records other
    inputs; the spec as it is when it records none (a release before inputs were recorded)."""
    bound = bound_inputs(spec.checkpoint)
    if bound is None or bound == dict(spec.inputs):
        return spec
    try:
        return spec.with_overrides(input=[f"{k}={v}" for k, v in bound.items()])
    except UserError:
        return spec  # inputs this release does not take (a kind since renamed): the spec's


def record_repartition(checkpoint: str, entry: dict[str, Any]) -> None:
    """After ``checkpoint repartition``: the binding's partition count becomes ``entry["to"]`` and
    the change is kept in its ``repartitions`` history."""
    record = read_binding(checkpoint) or {"fingerprint": {}}
    record["fingerprint"]["shuffle_partitions"] = entry["to"]
    record.setdefault("repartitions", []).append(entry)
    write_binding(checkpoint, record)  # the tables (and any other field) are kept


def kafka_ids(checkpoint: str) -> dict[str, dict[str, Any]]:
    """The binding's ``kafka`` field: per Kafka input name, the ``cluster_id``, ``topic`` and
    ``topic_id`` the checkpoint reads (spark_jobs.kafka.ids); empty when none are recorded."""
    return dict((read_binding(checkpoint) or {}).get("kafka") or {})


def record_kafka_ids(checkpoint: str, ids: dict[str, dict[str, Any]]) -> None:
    """Set the binding's ``kafka`` field to ``ids``, the rest of the binding unchanged."""
    record = read_binding(checkpoint) or {"fingerprint": {}}
    record["kafka"] = ids
    write_binding(checkpoint, record)


def checkpoint_partitions(checkpoint: str, spec_partitions: int) -> int:
    """The shuffle partitions a run on ``checkpoint`` uses: the spec's, unless the checkpoint was
    repartitioned from that value (the spec then only sets where new checkpoints start). Any
    other difference is left for :func:`check_and_bind` to refuse."""
    record = read_binding(checkpoint) or {}
    history = record.get("repartitions") or []
    current = record.get("fingerprint", {}).get("shuffle_partitions")
    if history and current is not None and spec_partitions in {h["from"] for h in history}:
        return int(current)
    return spec_partitions


def adopt_repartition(spec: Any) -> Any:
    """``spec`` with the shuffle partitions its checkpoint runs at (see checkpoint_partitions)."""
    from dataclasses import replace

    n = checkpoint_partitions(spec.checkpoint, spec.shuffle_partitions)
    return spec if n == spec.shuffle_partitions else replace(spec, shuffle_partitions=n)
