"""OpenLineage for a streaming query: ONE run per query lifetime (a ``run``), emitted with the
openlineage-python client from the event log's writer thread, never from a batch.

START when the query starts, RUNNING at most once per :func:`running_every` seconds (each carrying
the batches since the previous event), COMPLETE or FAIL when the run ends. The run id is Spark's
``runId`` of the query, so lineage and the event log's rows join on it. Inputs are the landing
folders or Kafka topics, outputs the Delta tables; the ``statekeeper_batches`` run facet maps
each batch id to its source positions and the Delta versions it wrote.

Configured the client's standard way (``OPENLINEAGE_URL``, ``OPENLINEAGE_CONFIG`` or an
``openlineage.yml``, ``OPENLINEAGE__TRANSPORT__*``); with none of these, nothing is emitted (the
client itself would fall back to printing events on the console). Datasets are named as the
Airflow task that submits the run names them (:mod:`spark_jobs.contract.lineage`).
"""

from __future__ import annotations

import os
import sys
import time
from datetime import UTC, datetime
from typing import Any

from spark_jobs.contract import lineage as names
from spark_jobs.contract.spec import JobSpec

NAMESPACE_ENV = "OPENLINEAGE_NAMESPACE"
EVERY_ENV = "STATEKEEPER_LINEAGE_EVERY_SECONDS"
FACET = "statekeeper_batches"
PRODUCER = "https://github.com/statekeeper/statekeeper"  # the producer URI events carry


def running_every() -> float:
    """Seconds between RUNNING events of one run (default 60: not one per micro-batch)."""
    return float(os.environ.get(EVERY_ENV) or 60.0)


class QueryLineage:
    """The lineage of one run of a job's query."""

    def __init__(self, spec: JobSpec, client: Any) -> None:
        self.spec = spec
        self.client = client
        self.run_id: str | None = None
        self.batches: dict[str, Any] = {}  # batch id -> positions and versions, since last event
        self.last = 0.0

    def _event(self, state: str, facets: dict[str, Any] | None = None) -> Any:
        from openlineage.client.event_v2 import (
            InputDataset,
            Job,
            OutputDataset,
            Run,
            RunEvent,
            RunState,
        )

        ns = os.environ.get(NAMESPACE_ENV) or "statekeeper"
        return RunEvent(
            eventType=getattr(RunState, state),
            eventTime=datetime.now(UTC).isoformat(),
            run=Run(runId=str(self.run_id), facets=facets or {}),
            job=Job(namespace=ns, name=f"statekeeper.{self.spec.name}"),
            producer=PRODUCER,
            inputs=[InputDataset(ns, name) for ns, name in names.inputs(self.spec)],
            outputs=[OutputDataset(ns, name) for ns, name in names.outputs(self.spec)],
        )

    def _facets(self) -> dict[str, Any]:
        if not self.batches:
            return {}
        facet = _batches_facet(self.batches)
        self.batches = {}
        return {FACET: facet}

    def _emit(self, state: str, facets: dict[str, Any] | None = None) -> None:
        try:
            self.client.emit(self._event(state, facets))
        except Exception as exc:  # noqa: BLE001 - a lineage backend's failure must not stop a run
            print(f"statekeeper: warning: OpenLineage {state} not sent ({exc})", file=sys.stderr)
        self.last = time.monotonic()

    def start(self, run_id: str) -> None:
        self.run_id = run_id
        self._emit("START")

    def batch(self, batch_id: int, sources: Any, versions: dict[str, Any]) -> None:
        self.batches[str(batch_id)] = {"sources": sources, **versions}

    def tick(self) -> None:
        """A RUNNING event with the batches since the last event, when one is due."""
        if self.run_id and self.batches and time.monotonic() - self.last >= running_every():
            self._emit("RUNNING", self._facets())

    def end(self, failure: str | None) -> None:
        if self.run_id is None:
            return  # the query never started: no run to end
        facets = self._facets()
        if failure:
            from openlineage.client.facet_v2 import error_message_run

            facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
                message=failure, programmingLanguage="python"
            )
        self._emit("FAIL" if failure else "COMPLETE", facets)
        self.client.close(timeout=10.0)


def _batches_facet(batches: dict[str, Any]) -> Any:
    from spark_jobs.eventlog.facet import StatekeeperBatchesRunFacet

    return StatekeeperBatchesRunFacet(batches=dict(batches))


def for_spec(spec: JobSpec) -> QueryLineage | None:
    """The run's lineage, or None when no OpenLineage transport is configured."""
    if not names.configured():
        return None
    from openlineage.client import OpenLineageClient

    return QueryLineage(spec, OpenLineageClient())
