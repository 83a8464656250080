"""``python -m spark_jobs upgrade (plan | migrate | preview --since BATCH|TIME) JOB
[--checkpoint URI] [--output URI] [--trigger T] [--json]`` (migrate also ``[--with
MODULE:FUNCTION]``) (docs/contracts.md §1)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from spark_jobs.contract.errors import UserError


def _target(args: argparse.Namespace) -> Any:
    from spark_jobs.checkpoints import roots
    from spark_jobs.checkpoints.cli import looks_like_path

    if looks_like_path(args.job):
        raise UserError(f"upgrade {args.command_name} needs a job name, not {args.job}")
    target = roots.resolve(args.job, args.checkpoint or None)
    if args.trigger:  # the job as its next run will run it: a catch-up's available-now, say
        assert target.spec is not None
        target = dataclasses.replace(target, spec=target.spec.with_overrides(trigger=args.trigger))
    if args.output:  # held to the tables roots, as every command's table option is
        from spark_jobs.contract.confine import given_path

        own = (target.spec.output,) if target.spec else ()
        args.output = given_path("output", args.output, own=own)
    return target


def _public(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if not k.startswith("_")}


def _planned(target: Any, output: str | None) -> dict[str, Any]:
    """The plan, kept in the checkpoint as its last (the health page reads it, runs nothing)."""
    from spark_jobs.contract import upgrade_plan
    from spark_jobs.upgrade.plan import make_plan

    p = make_plan(target, output)
    upgrade_plan.write(target.checkpoint, _public(p))
    return p


def cmd_plan(args: argparse.Namespace) -> int:
    from spark_jobs.upgrade.plan import render

    p = _planned(_target(args), args.output)
    print(json.dumps(_public(p), indent=2, default=str) if args.json else render(p))
    return int(p["exit_code"])


def cmd_migrate(args: argparse.Namespace) -> int:
    from spark_jobs import eventlog
    from spark_jobs.upgrade.migrate import migrate, render

    t = _target(args)
    r = migrate(t, args.output, with_fn=args.with_fn)
    print(json.dumps(_public(r), indent=2, default=str) if args.json else render(r))
    if r["changes"]:
        eventlog.operation("upgrade", t, _public(r))
        _planned(t, args.output)  # the recorded plan no longer names what was accepted
    return 0


def cmd_preview(args: argparse.Namespace) -> int:
    from spark_jobs.upgrade.preview import preview, render

    r = preview(_target(args), args.since, args.output, keep=args.keep)
    print(json.dumps(r, indent=2, default=str) if args.json else render(r))
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "upgrade", help="what a change of a job does to its live state, and applying it"
    )
    sub = p.add_subparsers(dest="upgrade_command", required=True, parser_class=type(p))
    for name, func, text in (
        ("plan", cmd_plan, "one verdict per change; exit 0 only when nothing needs doing"),
        (
            "migrate",
            cmd_migrate,
            "apply the changes to a stopped job's checkpoint, state rewritten where needed "
            "(snapshot first)",
        ),
        ("preview", cmd_preview, "what the job as declared now would have written since a batch"),
    ):
        sp = sub.add_parser(name, help=text)
        sp.add_argument("job")
        sp.add_argument("--checkpoint", metavar="URI", help="the checkpoint (default: the spec's)")
        sp.add_argument(
            "--output", metavar="URI", help="the output table (default: the checkpoint's)"
        )
        sp.add_argument(
            "--trigger",
            metavar="T",
            help="the trigger the job's next run uses (default: the spec's): available-now or "
            "processing-time:30s; a job's state can depend on it (service_health's timers follow "
            "event time in available-now runs, the clock otherwise)",
        )
        sp.add_argument("--json", action="store_true", help="machine-readable output")
        if name == "migrate":
            sp.add_argument(
                "--with",
                dest="with_fn",
                metavar="MODULE:FUNCTION",
                help="converts each key's old state row to the new one (None drops the key)",
            )
        sp.set_defaults(func=func, command_name=name)
        if name == "preview":
            sp.add_argument(
                "--since",
                required=True,
                metavar="BATCH|TIME",
                help="re-run from the newest snapshot taken at or before this batch or time "
                "(ISO-8601, or a duration back from now)",
            )
            sp.add_argument(
                "--keep",
                action="store_true",
                help="leave the shadow checkpoint and table under the checkpoint's "
                "_statekeeper/preview/ to look at (remove them before the next snapshot)",
            )
