"""Delta's optimistic concurrency, retried: a commit that lost a race to another writer.

Two writers of one table conflict when the winner changed what the loser read or removed
(Delta's conflict rules): a streaming MERGE that read files a compaction has just rewritten
fails with ``ConcurrentDeleteReadException``, a compaction that lost the files a MERGE rewrote
with ``ConcurrentDeleteDeleteException``, and any commit with ``MetadataChangedException`` after
a table-property change. Nothing was committed by the loser, so doing the same work again on the
new version is correct; for the sinks it is also exactly once (``txnAppId``/``txnVersion``: a
batch the table already has is skipped).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
ATTEMPTS = 6
BACKOFF = 0.5  # seconds before the second attempt; doubles


def conflict_types() -> tuple[type[BaseException], ...]:
    """Delta's concurrent-modification exceptions, as pyspark raises them."""
    from delta import exceptions as e

    return (
        e.DeltaConcurrentModificationException,
        e.ConcurrentWriteException,
        e.MetadataChangedException,
        e.ProtocolChangedException,
        e.ConcurrentAppendException,
        e.ConcurrentDeleteReadException,
        e.ConcurrentDeleteDeleteException,
        e.ConcurrentTransactionException,
    )


def retrying(
    work: Callable[[], T],
    attempts: int = ATTEMPTS,
    on_retry: Callable[[int, BaseException], None] | None = None,
) -> tuple[T, int]:
    """``work()`` again while it loses a commit race, up to ``attempts`` times; (its result,
    attempts used). The last conflict is raised."""
    types = conflict_types()
    for attempt in range(1, attempts + 1):
        try:
            return work(), attempt
        except types as exc:
            if attempt == attempts:
                raise
            if on_retry is not None:
                on_retry(attempt, exc)
            time.sleep(BACKOFF * 2 ** (attempt - 1))
    raise AssertionError("unreachable")
