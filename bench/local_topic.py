"""A local Kafka topic of generated clickstream events for the benches that read one: a broker on
the cached jars (a free port, a temporary home), fed once by ``generate --out kafka://...``,
always stopped and removed afterwards."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Topic:
    tmp: Path  # the bench's temporary folder (broker home, generate's staging data)
    uri: str  # kafka://HOST:PORT/clickstream
    report: Any  # generate's report: the events as the files it kept, too


@contextmanager
def clickstream_topic(prefix: str, events: int, keys: int | None, seed: int) -> Iterator[Topic]:
    """A broker with ``events`` clickstream events of ``keys`` users (``seed``) in topic
    ``clickstream``; ``$STATEKEEPER_DATA`` points at the temporary folder meanwhile (generate's
    staging folder)."""
    from spark_jobs.generate import generate
    from spark_jobs.kafka import broker

    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    home = tmp / "broker"
    old_data = os.environ.get("STATEKEEPER_DATA")
    os.environ["STATEKEEPER_DATA"] = str(tmp / "data")
    try:
        status = broker.up(port=broker.free_port(), home=home, timeout=180)
        uri = f"kafka://{status.bootstrap}/clickstream"
        yield Topic(tmp, uri, generate("clickstream", uri, events, keys=keys, seed=seed))
    finally:
        broker.down(home)
        if old_data is None:
            os.environ.pop("STATEKEEPER_DATA", None)
        else:
            os.environ["STATEKEEPER_DATA"] = old_data
        shutil.rmtree(tmp, ignore_errors=True)
