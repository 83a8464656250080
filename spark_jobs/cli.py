"""``python -m spark_jobs``: the one command line of docs/contracts.md §1.

Every failure a user can cause ends as one line ``statekeeper: <reason>`` on stderr and a non-zero
exit code; nothing here imports pyspark until a command needs it.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from spark_jobs.contract.errors import ExitCode, UserError

if TYPE_CHECKING:
    from spark_jobs.contract.spec import JobSpec

# Packages that add their own subcommands through ``register(subparsers)``.
SUBCOMMAND_MODULES = (
    "spark_jobs.checkpoints.cli",
    "spark_jobs.quality.cli",
    "spark_jobs.publish",
    "spark_jobs.kafka.cli",
    "spark_jobs.eventlog.cli",
    "spark_jobs.tables.cli",
    "spark_jobs.upgrade.cli",
)


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line (and exit code 2), not a usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UserError(f"{self.prog}: {message} (see --help)")


def parse_conf(pairs: Sequence[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--conf {pair!r} must be key=value")
        out[key.strip()] = value
    return out


def cmd_list(args: argparse.Namespace) -> int:
    from spark_jobs.contract.spec import load_all

    for s in load_all():
        kinds = "+".join(s.kinds)
        print(
            f"{s.name:<16} {s.mode:<11} {kinds:<16} {s.output_mode:<7} trigger={s.trigger}  output={s.output}"
        )
    return 0


def confine_options(spec: JobSpec, args: argparse.Namespace) -> None:
    """``run``'s paths held to the rule the DAG guard applies to the same params (one rule,
    :func:`spark_jobs.contract.confine.given_path`): each ``--input`` inside a landing root, the
    ``--output`` inside a tables root, the ``--checkpoint`` inside a checkpoint root; the spec's
    own paths always pass."""
    from spark_jobs.contract.confine import given_path
    from spark_jobs.contract.spec import split_input

    for value in args.input or ():
        given_path("input", split_input(value)[1], own=tuple(spec.inputs.values()))
    if args.output:
        given_path("output", args.output, own=(spec.output,))
    if args.checkpoint:  # refused with the checkpoint commands' own line
        given_path("checkpoint", args.checkpoint, what="checkpoint")


def cmd_run(args: argparse.Namespace) -> int:
    from spark_jobs.contract.durations import parse_seconds
    from spark_jobs.contract.spec import load_spec

    declared = load_spec(args.job)
    confine_options(declared, args)
    spec = declared.with_overrides(
        input=args.input, output=args.output, checkpoint=args.checkpoint, trigger=args.trigger
    )
    run_for = parse_seconds(args.run_for, "--run-for") if args.run_for else None
    if run_for is not None and run_for <= 0:
        raise UserError("--run-for must be positive")
    from spark_jobs.jobs.runner import run_job

    summary = run_job(
        spec,
        conf=parse_conf(args.conf),
        run_for=run_for,
        new_checkpoint_for_existing_table=args.new_checkpoint_for_existing_table,
        rebind_tables=args.rebind_tables,
    )
    print(summary.line())
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    from spark_jobs.contract.confine import given_path
    from spark_jobs.generate import generate

    report = generate(
        args.kind,
        # a landing folder (or a Kafka topic): held where run's --input is
        out=given_path("input", args.out, what="--out"),
        events=args.events,
        keys=args.keys,
        seed=args.seed,
        bad_rate=args.bad_rate,
        late_rate=args.late_rate,
        files=args.files,
        dup_rate=args.dup_rate,
    )
    print(report.line())
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m spark_jobs", description="Statekeeper's stateful Spark jobs.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=OneLineParser)

    sp = sub.add_parser("list", help="every job, one line each, with its mode and output")
    sp.set_defaults(func=cmd_list)

    sp = sub.add_parser("run", help="run a job (available-now: process what is there, then exit)")
    sp.add_argument("job")
    sp.add_argument(
        "--input",
        action="append",
        metavar="URI",
        help="landing folder (KIND=URI for a job with several inputs), under a landing root "
        "(.data/landing or $STATEKEEPER_LANDING_ROOTS) unless it is the spec's own, or a "
        "kafka:// topic on the spec's cluster",
    )
    sp.add_argument(
        "--output",
        metavar="URI",
        help="the Delta table to write, under a tables root (.data/tables or "
        "$STATEKEEPER_TABLE_ROOTS) unless it is the spec's own",
    )
    sp.add_argument(
        "--checkpoint",
        metavar="URI",
        help="the checkpoint folder, under a checkpoint root (.data/checkpoints, .data/backfill, "
        "$STATEKEEPER_CHECKPOINT_ROOTS or a spec's checkpoint folder)",
    )
    sp.add_argument("--trigger", help="available-now | processing-time:30s")
    sp.add_argument(
        "--run-for", metavar="DURATION", help="stop a processing-time run after this long"
    )
    sp.add_argument("--conf", action="append", metavar="KEY=VALUE", help="extra Spark conf")
    sp.add_argument(
        "--new-checkpoint-for-existing-table",
        action="store_true",
        help="let a new checkpoint write into an output (or quarantine) table that another "
        "checkpoint's query already wrote: the new query re-reads all input and appends every "
        "row again (duplicates, unless the table was emptied or the input is new)",
    )
    sp.add_argument(
        "--rebind-tables",
        action="store_true",
        help="let a checkpoint that has run write into another --output than the table it is "
        "bound to: its next batches go to the new table, the old one keeps what it has "
        "(without the flag such a run is refused: docs/checkpoints.md)",
    )
    sp.set_defaults(func=cmd_run)

    from spark_jobs.generate import KINDS as GEN_KINDS

    sp = sub.add_parser("generate", help="write sample JSON-lines events into a landing folder")
    sp.add_argument("kind", choices=GEN_KINDS)
    sp.add_argument("--out", required=True, metavar="URI")
    sp.add_argument("--events", required=True, type=int)
    sp.add_argument(
        "--keys", type=int, default=None, help="distinct users/services (default: events/20)"
    )
    sp.add_argument("--seed", type=int, default=1)
    sp.add_argument("--bad-rate", type=float, default=0.0, help="share of bad lines (0..1)")
    sp.add_argument(
        "--late-rate", type=float, default=0.0, help="share of events hours behind (0..1)"
    )
    sp.add_argument(
        "--dup-rate", type=float, default=0.0, help="share of re-sent duplicate events (0..1)"
    )
    sp.add_argument("--files", type=int, default=None, help="files to split the events into")
    sp.set_defaults(func=cmd_generate)

    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # that package has no subcommand (yet); others still work
                continue
            raise
        module.register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    from spark_jobs.eventlog import who

    who.remember(argv)  # the event log's rows name the command that wrote them
    command, began = "command", time.time()
    try:
        args = build_parser().parse_args(argv)
        command = args.command
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"statekeeper: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("statekeeper: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except Exception as exc:
        line = _spark_failure(f"{command} failed: ", exc, began)
        if line is None:
            raise  # not Spark's: a bug of ours, with its traceback
        print(f"statekeeper: {line}", file=sys.stderr)
        return ExitCode.JOB_FAILED


def _spark_failure(head: str, exc: Exception, began: float) -> str | None:
    """One line for an error Spark raised under a command other than ``run`` (which says its own):
    a publish's MERGE refused by a constraint on the live table, a table's files gone under
    ``table maintain``, the driver's JVM gone since the command ``began``. None for any other
    error. The whole trace is in Spark's log."""
    if "pyspark" not in sys.modules:  # no Spark was started, so it is not Spark's
        return None
    from spark_jobs.runtime import spark_errors

    if isinstance(exc, spark_errors.GATEWAY_ERRORS):
        from spark_jobs.jobs.run_failures import jvm_gone_reason

        return head + jvm_gone_reason(began)

    if not isinstance(exc, spark_errors.SPARK_ERRORS):
        return None
    return head + spark_errors.reason(exc, spark_errors.LINE_LIMIT - len(head))
