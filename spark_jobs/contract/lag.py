"""Kafka lag from a progress record: per topic, the latest offsets minus those processed.

Pure Python over the StreamingQueryProgress JSON (no Spark, no client), so the progress listener,
the health verdict and the UI all read the same figures. A Kafka source's ``latestOffset`` is what
the topic held when the batch was planned and ``endOffset`` what the batch processed up to, both
``{"topic": {"partition": offset}}``; file sources have other shapes and have no lag here.
"""

from __future__ import annotations

import json
from typing import Any

Offsets = dict[str, dict[str, int]]


def kafka_offsets(value: Any) -> Offsets | None:
    """``{"topic": {"0": 123}}`` (a dict or its JSON text) or None for any other source's."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, dict) or not value:
        return None
    out: Offsets = {}
    for topic, parts in value.items():
        if not isinstance(parts, dict) or not parts:
            return None
        try:
            out[str(topic)] = {str(p): int(o) for p, o in parts.items()}
        except (TypeError, ValueError):
            return None
    return out


def source_lag(progress: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{topic: {"behind": N, "partitions": {"0": n, ...}}}`` for every Kafka source of a batch;
    {} when it reads none."""
    out: dict[str, dict[str, Any]] = {}
    for src in progress.get("sources") or []:
        latest = kafka_offsets(src.get("latestOffset"))
        end = kafka_offsets(src.get("endOffset"))
        if latest is None or end is None:
            continue
        for topic, parts in latest.items():
            done = end.get(topic, {})
            per = {p: max(0, off - done.get(p, 0)) for p, off in sorted(parts.items())}
            out[topic] = {"behind": sum(per.values()), "partitions": per}
    return out


def total_behind(progress: dict[str, Any]) -> dict[str, int]:
    """Records behind per topic: the record's own ``lag`` when the listener wrote it."""
    lag = progress.get("lag")
    if not isinstance(lag, dict):
        lag = source_lag(progress)
    return {t: int(v.get("behind", 0)) for t, v in lag.items() if isinstance(v, dict)}
