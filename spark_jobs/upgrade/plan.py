"""``upgrade plan``: the checkpoint's record against the job as declared now, read from files
(no Spark session)."""

from __future__ import annotations

from typing import Any

from spark_jobs.checkpoints.roots import Target
from spark_jobs.upgrade import verdicts
from spark_jobs.upgrade.declared import read_declared
from spark_jobs.upgrade.recorded import read_recorded, table_schema


def make_plan(target: Target, output: str | None = None) -> dict[str, Any]:
    """The plan as ``--json`` prints it: every change with its verdict, the worst verdict and the
    exit code it gives."""
    from spark_jobs.contract import paths

    spec: Any = target.spec
    table = paths.resolve(output) if output else None
    _check_tables(target, table)
    rec = read_recorded(target.checkpoint, table, spec.inputs)
    if not rec.table:  # bound before tables were recorded: the spec's
        rec.table = spec.output
        rec.output = table_schema(rec.table)
    changes = verdicts.compare(rec, read_declared(spec), target.job)
    worst = verdicts.worst(changes)
    # the worst change's line and its way there: what the DAGs fail with and the page shows
    top = next((c for c in changes if c.verdict == worst), None)
    plan = {
        "job": target.job,
        "checkpoint": target.checkpoint,
        "output": rec.table,
        "last_committed_batch": rec.last_committed,
        "operators": rec.operators,
        "changes": [c.to_dict() for c in changes],
        "worst": worst,
        "worst_line": top.line() if top else None,
        "exit_code": verdicts.exit_code(changes),
        "_changes": changes,
    }
    plan["next_step"] = next_step(plan) if top else None
    return plan


def _check_tables(target: Target, table: str | None) -> None:
    """Refuse, as the run would (exit 4), a committed checkpoint bound to other tables than the
    run writes: ``--output``, or for the job's own checkpoint the spec's ``output`` (moved in the
    spec, the DAG's plan gate must stop it, not the run after it). Another checkpoint (a
    backfill's) without ``--output`` is planned against the table it is bound to."""
    from spark_jobs.contract import binding, paths
    from spark_jobs.contract.spec import load_spec

    if table is None:
        declared = load_spec(target.job)
        if not binding.same_table(target.checkpoint, declared.checkpoint):
            return
        table = declared.output
    binding.check_tables(
        target.checkpoint, {"output": table, "quarantine": paths.quarantine_table(table)}
    )


def render(plan: dict[str, Any]) -> str:
    head = (
        f"upgrade plan {plan['job']}: checkpoint {plan['checkpoint']} "
        f"(last committed batch {plan['last_committed_batch']}), table {plan['output']}"
    )
    changes = plan["_changes"]
    if not changes:
        return head + "\nnothing changed: the job as declared matches its checkpoint and table"
    lines = [head, *(f"  {c.line()}" for c in changes)]
    lines.append(f"worst: {plan['worst']} (exit {plan['exit_code']}); {plan['next_step']}")
    return "\n".join(lines)


def next_step(plan: dict[str, Any]) -> str:
    job, worst = plan["job"], plan["worst"]
    if worst == verdicts.COMPATIBLE:
        return f"python -m spark_jobs upgrade migrate {job} accepts it (snapshot first)"
    if worst == verdicts.REPARTITION:
        return "repartition first, as said above; then plan again"
    if worst == verdicts.MIGRATE:
        return (
            f"python -m spark_jobs upgrade migrate {job} rewrites the state where this release "
            "has a rule for the change (snapshot first; it refuses the rest, naming them)"
        )
    return "a replay into a new checkpoint and table is the only way there"
