"""``python -m spark_jobs quality JOB [--output URI] [--checkpoint URI] [--full] [--json]``
(``--table`` is the same as ``--output``).

Exit codes: 0 every ``fail`` check passed (warnings allowed), 1 a ``fail``-severity finding,
2 the checks could not run (one line on stderr saying why).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from spark_jobs import eventlog
from spark_jobs.contract.errors import UserError


class _TableOption(argparse.Action):
    """Stores the table and the spelling given, so a refusal names the option the user typed."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: str | None = None) -> None:
        namespace.table, namespace.table_option = values, option


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "quality",
        help="data-quality checks (Great Expectations) on a job's Delta output",
        description="Validate the Delta versions written since the last validated one.",
    )
    p.add_argument("job")
    # --output, as every command that takes a job's table spells it; --table is the same option
    p.add_argument(
        "--output",
        "--table",
        dest="table",
        metavar="URI",
        action=_TableOption,
        help="the Delta table to check (default: the spec's output); --table is the same",
    )
    p.add_argument(
        "--checkpoint",
        metavar="URI",
        help="the job's checkpoint, for its progress log (default: the spec's checkpoint)",
    )
    p.add_argument(
        "--full", action="store_true", help="validate the whole table (backfills, first runs)"
    )
    p.add_argument(
        "--engine",
        choices=("auto", "pandas", "spark"),
        default="auto",
        help="auto (default): pandas without a JVM up to the spec's quality.pandas_max_rows "
        "(1,000,000) rows to validate, Spark above",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_quality)


def cmd_quality(args: argparse.Namespace) -> int:
    from spark_jobs.contract.confine import given_path
    from spark_jobs.contract.spec import load_spec

    spec = load_spec(args.job)
    # The checks write <table>/_quality (results, Data Docs): the table is held where every
    # command's --output is; the progress log is read from a checkpoint as run would take it.
    said = getattr(args, "table_option", None) or "--output"
    table = given_path("output", args.table, said, (spec.output,)) if args.table else None
    if args.checkpoint:
        spec = spec.with_overrides(checkpoint=given_path("checkpoint", args.checkpoint))
    from spark_jobs.quality.runner import run_quality

    try:
        result = run_quality(spec, table=table, full=args.full, engine=args.engine)
    except UserError:
        raise
    # The command's boundary, kept broad on purpose: two engines (Spark with Great Expectations,
    # deltalake with pandas) each raise from their own wide families, and importing those here
    # would load both. Nothing is swallowed: any failure is one line with its type, exit 2,
    # and no result is written.
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UserError(
            f"quality {args.job}: could not run: {type(exc).__name__}: {first[:300]}"
        ) from exc
    if args.json:
        print(json.dumps(result.to_dict(), default=str, indent=1))
    else:
        print(result.summary())
    eventlog.operation("quality", spec, result.to_dict(), reason=result.status)
    return result.exit_code
