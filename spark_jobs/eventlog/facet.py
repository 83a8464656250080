"""The custom OpenLineage run facet of a streaming query's run (imported only when lineage is
configured: the client is not needed otherwise)."""

from __future__ import annotations

from typing import Any

import attr
from openlineage.client.generated.base import RunFacet


@attr.define
class StatekeeperBatchesRunFacet(RunFacet):
    """Batch id -> {"sources": [per source: start, end, files], "output_version",
    "quarantine_version"}: which input each Delta version came from."""

    batches: dict[str, Any] = attr.field(factory=dict)

    @staticmethod
    def _get_schema() -> str:
        return (
            "https://github.com/statekeeper/statekeeper/docs/events.md#statekeeperbatchesrunfacet"
        )
