"""``python -m spark_jobs checkpoint (inspect | validate | snapshot | snapshots | prune | restore |
rollback | repartition)``: every command takes ``--job JOB`` (the spec's checkpoint) or ``--checkpoint URI``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from spark_jobs import eventlog
from spark_jobs.checkpoints import roots
from spark_jobs.contract import paths
from spark_jobs.contract.blocks import Snapshots
from spark_jobs.contract.errors import UserError


def looks_like_path(name: str) -> bool:
    """A folder, not a job name: job names have no ``/`` and do not start with ``.`` or ``~``."""
    return "/" in name or name.startswith((".", "~"))


def _target(args: argparse.Namespace) -> roots.Target:
    """``JOB`` or ``PATH`` (positional), ``--job``, ``--checkpoint``: one job and one checkpoint
    at most. A positional path is the checkpoint, as ``--checkpoint`` would be."""
    given = getattr(args, "job_name", None) or None
    checkpoint = args.checkpoint or None
    job = args.job or None
    if job and looks_like_path(job):
        raise UserError(f"--job {job}: give a job name; for a path use --checkpoint {job}")
    if given and looks_like_path(given):
        if checkpoint and paths.given(checkpoint) != paths.given(given):
            raise UserError(f"two checkpoints named: {given} and --checkpoint {checkpoint}")
        checkpoint = given
    elif given:
        if job and job != given:
            raise UserError(f"two jobs named: {given} and --job {job}")
        job = given
    target = roots.resolve(job, checkpoint, args.snapshot_root or None)
    if getattr(args, "output", None):  # restore and rollback put this table back: a write
        from spark_jobs.contract.confine import given_path

        given_path("output", args.output, own=(target.spec.output,) if target.spec else ())
    return target


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    print(json.dumps(data, indent=2, default=str) if args.json else text)


def _tables_note(r: dict[str, Any]) -> None:
    """Say so when the tables put back came from --output or the spec, not the binding."""
    if r.get("tables_from") not in (None, "", "binding"):
        print(f"statekeeper: note: {r['tables_from']}", file=sys.stderr)


def cmd_inspect(args: argparse.Namespace) -> int:
    from spark_jobs.checkpoints.inspect import inspect_checkpoint, render, state_rows

    t = _target(args)
    info = inspect_checkpoint(t.checkpoint)
    if args.rows and info.get("exists"):
        info["state_rows"] = state_rows(t.checkpoint)
    _emit(args, info, render(info))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from spark_jobs.checkpoints.validate import validate_checkpoint

    t = _target(args)
    report = validate_checkpoint(t.checkpoint, t.spec, snapshot_root=t.snapshot_root)
    d = report.to_dict()
    lines = [f.line() for f in report.findings]
    head = f"checkpoint {t.checkpoint}: {d['status']} ({len(report.errors)} errors, {len(report.warnings)} warnings)"
    if not report.exists:
        head = f"checkpoint {t.checkpoint}: clean (does not exist yet)"
    _emit(args, d, "\n".join([head, *lines]))
    return report.exit_code


def cmd_snapshot(args: argparse.Namespace) -> int:
    from spark_jobs.checkpoints.snapshots import take_snapshot

    s = take_snapshot(_target(args), dry_run=args.dry_run)
    verb = "would store" if args.dry_run else "stored"
    text = (
        f"snapshot {s['id']} of batch {s['batch']}: {s['files']} files, {s['bytes']} bytes; "
        f"{verb} {s['new_files']} new files ({s['new_bytes']} bytes), reused {s['reused_files']}"
        + ("" if s["valid"] else f"; NOT VALID ({', '.join(s['findings'])})")
    )
    _emit(args, s, text)
    eventlog.operation("snapshot", _target(args), s, dry_run=args.dry_run)
    return 0


def cmd_snapshots(args: argparse.Namespace) -> int:
    from spark_jobs.checkpoints.manifests import list_snapshots

    t = _target(args)
    snaps = [{k: v for k, v in m.items() if k != "files"} for m in list_snapshots(t.snapshot_root)]
    lines = [
        f"{m['id']}  batch {m['batch']:<6} {m['created']}  {m['bytes']:>12} B  {'valid' if m['valid'] else 'INVALID ' + ','.join(m['findings'])}"
        for m in snaps
    ]
    _emit(args, snaps, "\n".join(lines) if lines else f"no snapshots in {t.snapshot_root}")
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    from spark_jobs.checkpoints.snapshots import prune
    from spark_jobs.contract.durations import parse_seconds

    t = _target(args)
    policy = t.spec.snapshots if t.spec is not None else Snapshots()
    keep = args.keep if args.keep is not None else policy.keep
    max_age = parse_seconds(args.max_age, "--max-age") if args.max_age else None
    r = prune(t, keep=keep, max_age_s=max_age, dry_run=args.dry_run)
    verb = "would delete" if args.dry_run else "deleted"
    text = f"{verb} {len(r['deleted'])} snapshot(s) {', '.join(r['deleted'])}; kept {len(r['kept'])}; {r['objects_deleted']} objects, {r['bytes_freed']} bytes"
    _emit(args, r, text)
    return 0


def _tables_text(r: dict[str, Any]) -> str:
    parts = []
    for q in r.get("queries") or []:
        where = f"table {q['table']}"
        back = (
            f"back to version {q['table_version']}"
            if q["table_version"] is not None
            else "had nothing to undo"
        )
        parts.append(f"{where} {back}, query {q['checkpoint'] or 'main'} id {q['new_query_id']}")
    return "; ".join(parts)


def cmd_restore(args: argparse.Namespace) -> int:
    from spark_jobs.checkpoints.restore import restore

    r = restore(
        _target(args),
        args.snapshot,
        dry_run=args.dry_run,
        force=args.force,
        keep_tables=args.keep_tables,
        output=args.output,
    )
    _tables_note(r)
    if args.dry_run:
        text = f"would restore snapshot {r['snapshot']} (batch {r['batch']}, {r['files']} files) into {r['checkpoint']}; old checkpoint would go to {r['old_checkpoint_aside']}; tables put back: {', '.join(r['tables']) or 'none (--keep-tables)'}"
        _emit(args, r, text)
        return 0
    v = r["validation"]
    text = f"restored snapshot {r['snapshot']} (batch {r['batch']}) into {r['checkpoint']}; old checkpoint kept at {r['old_checkpoint_aside']}; validation: {v['status']}"
    if r.get("queries"):
        text += "\n" + _tables_text(r)
    _emit(args, r, text)
    eventlog.operation("restore", _target(args), r, reason=v["status"])
    return int(v["exit_code"])


def cmd_rollback(args: argparse.Namespace) -> int:
    from spark_jobs.checkpoints.rollback import rollback

    t = _target(args)
    r = rollback(
        t, args.to_batch, dry_run=args.dry_run, keep_tables=args.keep_tables, output=args.output
    )
    _tables_note(r)
    verb = "would move" if args.dry_run else "moved"
    text = f"rollback to batch {args.to_batch} (was {r['last_committed_before']}): {verb} {r['moved']} files of batches {r['moved_batches'] or 'none'} to {r['aside']}"
    if r.get("queries"):
        text += "\n" + ("would put back: " if args.dry_run else "") + _tables_text(r)
    _emit(args, r, text)
    eventlog.operation("rollback", t, r, dry_run=args.dry_run)
    return 0


def _add_table_args(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--output",
        metavar="URI",
        help="the job's Delta output table, only for a checkpoint whose binding names none (an "
        "older release's; default: the job spec's); its _quarantine too",
    )
    sp.add_argument(
        "--keep-tables",
        action="store_true",
        help="move only the checkpoint, keeping its query ids and the tables as they are: Delta "
        "then skips the re-run batch ids and rows of re-planned batches are lost; right only "
        "when the tables are rebuilt from scratch (docs/checkpoints.md)",
    )


def cmd_repartition(args: argparse.Namespace) -> int:
    from spark_jobs.checkpoints.repartition import plan, repartition

    t = _target(args)
    if t.spec is None:
        raise UserError("repartition needs the job: checkpoint repartition JOB --partitions N")
    if args.dry_run:
        p = plan(t, args.partitions)
        text = f"would repartition {p['checkpoint']} from {p['from']} to {p['to']} partitions ({', '.join(p['operators'])}) after batch {p['last_committed_batch']}"
        if p["undo_first"]:
            text += f", after putting back {p['undo_first']} (a repartition cut short)"
        _emit(args, p, text)
        return 0
    r = repartition(t, args.partitions)
    text = (
        f"repartitioned {r['checkpoint']} from {r['from']} to {r['to']} partitions in {r['seconds']}s "
        f"(batch {r['last_committed_batch']}); snapshot before: {r['snapshot']}; the job's next runs use {r['to']}"
    )
    if r.get("undone"):
        text += f"; first put back {r['undone']}, the copy a repartition cut short left"
    _emit(args, r, text)
    eventlog.operation("repartition", t, r)
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "checkpoint", help="inspect, validate, snapshot, prune, restore, roll back checkpoints"
    )
    sub = p.add_subparsers(dest="checkpoint_command", required=True, parser_class=type(p))

    def add(name: str, func: Any, help: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help)
        # JOB (positional or --job) names the spec; --checkpoint (or a positional path) a folder,
        # which with a job is checked against that job's spec. Empty values (unset Airflow
        # params) count as absent.
        sp.add_argument(
            "job_name",
            nargs="?",
            metavar="JOB|PATH",
            help="the job (its spec names the checkpoint), or a checkpoint folder (has a /)",
        )
        sp.add_argument("--job", help="the same as JOB")
        sp.add_argument("--checkpoint", metavar="URI", help="a checkpoint folder (path or URL)")
        sp.add_argument(
            "--snapshot-root", metavar="URI", help="snapshot store (default .data/snapshots/<job>)"
        )
        sp.add_argument("--json", action="store_true", help="machine-readable output")
        sp.set_defaults(func=func)
        return sp

    sp = add("inspect", cmd_inspect, "what a checkpoint holds")
    sp.add_argument(
        "--rows",
        action="store_true",
        help="also count state rows with Spark's state reader (starts Spark)",
    )
    add("validate", cmd_validate, "findings with codes; exit 0 clean, 10 warnings, 20 errors")
    sp = add(
        "snapshot",
        cmd_snapshot,
        "incremental copy at the last committed batch (takes the job lock)",
    )
    sp.add_argument("--dry-run", action="store_true")
    add("snapshots", cmd_snapshots, "list snapshots, newest first")
    sp = add(
        "prune", cmd_prune, "delete old snapshots by count and age (never the newest valid one)"
    )
    sp.add_argument(
        "--keep",
        type=int,
        help=f"snapshots to keep (default: spec snapshots.keep or {Snapshots().keep})",
    )
    sp.add_argument(
        "--max-age", metavar="DURATION", help="delete snapshots older than this, e.g. 14d"
    )
    sp.add_argument("--dry-run", action="store_true")
    sp = add(
        "restore",
        cmd_restore,
        "put a snapshot back in place, atomically; old checkpoint kept aside",
    )
    sp.add_argument("--snapshot", metavar="ID", help="snapshot id (default: the newest valid one)")
    _add_table_args(sp)
    sp.add_argument(
        "--force",
        action="store_true",
        help="restore even if the snapshot does not validate or is of another job",
    )
    sp.add_argument("--dry-run", action="store_true")
    sp = add(
        "rollback",
        cmd_rollback,
        "make batch N the last committed one (state for N must be on disk)",
    )
    sp.add_argument("--to-batch", type=int, required=True, metavar="N")
    _add_table_args(sp)
    sp.add_argument("--dry-run", action="store_true")
    sp = add(
        "repartition",
        cmd_repartition,
        "rescale a stopped job's state to N partitions (snapshot first; unchanged on failure)",
    )
    sp.add_argument("--partitions", type=int, required=True, metavar="N")
    sp.add_argument("--dry-run", action="store_true", help="check and say what would happen")


__all__ = ["register", "UserError"]
