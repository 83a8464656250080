"""``upgrade preview``: what the job as declared now would have written since a past batch,
against what the live job wrote, without touching either live table or checkpoint.

Under the live checkpoint's lock (held only while the live side is read, so a running job is
refused and none starts meanwhile), the preview

1. picks the newest valid snapshot taken at or before ``--since`` (a batch, or a time);
2. writes it out as a shadow checkpoint under ``<checkpoint>/_statekeeper/preview/<stamp>/``;
3. lists the landing files the live batches after the snapshot's read, up to the live
   checkpoint's last committed batch (its end offsets bound the file sources' logs: a batch
   planned but not committed, and files landed since, are left out), and links them into a
   shadow landing folder of their own: a file source reads every file of its folder, so the
   folder is the bound;
4. pins the live table's version, and the version it had before the first batch after the
   snapshot (Delta's txn record per batch of the query).

Then, lock released, the shadow table starts as that earlier version (a copy, never a clone: a
clone's files are the live table's), the shadow checkpoint is bound to it and to the
declaration of now (as ``upgrade migrate`` would record it, only for a change migrate accepts),
and the job runs available-now through the same runner as ``run``, its event-log rows left out.
The two tables are compared at the end (:mod:`spark_jobs.upgrade.diff`) and the shadow is
removed unless ``keep``.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

from spark_jobs.checkpoints.roots import Target
from spark_jobs.contract import paths
from spark_jobs.contract.errors import ExitCode, UserError
from spark_jobs.upgrade import verdicts


def parse_since(text: str) -> tuple[int | None, float | None]:
    """(batch, None) for a batch number, (None, epoch seconds) for a time: ISO-8601 or a
    duration back from now, as ``events --since`` takes it."""
    if text.strip().isdigit():
        return int(text), None
    from spark_jobs.eventlog.cli import since_time

    return None, since_time(text)


def pick_snapshot(
    snaps: list[dict[str, Any]],
    batch: int | None,
    when: float | None,
    last_committed: int,
    now: float | None = None,
) -> dict[str, Any]:
    """The newest valid snapshot (``snaps`` newest first) taken at or before ``batch`` or
    ``when``; a one-line refusal naming the snapshots there are when none is."""
    now = time.time() if now is None else now
    if batch is not None and batch > last_committed:
        raise UserError(
            f"--since {batch} is in the future: the last committed batch is {last_committed}"
        )
    if when is not None and when > now:
        raise UserError(f"--since {_iso(when)} is in the future (now is {_iso(now)})")
    for m in snaps:
        if not m.get("valid") or m.get("batch", -1) > last_committed:
            continue  # an abandoned line of batches (restored past) is no base either
        if (batch is not None and m["batch"] <= batch) or (
            when is not None and m.get("created_ts", 0.0) <= when
        ):
            return m
    what = f"batch {batch}" if batch is not None else _iso(when or 0.0)
    held = ", ".join(f"{m['id']} (batch {m.get('batch')})" for m in snaps[:8]) or "none"
    raise UserError(
        f"no valid snapshot taken at or before {what} to preview from; the store holds: {held} "
        "(take them with: checkpoint snapshot)"
    )


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def files_after(live: Any, shadow: Any, last: int) -> set[str]:
    """The landing files the live checkpoint's batches after the snapshot read: logged by its
    file sources up to batch ``last``'s end offsets, and not by the snapshot's."""
    from spark_jobs.checkpoints.unread import files_read, log_ends

    return files_read(live, log_ends(live, last) or {}).files - files_read(shadow).files


def stage_inputs(spec: Any, files: set[str], into: Path) -> dict[str, str]:
    """Link (copy across devices) each file into ``into/<kind>/``, keeping its path under its
    landing folder; the shadow's input overrides. A file that is gone refuses the preview."""
    out: dict[str, str] = {}
    placed: set[str] = set()
    for kind, uri in spec.inputs.items():
        folder = paths.local_path(uri)
        dest = into / kind
        dest.mkdir(parents=True, exist_ok=True)
        out[kind] = str(dest)
        if folder is None:
            continue
        root = Path(os.path.abspath(folder))
        for f in sorted(files):
            p = Path(f)
            if not p.is_relative_to(root):
                continue
            if not p.exists():
                raise UserError(
                    f"landing file {f}, read by the live job after the snapshot, is gone; the "
                    "preview cannot read the same input (pick a later --since)"
                )
            target = dest / p.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(p, target)  # no copy of the data, and the landing file is not touched
            except OSError:
                shutil.copy2(p, target)
            placed.add(f)
    if files - placed:
        raise UserError(
            f"the live job read {sorted(files - placed)[0]} after the snapshot, outside the "
            "landing folders the job declares now; preview needs the same inputs"
        )
    return out


def _refuse_kafka(spec: Any) -> None:
    from spark_jobs.contract.kafka import is_kafka

    for kind, uri in spec.inputs.items():
        if is_kafka(uri):
            raise UserError(
                f"upgrade preview reads landing folders only; input {kind} of job {spec.name} is "
                f"the Kafka topic {uri} (not supported yet)"
            )


def _shadow_start(table: str, query_id: str | None, batch: int) -> int | None:
    """The live table's version before the first commit of a batch after ``batch`` (None: the
    table did not exist then; its newest version when no such batch wrote)."""
    from spark_jobs.checkpoints.delta_txn import app_ids
    from spark_jobs.contract import delta

    log = delta.txn_log(table)
    if not log.exists:
        return None
    first = log.first_version_after(app_ids(query_id), batch) if query_id else None
    if first is None:
        return delta.version(table)
    return first - 1 if first > 0 else None


def _read_live(target: Target, since: str, table: str, root: Path) -> dict[str, Any]:
    """Under the live lock: the snapshot written out as the shadow checkpoint, the input staged,
    the live table's versions pinned. Reads the live side only."""
    from spark_jobs.checkpoints import manifests, queries
    from spark_jobs.checkpoints.layout import read_layout
    from spark_jobs.checkpoints.restore import build
    from spark_jobs.contract import delta
    from spark_jobs.contract.lock import JobLock

    if not Path(target.checkpoint).is_dir():  # before the lock, which would create it
        raise UserError(f"checkpoint {target.checkpoint} does not exist; nothing to preview")
    with JobLock(target.checkpoint, job=target.job, purpose="preview"):
        queries.check_pending(target.checkpoint)
        live = read_layout(target.checkpoint, sizes=False)
        last = live.last_committed
        if last is None:
            raise UserError(f"checkpoint {target.checkpoint} has no committed batch to preview")
        batch, when = parse_since(since)
        snap = pick_snapshot(manifests.list_snapshots(target.snapshot_root), batch, when, last)
        if snap["batch"] >= last:
            raise UserError(
                f"snapshot {snap['id']} holds batch {snap['batch']}, the last committed one: the "
                "live job wrote nothing after it to compare with (pick an earlier --since)"
            )
        ck = root / "checkpoint"
        build(snap, target.snapshot_root, ck)
        files = files_after(live, read_layout(str(ck), sizes=False), last)
        assert target.spec is not None
        inputs = stage_inputs(target.spec, files, root / "input")
        return {
            "snapshot": snap,
            "last": last,
            "files": len(files),
            "inputs": inputs,
            "live_version": delta.version(table),
            "start_version": _shadow_start(table, live.query_id, snap["batch"]),
        }


# Why a change keeps the new code off the snapshot's state (preview re-runs compatible changes)
SHADOW_REFUSED = {
    verdicts.REPARTITION: "needs checkpoint repartition first",
    verdicts.MIGRATE: "needs the state rewritten, which preview does not do on its shadow",
    verdicts.INCOMPATIBLE: "cannot be reached without a replay",
}


def _bind_shadow(target: Target, ck: str, table: str, inputs: dict[str, str]) -> None:
    """The shadow checkpoint answers to the job as declared now and writes the shadow tables;
    refused, as ``upgrade migrate`` refuses, for a change only a state rewrite or replay makes."""
    from spark_jobs.contract import binding
    from spark_jobs.jobs import definition, fingerprint
    from spark_jobs.upgrade import verdicts
    from spark_jobs.upgrade.plan import make_plan

    plan = make_plan(Target(ck, target.snapshot_root, target.job, target.spec))
    refused = [c for c in plan["_changes"] if c.verdict != verdicts.COMPATIBLE]
    if refused:
        c = max(refused, key=lambda c: verdicts.VERDICTS.index(c.verdict))
        raise UserError(
            f"upgrade preview {target.job}: {c.field} {c.before!r} -> {c.after!r} "
            f"{SHADOW_REFUSED[c.verdict]}, so the new code cannot run on the snapshot's state: "
            f"{c.means}",
            exit_code=ExitCode(verdicts.EXIT_CODES[c.verdict]),
        )
    record = binding.read_binding(ck) or {}
    assert target.spec is not None  # upgrade commands always name their job
    record["fingerprint"] = fingerprint(target.spec)
    record[binding.DECLARATION] = definition(target.job).declaration()
    record[binding.TABLES] = {"output": table, "quarantine": paths.quarantine_table(table)}
    # the shadow tables get the batches after the snapshot's, never the live table's earlier ones
    record[binding.TABLES_SINCE] = binding.last_commit(ck)
    # It reads the staged folder, which holds only files read after the snapshot: a file its
    # source logs name is never there, so the move from the live folder is no re-read
    # (spark_jobs.checkpoints.moved_inputs)
    record[binding.INPUTS] = dict(inputs)
    binding.write_binding(ck, record)


def preview(
    target: Target, since: str, output: str | None = None, keep: bool = False
) -> dict[str, Any]:
    """Run the job as declared now from the snapshot before ``since`` into a shadow table and
    compare it with the live table; the result as ``--json`` prints it."""
    from spark_jobs.contract import binding
    from spark_jobs.jobs import definition

    spec: Any = target.spec
    _refuse_kafka(spec)
    table = output or (binding.bound_tables(target.checkpoint) or {}).get("output") or spec.output
    # two previews may start in one second: each its own folder, removed by itself only
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + f"-{uuid.uuid4().hex[:6]}"
    root = Path(target.checkpoint) / paths.STATEKEEPER_DIR / paths.PREVIEW_DIR / stamp
    started = time.perf_counter()
    try:
        live = _read_live(target, since, table, root)
        shadow_ck, shadow_table = str(root / "checkpoint"), str(root / "table")
        _bind_shadow(target, shadow_ck, shadow_table, live["inputs"])
        run, found = _run_and_compare(target, live, shadow_ck, shadow_table, table)
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
            _remove_if_empty(root.parent)
    snap = live["snapshot"]
    return {
        "job": target.job,
        "checkpoint": target.checkpoint,
        "table": table,
        "snapshot": snap["id"],
        "batches": [snap["batch"] + 1, live["last"]],
        "live_version": live["live_version"],
        "input_files": live["files"],
        "shadow": str(root) if keep else None,
        "shadow_run": {"batches": run.batches, "input_rows": run.input_rows},
        "key": list(definition(target.job).keys),
        **found,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass  # another preview's, or kept: left as it is


def _run_and_compare(
    target: Target, live: dict[str, Any], ck: str, shadow_table: str, table: str
) -> tuple[Any, dict[str, Any]]:
    from pyspark.sql import SparkSession

    from spark_jobs.jobs import definition
    from spark_jobs.jobs.runner import run_job, spark_log
    from spark_jobs.runtime.session import build_session
    from spark_jobs.upgrade import diff

    spec: Any = target.spec
    shadow = spec.with_overrides(
        input=[f"{k}={u}" for k, u in live["inputs"].items()],
        output=shadow_table,
        checkpoint=ck,
        trigger="available-now",
    )
    own = SparkSession.getActiveSession() is None  # a caller's session (tests) stays up
    spark = build_session(
        f"statekeeper-preview-{target.job}", spec=shadow, log_file=spark_log(shadow)
    )
    try:
        start = diff.table_rows(spark, table, live["start_version"])
        if start is not None:
            start.write.format("delta").save(shadow_table)  # a copy: the shadow owns its files
        run = run_job(shadow, spark=spark, record_events=False)
        found = diff.compare(
            spark,
            diff.table_rows(spark, shadow_table),
            diff.table_rows(spark, table, live["live_version"]),
            definition(target.job).keys,
        )
    finally:
        if own:
            spark.stop()
    return run, found


def render(r: dict[str, Any]) -> str:
    first, last = r["batches"]
    lines = [
        f"upgrade preview {r['job']}: batches {first}..{last} of checkpoint {r['checkpoint']} "
        f"re-run as declared now from snapshot {r['snapshot']}",
        f"  over {r['input_files']} landing file(s), {r['shadow_run']['input_rows']} rows; against "
        f"table {r['table']} version {r['live_version']}, by key ({', '.join(r['key'])}):",
    ]
    for name, what in (("added", "rows"), ("removed", "rows"), ("changed", "keys")):
        lines.append(f"  {name:<8} {r[name]['count']} {what}")
        lines += [f"    {json.dumps(s, default=str)}" for s in r[name]["samples"]]
    if r["shadow"]:
        lines.append(f"shadow kept at {r['shadow']} (remove it before the next snapshot)")
    else:
        lines.append("live table and checkpoint untouched; shadow removed")
    return "\n".join(lines)
