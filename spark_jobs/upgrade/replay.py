"""The input a replay from batch 0 would read, and whether it is all still there: the files the
checkpoint's file sources logged against the landing folders now; a Kafka source's offsets from
where the query started (the initial offsets Spark logs in ``sources/<i>/0``) to the last
committed batch, against the oldest offsets the topic still holds."""

from __future__ import annotations

from typing import Any

from spark_jobs.checkpoints.files import read_text
from spark_jobs.checkpoints.layout import Layout
from spark_jobs.contract.errors import UserError
from spark_jobs.contract.kafka import is_kafka, parse, watermarks
from spark_jobs.contract.lag import Offsets, kafka_offsets

BROKER_TIMEOUT = 5.0  # seconds: a plan must not hang on an unreachable broker


def replay_inputs(lay: Layout, inputs: dict[str, str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    files = [u for u in inputs.values() if not is_kafka(u)]
    if files:
        out.append(_files(lay, files))
    start = initial_offsets(lay)
    end = lay.kafka_offsets(lay.last_committed) if lay.last_committed is not None else {}
    for kind, uri in inputs.items():
        if is_kafka(uri):
            out.append(_kafka(kind, uri, start, end))
    return out


def _files(lay: Layout, folders: list[str]) -> dict[str, Any]:
    from spark_jobs.checkpoints.unread import files_read, landing_files

    read = files_read(lay).files
    present: set[str] = set()
    for uri in folders:
        present |= set(landing_files(uri))
    gone = sorted(read - present)
    return {
        "kind": "files",
        "from": ", ".join(folders),
        "files_read": len(read),
        "still_there": len(read) - len(gone),
        "gone": gone[:5],
        "complete": not gone,
    }


def initial_offsets(lay: Layout) -> Offsets:
    """Topic -> partition -> the offset the query started reading at, over its Kafka sources
    (Spark writes them once, as ``sources/<i>/0``; the offset log's first files are cleaned)."""
    out: Offsets = {}
    for rel in sorted(p for p in lay.files if p.startswith("sources/") and p.endswith("/0")):
        if rel.count("/") != 2:
            continue
        text = read_text(lay.uri, rel)
        for line in text.splitlines():
            found = kafka_offsets(line[line.find("{") :]) if "{" in line else None
            for topic, parts in (found or {}).items():
                out.setdefault(topic, {}).update(parts)
    return out


def _kafka(kind: str, uri: str, start: Offsets, end: Offsets) -> dict[str, Any]:
    topic = parse(uri).topic
    needed = start.get(topic, {})
    oldest, why = oldest_offsets(uri)
    lost = {p: oldest[p] for p, o in needed.items() if p in oldest and oldest[p] > o}
    return {
        "kind": "kafka",
        "input": kind,
        "from": uri,
        "start": needed,
        "end": end.get(topic, {}),
        "oldest_held": oldest,
        "lost": lost,
        # None: the broker was not asked or did not answer (``why`` says which)
        "complete": None if why else not lost,
        "unknown_because": why,
    }


def oldest_offsets(uri: str) -> tuple[dict[str, int], str | None]:
    """Partition -> the oldest offset the topic still holds (its low watermark), or the reason it
    could not be read."""
    try:
        import confluent_kafka  # noqa: F401 - only to say so when it is missing
    except ImportError:
        return {}, "no Kafka client here"
    k = parse(uri)
    try:
        held = watermarks(k, BROKER_TIMEOUT)
    except UserError as exc:  # the broker's own words are the cause
        return {}, f"Kafka at {k.bootstrap} did not answer ({exc.__cause__ or exc})"
    if not held:
        return {}, f"topic {k.topic} not found"
    return {p: low for p, (low, _) in held.items()}, None
