"""``upgrade migrate``: apply a job's changes to its live checkpoint without re-reading input.

Under the job's lock (the job is stopped and stays so), after the plan is made again and a
snapshot is taken (``checkpoint restore`` is the way back, tables included):

- ``compatible`` changes (a parameter the logic reads) need no state rewritten: the binding
  records the new declaration in one atomic write, nothing else is touched;
- ``migrate`` changes of the state row, the state store or the watermark rewrite the state
  (:mod:`spark_jobs.upgrade.rewrite`, rule from :mod:`spark_jobs.upgrade.rules`) into a new
  checkpoint built beside the live one and swapped in atomically
  (:mod:`spark_jobs.upgrade.staging`): same source positions, same tables, one extra batch that
  reads no input. An output column the new declaration adds is added to the Delta table first.
- anything else (repartition, incompatible, a migrate this release has no rewrite for) is
  refused before anything is written, with the change's own line and its verdict's exit code.

A kill at any moment leaves the old checkpoint or the new one; the next migrate clears what the
killed one left beside it.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from spark_jobs.checkpoints.roots import Target
from spark_jobs.contract import binding, paths
from spark_jobs.contract.errors import ExitCode, UserError
from spark_jobs.contract.lock import JobLock
from spark_jobs.jobs import fingerprint
from spark_jobs.upgrade import staging, verdicts
from spark_jobs.upgrade.plan import make_plan

REFUSED = {
    verdicts.REPARTITION: "needs checkpoint repartition first",
    verdicts.MIGRATE: "needs a state rewrite this release does not have",
    verdicts.INCOMPATIBLE: "cannot be reached without a replay",
}
REWRITES = ("state_store", "watermark_seconds")  # settings the state rewrite applies
# Test-only: the named step sleeps (a test kills the process there). Never set in production.
PAUSE_ENV = "STATEKEEPER_TEST_PAUSE_MIGRATE_AT"


def rewritten(c: verdicts.Change) -> bool:
    """A change the state rewrite applies (a field of a state row, the store, the watermark)."""
    if c.verdict != verdicts.MIGRATE:
        return False
    return c.field in REWRITES or (c.field.startswith("state.") and c.field.count(".") == 1)


def _applicable(c: verdicts.Change) -> bool:
    added_column = c.field.startswith("output.") and c.before is None
    return (
        c.verdict == verdicts.COMPATIBLE
        or rewritten(c)
        or (c.verdict == verdicts.MIGRATE and added_column)
    )


def migrate(
    target: Target, output: str | None = None, with_fn: str | None = None, spark: Any = None
) -> dict[str, Any]:
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
        refused = [c for c in changes if not _applicable(c)]
        if refused:
            c = max(refused, key=lambda c: verdicts.VERDICTS.index(c.verdict))
            raise UserError(
                f"upgrade migrate {target.job}: refused, nothing changed: {c.field} "
                f"{c.before!r} -> {c.after!r} {REFUSED[c.verdict]}: {c.means}",
                exit_code=ExitCode(verdicts.EXIT_CODES[c.verdict]),
            )
        result = {**plan, "snapshot": None, "rewrite": None}
        if with_fn and not any(rewritten(c) for c in changes):
            raise UserError(f"upgrade migrate {target.job}: --with given but no state to rewrite")
        if changes:
            snap = snapshots.take_snapshot(target, locked=True)
            result["snapshot"] = snap["id"]
            result["snapshot_seconds"] = round(time.perf_counter() - started, 2)
            if any(rewritten(c) for c in changes):
                result["rewrite"] = _rewrite(target, plan, with_fn, snap["id"], spark)
            else:
                _add_columns(spark, target, plan)
                _record(target.checkpoint, target, changes, plan, snap["id"])
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result


def _session(target: Target, spark: Any) -> Any:
    from spark_jobs.contract.spark_confs import spec_confs
    from spark_jobs.runtime.session import build_session

    spec: Any = target.spec
    spark = spark or build_session(f"statekeeper-migrate-{target.job}", conf=spec_confs(spec))
    # The state stores report to the StateStoreCoordinator, which only exists once the session's
    # StreamingQueryManager does: a fresh session (the CLI's) must create it first.
    spark.streams.active  # noqa: B018
    return spark


def _rewrite(
    target: Target, plan: dict[str, Any], with_fn: str | None, snap: str, spark: Any
) -> dict[str, Any]:
    from spark_jobs.contract.spark_confs import STATE_STORE_PROVIDERS, spec_confs
    from spark_jobs.jobs import definition
    from spark_jobs.upgrade import rewrite, rules

    spec: Any = target.spec
    job_def = definition(target.job)
    stored_schema, live = _rewritable(target, job_def, with_fn)
    tws = not isinstance(stored_schema, str)
    staging.clear_leftovers(live)
    batch = int(plan["last_committed_batch"])
    started = time.perf_counter()
    spark = _session(target, spark)
    spark_up = time.perf_counter()
    if not tws:
        state = rewrite.stored_state(spark, live, batch)
        rule = rules.choose(rewrite.stored_row_type(state), str(stored_schema), job_def, with_fn)
    work = staging.new_work(live)
    staged = work / "checkpoint"
    staging.copy_logs(live, staged)
    pinned = staging.pinned_conf(live, batch)
    staging.add_batch(
        staged,
        batch,
        {staging.PROVIDER_CONF: STATE_STORE_PROVIDERS[spec.state_store]},
        _watermark(plan["_changes"], live, batch),
    )
    rw = rewrite.Rewrite(
        live=live,
        staged=staged,
        work=work,
        batch=batch,
        state_ddl=str(stored_schema),
        store=spec.state_store,
        partitions=int(pinned.get("spark.sql.shuffle.partitions", spec.shuffle_partitions)),
        confs=spec_confs(spec),
    )
    if tws:
        from spark_jobs.upgrade import rewrite_tws

        variables: Any = stored_schema
        mode: Any = job_def.time_mode
        keys = rewrite_tws.run(spark, rw, dict(variables), _defaults(job_def), mode(spec))
        rule_name = "variables' fields by name"
    else:
        pinned_provider = pinned.get(staging.PROVIDER_CONF)
        live_store = next(
            (k for k, v in STATE_STORE_PROVIDERS.items() if v == pinned_provider), "hdfs"
        )
        try:
            keys = rewrite.run(spark, rw, rule, state, live_store)
        except Exception as exc:  # Spark's error of a rule that failed on an executor
            why = rules.failure(exc)
            if why is None:
                raise
            raise UserError(
                f"upgrade migrate {target.job}: refused, nothing changed: {why}; fix the rule "
                "and migrate again"
            ) from None
        rule_name = rule.name
    rewritten_at = time.perf_counter()
    _pause("rewritten")
    _add_columns(spark, target, plan)
    done: dict[str, Any] = {"rule": rule_name, "keys": keys, "batch": batch + 1}
    _record(str(staged), target, plan["_changes"], plan, snap, done)
    _validate_and_swap(target, staged, live)
    done["seconds"] = {  # where the time went, for --json
        "spark_start": round(spark_up - started, 2),
        "rewrite": round(rewritten_at - spark_up, 2),
        "record_validate_swap": round(time.perf_counter() - rewritten_at, 2),
    }
    return done


def _rewritable(target: Target, job_def: Any, with_fn: str | None) -> tuple[Any, Path]:
    """The state row Spark keeps for the spec and the local checkpoint folder, or a refusal."""
    stored_schema = job_def.stored_state_schema(target.spec)
    if stored_schema is None:
        raise UserError(
            f"upgrade migrate {target.job}: Spark keeps this job's state; nothing to rewrite"
        )
    if not isinstance(stored_schema, str) and with_fn:
        raise UserError(
            f"upgrade migrate {target.job}: --with is for applyInPandasWithState state rows; a "
            "transformWithState variable's fields are added or removed by the built-in rule"
        )
    live = paths.local_path(target.checkpoint)
    if live is None:
        raise UserError(
            f"upgrade migrate rewrites a local checkpoint only, not {target.checkpoint}"
        )
    return stored_schema, live


def _validate_and_swap(target: Target, staged: Path, live: Path) -> None:
    """The rewritten checkpoint must validate; then it takes the live one's place atomically,
    and the old one (left in the work folder) is deleted: the snapshot keeps it."""
    from spark_jobs.checkpoints.validate import validate_checkpoint

    report = validate_checkpoint(str(staged))
    if report.errors:
        f = report.errors[0]
        raise UserError(
            f"upgrade migrate {target.job}: the rewritten checkpoint does not validate "
            f"([{f.code}] {f.message}); nothing changed (left in {staged.parent})"
        )
    _pause("before-swap")
    with JobLock(str(staged), job=target.job, purpose="migrate"):
        staging.swap(staged, live)
    shutil.rmtree(staged.parent, ignore_errors=True)


def _defaults(job_def: Any) -> dict[str, Any]:
    return dict(job_def.state_defaults)


def _watermark(changes: list[verdicts.Change], live: Path, batch: int) -> int | None:
    """The next batch's watermark under a new delay: as if the new delay had always been used
    (newest event time seen minus it), and never behind the old one (Spark's never goes back)."""
    for c in changes:
        if c.field == "watermark_seconds" and c.before is not None and c.after is not None:
            now = staging.next_watermark(live, batch)
            return max(now, now + int((float(c.before) - float(c.after)) * 1000))
    return None


def _add_columns(spark: Any, target: Target, plan: dict[str, Any]) -> None:
    """The output columns the declaration adds, added to the Delta table (null in old rows)."""
    added = [c for c in plan["_changes"] if c.field.startswith("output.") and c.before is None]
    if not added:
        return
    spark = _session(target, spark)
    cols = ", ".join(f"`{c.field.split('.', 1)[1]}` {c.after}" for c in added)
    spark.sql(f"ALTER TABLE delta.`{plan['output']}` ADD COLUMNS ({cols})")


def _record(
    checkpoint: str,
    target: Target,
    changes: list[verdicts.Change],
    plan: dict[str, Any],
    snap: str,
    rewrite: dict[str, Any] | None = None,
) -> None:
    """The binding's fingerprint becomes the declaration's; the change is kept in its history."""
    from spark_jobs.jobs import definition

    record = binding.read_binding(checkpoint) or {}
    assert target.spec is not None  # upgrade commands always name their job
    record["fingerprint"] = fingerprint(target.spec)
    record[binding.DECLARATION] = definition(target.job).declaration()
    entry = {
        "changes": [c.to_dict() for c in changes],
        "batch": plan["last_committed_batch"],
        "snapshot": snap,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if rewrite:
        entry["rewrite"] = rewrite
    record.setdefault(binding.UPGRADES, []).append(entry)
    binding.write_binding(checkpoint, record)


def _pause(step: str) -> None:
    if os.environ.get(PAUSE_ENV) == step:
        print(f"statekeeper-test: migrate paused at {step}", file=sys.stderr, flush=True)
        time.sleep(600)


def render(r: dict[str, Any]) -> str:
    changes = r["_changes"]
    if not changes:
        return f"upgrade migrate {r['job']}: nothing changed; nothing to do"
    names = ", ".join(f"{c.field} {c.before!r} -> {c.after!r}" for c in changes)
    rw = r.get("rewrite")
    how = (
        f"state rewritten ({rw['keys']} keys, rule: {rw['rule']}) as batch {rw['batch']}, "
        "which reads no input"
        if rw
        else "no state rewritten"
    )
    return (
        f"upgrade migrate {r['job']}: accepted {names} on checkpoint {r['checkpoint']} after "
        f"batch {r['last_committed_batch']} ({how}); snapshot before: {r['snapshot']}; the next "
        "run continues from the same input positions"
    )
