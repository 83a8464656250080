"""Completeness asset events: one per event-time partition the job's ledger says is complete.

The Spark side writes the ledgers (``_statekeeper/completeness.jsonl`` after each committed
batch, ``recompletions.jsonl`` after a backfill's publish); this operator emits, as partitioned
outlet events of the job's completeness asset, the keys of the entries not yet emitted, oldest
first. What was emitted is read back from the asset's own events (each carries its ledger's id
and the last sequence number it covers in ``extra``), so the cursor is committed in the same
database transaction as the events: a task killed before it succeeded emitted nothing and the
next one emits the same keys; one that succeeded is never repeated. Each key exactly once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from airflow.sdk import Asset, BaseOperator
from airflow.sdk.exceptions import AirflowSkipException

from spark_jobs.contract import completeness as cp
from spark_jobs.contract import paths
from statekeeper.params import check_path_params, rendered

PAGE = 500  # asset events read back per request while looking for the last emitted one


def completeness_asset(job: str) -> Asset:
    """The asset whose partitioned events say "this event-time partition of JOB's table is
    complete". Its own asset, beside the table's (``statekeeper.JOB``): the catch-up run's
    version event carries no partition key, and on a partition-aware consumer each such event
    is a scheduler warning and an audit-log row."""
    return Asset(
        name=f"statekeeper.{job}.complete", uri=f"statekeeper://delta/{job}/complete", group="delta"
    )


class _InOrder(set[str]):
    """The SDK keeps an event's partition keys in a set and registers them in its iteration
    order: this one iterates oldest first, so the events (and the runs they queue) are in order."""

    def __init__(self, keys: Iterable[str]) -> None:
        self._order = list(dict.fromkeys(keys))
        super().__init__(self._order)

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)


def last_emitted(events: Any, ledger_id: str, ledger: str) -> int | None:
    """The highest ledger sequence number the asset's events (newest first) say was emitted."""
    before = None
    while True:
        page = events.ascending(False).limit(PAGE)
        if before is not None:
            page = page.before(before)
        batch = list(page)
        for ev in batch:
            extra = ev.extra or {}
            if extra.get("ledger") == ledger_id and extra.get("ledger_file") == ledger:
                return int(extra["seq"])  # newest first: the first match is the highest
        if len(batch) < PAGE:
            return None
        before = batch[-1].timestamp.isoformat()


class CompletenessEventsOperator(BaseOperator):
    """Emit the job's pending completeness (or re-completion) keys as partitioned asset events.

    Skipped when nothing is pending (a task with outlets that succeeds would emit an event
    without a key), or when the run's params point at another table or checkpoint than the
    spec's: the asset stands for the live table.

    :param job: the job whose ledger to read.
    :param ledger: ``completeness.jsonl`` (after runs) or ``recompletions.jsonl`` (after a publish).
    :param overrides: the run's path overrides (templated; empty = the spec's).
    :param skip_reason: templated; when it renders non-empty the task is skipped with it.
    """

    template_fields: Sequence[str] = ("job", "overrides", "skip_reason")
    ui_color = "#d4edda"

    def __init__(
        self,
        *,
        job: str,
        ledger: str = paths.COMPLETENESS_FILE,
        overrides: dict[str, str] | None = None,
        asset: Asset | None = None,
        skip_reason: str = "",
        **kwargs: Any,
    ) -> None:
        asset = asset or completeness_asset(job)
        super().__init__(inlets=[asset], outlets=[asset], **kwargs)
        self.job = job
        self.ledger = ledger
        self.overrides = overrides or {}
        self.asset = asset
        self.skip_reason = skip_reason

    def execute(self, context: Any) -> dict[str, Any]:
        from spark_jobs.contract.spec import load_spec
        from statekeeper.submit import resolve_job

        if rendered(self.skip_reason) is not None:
            raise AirflowSkipException(str(self.skip_reason))
        check_path_params(context)
        spec = load_spec(self.job)
        run = resolve_job(self.job, self.overrides)
        if (run.output, run.checkpoint) != (spec.output, spec.checkpoint):
            raise AirflowSkipException("the run's table or checkpoint is not the live one")
        entries = cp.read(spec.checkpoint, self.ledger)
        if not entries:
            raise AirflowSkipException(f"no {self.ledger} entries yet")
        ledger_id = entries[0].ledger
        done = last_emitted(context["inlet_events"][self.asset], ledger_id, self.ledger)
        todo = cp.pending(entries, ledger_id, done)
        keys = [k for e in todo for k in e.keys]
        if not keys:
            raise AirflowSkipException(f"nothing new in {self.ledger} (emitted up to {done})")
        recompletion = self.ledger == paths.RECOMPLETIONS_FILE
        extra = {
            "table": spec.output,
            "ledger": ledger_id,
            "ledger_file": self.ledger,
            "seq": todo[-1].seq,
            "recompletion": recompletion,
            "grain": spec.completeness,
        }
        accessor = context["outlet_events"][self.asset]
        accessor.extra = extra
        accessor.add_partitions(keys)  # checks each key as the SDK does
        accessor.partition_keys = _InOrder(keys)
        self.log.info("%s %d partition(s): %s", self.ledger, len(keys), ", ".join(keys))
        return {**extra, "keys": keys}
