"""``python -m spark_jobs table maintain JOB [--dry-run] [--json] [--checkpoint URI] [--output URI]``."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

from spark_jobs.contract import paths
from spark_jobs.contract.errors import UserError


def cmd_maintain(args: argparse.Namespace) -> int:
    from spark_jobs.checkpoints import roots
    from spark_jobs.tables.maintain import Job, maintain
    from spark_jobs.tables.report import text

    target = roots.resolve(args.job, args.checkpoint or None, args.snapshot_root or None)
    assert target.spec is not None  # resolved from a job name
    output, quarantine = _tables(target.spec.output, target.checkpoint, args.output or None)
    job = Job(target.spec, target.checkpoint, target.snapshot_root, output, quarantine)
    with _jvm_output_to_stderr():
        report = maintain(job, dry_run=args.dry_run)
    print(json.dumps(report, default=str) if args.json else text(report))
    return 0


def _tables(spec_output: str, checkpoint: str, given: str | None) -> tuple[str, str]:
    """The output and quarantine tables to maintain: those the checkpoint writes (its binding),
    else the spec's. The checkpoint's snapshots decide what VACUUM keeps, so a ``--output`` must
    be a Delta table and, once the checkpoint is bound, the very table it writes."""
    from spark_jobs.contract import delta
    from spark_jobs.contract.binding import bound_tables, same_table
    from spark_jobs.contract.confine import given_path

    bound = bound_tables(checkpoint)
    output = bound["output"] if bound else spec_output
    if given is not None:
        output = given_path("output", given, own=(spec_output, output))
        if paths.given(output) == paths.given(checkpoint):
            raise UserError(f"--output {output} is the checkpoint; name the job's Delta table")
        if bound and not same_table(output, bound["output"]):
            raise UserError(
                f"--output {output} is not the table checkpoint {checkpoint} writes "
                f"({bound['output']}): that checkpoint's snapshots decide what VACUUM keeps; "
                "name its table, or pass --checkpoint of the job that writes this one"
            )
        if not delta.exists(output):
            raise UserError(f"--output {output} is not a Delta table; name the job's table")
    quarantine = bound["quarantine"] if bound else paths.quarantine_table(output)
    return output, quarantine


@contextlib.contextmanager
def _jvm_output_to_stderr() -> Iterator[None]:
    """Stdout is the report's alone: Delta's VACUUM prints a line of its own on the JVM's stdout,
    which the JVM inherits from this process when it starts, so it starts with fd 1 on stderr."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("table", help="care for a job's Delta tables (docs/tables.md)")
    sub = p.add_subparsers(dest="table_command", required=True, parser_class=type(p))
    sp = sub.add_parser(
        "maintain",
        help="compaction, then a VACUUM that keeps every kept snapshot restorable, of the "
        "job's output and quarantine tables (safe beside a running job)",
    )
    sp.add_argument("job")
    sp.add_argument("--dry-run", action="store_true", help="say what would change, change nothing")
    sp.add_argument("--json", action="store_true", help="the report as one JSON object")
    sp.add_argument(
        "--checkpoint", metavar="URI", help="the job's checkpoint (default: the spec's)"
    )
    sp.add_argument("--output", metavar="URI", help="the job's output table (default: the spec's)")
    sp.add_argument(
        "--snapshot-root", metavar="URI", help="the job's snapshot store (default: the job's)"
    )
    sp.set_defaults(func=cmd_maintain)
