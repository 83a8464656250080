"""``upgrade migrate``: accept a job's ``compatible`` changes on its live checkpoint.

A compatible change (a parameter the logic reads, nothing stored depends on) needs no state
rewritten; ``run`` refuses it only so nothing changes by accident. Under the job's lock (so the
job is stopped and stays so), after the plan is made again and a snapshot is taken
(``checkpoint restore`` is the way back), the binding records the new declaration in one atomic
write: a kill at any moment leaves the old binding or the new one. The checkpoint's offsets,
commits and state are not touched, so the next run continues from the same source positions into
the same tables. Any other verdict is refused with the change's own line.
"""

from __future__ import annotations

import time
from typing import Any

from spark_jobs.checkpoints.roots import Target
from spark_jobs.contract.errors import ExitCode, UserError
from spark_jobs.contract.lock import JobLock
from spark_jobs.runtime import binding
from spark_jobs.upgrade import verdicts
from spark_jobs.upgrade.declared import fingerprint
from spark_jobs.upgrade.plan import make_plan

REFUSED = {
    verdicts.REPARTITION: "needs checkpoint repartition first",
    verdicts.MIGRATE: "needs the state rewritten, which migrate does not do yet",
    verdicts.INCOMPATIBLE: "cannot be reached without a replay",
}


def migrate(target: Target, output: str | None = None) -> dict[str, Any]:
    from spark_jobs.checkpoints import queries, snapshots
    from spark_jobs.checkpoints.validate import validate_checkpoint

    started = time.perf_counter()
    with JobLock(target.checkpoint, job=target.job, purpose="migrate"):
        queries.check_pending(target.checkpoint)  # a restore or repartition cut short first
        report = validate_checkpoint(target.checkpoint)
        if report.errors:
            f = report.errors[0]
            raise UserError(
                f"checkpoint {target.checkpoint} does not validate ([{f.code}] {f.message}); "
                f"{f.fix}; nothing changed",
                exit_code=ExitCode.UNSAFE,
            )
        plan = make_plan(target, output)
        changes: list[verdicts.Change] = plan["_changes"]
        refused = [c for c in changes if c.verdict != verdicts.COMPATIBLE]
        if refused:
            c = max(refused, key=lambda c: verdicts.VERDICTS.index(c.verdict))
            raise UserError(
                f"upgrade migrate {target.job}: refused, nothing changed: {c.field} "
                f"{c.before!r} -> {c.after!r} {REFUSED[c.verdict]}: {c.means}",
                exit_code=ExitCode(verdicts.EXIT_CODES[c.verdict]),
            )
        result = {**plan, "snapshot": None}
        if changes:
            snap = snapshots.take_snapshot(target, locked=True)
            result["snapshot"] = snap["id"]
            _record(target, changes, plan, snap["id"])
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result


def _record(
    target: Target, changes: list[verdicts.Change], plan: dict[str, Any], snap: str
) -> None:
    """The binding's fingerprint becomes the declaration's; the change is kept in its history."""
    from spark_jobs.jobs import definition

    record = binding.read_binding(target.checkpoint) or {}
    record["fingerprint"] = fingerprint(target.spec)
    record[binding.DECLARATION] = definition(target.job).declaration()
    record.setdefault(binding.UPGRADES, []).append(
        {
            "changes": [c.to_dict() for c in changes],
            "batch": plan["last_committed_batch"],
            "snapshot": snap,
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
    )
    binding.write_binding(target.checkpoint, record)


def render(r: dict[str, Any]) -> str:
    changes = r["_changes"]
    if not changes:
        return f"upgrade migrate {r['job']}: nothing changed; nothing to do"
    names = ", ".join(f"{c.field} {c.before!r} -> {c.after!r}" for c in changes)
    return (
        f"upgrade migrate {r['job']}: accepted {names} on checkpoint {r['checkpoint']} after "
        f"batch {r['last_committed_batch']} (no state rewritten); snapshot before: "
        f"{r['snapshot']}; the next run continues from the same input positions"
    )
