"""``python -m spark_jobs events JOB [--since TIME] [--kind KIND] [--json]``: the job's rows of
the event log, oldest first, one line each (``--json``: one object per line)."""

from __future__ import annotations

import argparse
import json
import time
from datetime import datetime
from typing import Any

from spark_jobs.contract import events
from spark_jobs.contract.errors import UserError


def since_time(text: str) -> float:
    """Epoch seconds from ISO-8601 (``2026-11-23``, ``2026-11-23T09:00:00Z``) or a duration back
    from now (``2h``, ``7 days``)."""
    try:
        return events.to_time(text).timestamp()  # type: ignore[union-attr]
    except ValueError:
        pass
    from spark_jobs.contract.durations import parse_seconds

    try:
        # a duration reaching back past 1970 means "from the start": nothing is older
        return max(0.0, time.time() - parse_seconds(text, "--since"))
    except UserError:
        raise UserError(
            f"--since {text!r} is neither a time nor a duration; write e.g. "
            "2026-11-23T09:00:00Z or 2h"
        ) from None


def _iso(t: datetime | None) -> str:
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z") if t else "-"


def line(row: dict[str, Any]) -> str:
    """One row as one line: when, kind, then what matters for the kind."""
    head = f"{_iso(row['at'])}  {row['kind']:<11}"
    if row["kind"] == events.BATCH:
        parts = [
            f"batch={row['batch_id']}",
            f"rows={row['input_rows'] if row['input_rows'] is not None else '-'}",
            f"ms={row['duration_ms'] if row['duration_ms'] is not None else '-'}",
            f"output_version={_or(row['output_version'])}",
            f"quarantine_version={_or(row['quarantine_version'])}",
            f"keys={_or(row['state_keys'])}",
            f"watermark={_iso(row['watermark'])}",
        ]
    else:
        parts = [f"who={row['who'] or '-'}"]
        if row["reason"]:
            parts.append(f"reason={row['reason']}")
        parts.append(f"details={row['details'] or '{}'}")
    return f"{head} {' '.join(parts)}"


def _or(v: Any) -> str:
    return "-" if v is None else str(v)


def to_json(row: dict[str, Any]) -> str:
    out = {k: (_iso(v) if isinstance(v, datetime) else v) for k, v in row.items()}
    out["details"] = events.details(row)
    return json.dumps(out, default=str)


def cmd_events(args: argparse.Namespace) -> int:
    from spark_jobs.contract.spec import load_spec

    load_spec(args.job)  # an unknown job: the loader's one line, naming the known ones
    since = since_time(args.since) if args.since else None
    for row in events.read(job=args.job, since=since, kind=args.kind):
        print(to_json(row) if args.json else line(row))
    return 0


def register(subparsers: Any) -> None:
    sp = subparsers.add_parser("events", help="a job's rows of the event log (batches, operations)")
    sp.add_argument("job")
    sp.add_argument(
        "--since", metavar="TIME", help="ISO-8601 time, or a duration back from now (2h, 7 days)"
    )
    sp.add_argument("--kind", choices=events.KINDS, help="only rows of this kind")
    sp.add_argument("--json", action="store_true", help="one JSON object per line")
    sp.set_defaults(func=cmd_events)
