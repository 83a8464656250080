"""A checkpoint remembers the job spec that wrote it (``_statekeeper/job.json``).

Spark pins some choices in the checkpoint (shuffle partitions, state store provider, the
transformWithState time mode) and our state blobs depend on others (executor, parameters).
Changing one under a live checkpoint fails deep inside Spark or, worse, silently; we refuse it
up front with a one-line reason instead.
"""

from __future__ import annotations

import json
import time
from typing import Any

from spark_jobs.contract import paths
from spark_jobs.contract.errors import UserError


def binding_path(checkpoint: str) -> str:
    return paths.join(checkpoint, paths.STATEKEEPER_DIR, paths.BINDING_FILE)


def read_binding(checkpoint: str) -> dict[str, Any] | None:
    import fsspec

    fs, p = fsspec.core.url_to_fs(binding_path(checkpoint))
    if not fs.exists(p):
        return None
    try:
        return dict(json.loads(fs.cat_file(p)))
    except ValueError as exc:
        raise UserError(
            f"{binding_path(checkpoint)} is not valid JSON; restore it from a snapshot or delete it"
        ) from exc


def has_state(checkpoint: str) -> bool:
    """True once Spark has written to the checkpoint (a first batch planned)."""
    import fsspec

    fs, p = fsspec.core.url_to_fs(paths.join(checkpoint, "offsets"))
    return bool(fs.exists(p) and fs.ls(p))


def check_and_bind(checkpoint: str, fingerprint: dict[str, Any], where: str) -> None:
    """Refuse a spec that no longer matches its checkpoint; record it on first use."""
    old = read_binding(checkpoint)
    if old is not None and has_state(checkpoint):
        before = old.get("fingerprint", {})
        changed = [
            k for k in sorted(set(before) | set(fingerprint)) if before.get(k) != fingerprint.get(k)
        ]
        if changed:
            k = changed[0]
            raise UserError(
                f"checkpoint {checkpoint} was written with {k}={before.get(k)!r} but {where} now "
                f"gives {k}={fingerprint.get(k)!r}; Spark and the stored state depend on it: put it "
                "back, or rebuild with a new --checkpoint into a new --output table (a new "
                "checkpoint on the old table writes every row again; docs/checkpoints.md)"
            )
        return
    import fsspec

    record = {
        "fingerprint": fingerprint,
        "bound_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    with fsspec.open(binding_path(checkpoint), "w", auto_mkdir=True) as fh:
        fh.write(json.dumps(record, indent=2, sort_keys=True, default=str))


def record_repartition(checkpoint: str, entry: dict[str, Any]) -> None:
    """After ``checkpoint repartition``: the binding's partition count becomes ``entry["to"]`` and
    the change is kept in its ``repartitions`` history."""
    import fsspec

    record = read_binding(checkpoint) or {"fingerprint": {}}
    record["fingerprint"]["shuffle_partitions"] = entry["to"]
    record.setdefault("repartitions", []).append(entry)
    with fsspec.open(binding_path(checkpoint), "w", auto_mkdir=True) as fh:
        fh.write(json.dumps(record, indent=2, sort_keys=True, default=str))


def kafka_ids(checkpoint: str) -> dict[str, dict[str, Any]]:
    """The binding's ``kafka`` field: per Kafka input name, the ``cluster_id``, ``topic`` and
    ``topic_id`` the checkpoint reads (spark_jobs.kafka.ids); empty when none are recorded."""
    return dict((read_binding(checkpoint) or {}).get("kafka") or {})


def record_kafka_ids(checkpoint: str, ids: dict[str, dict[str, Any]]) -> None:
    """Set the binding's ``kafka`` field to ``ids``, the rest of the binding unchanged."""
    import fsspec

    record = read_binding(checkpoint) or {"fingerprint": {}}
    record["kafka"] = ids
    with fsspec.open(binding_path(checkpoint), "w", auto_mkdir=True) as fh:
        fh.write(json.dumps(record, indent=2, sort_keys=True, default=str))


def checkpoint_partitions(checkpoint: str, spec_partitions: int) -> int:
    """The shuffle partitions a run on ``checkpoint`` uses: the spec's, unless the checkpoint was
    repartitioned from that value (the spec then only sets where new checkpoints start). Any
    other difference is left for :func:`check_and_bind` to refuse."""
    record = read_binding(checkpoint) or {}
    history = record.get("repartitions") or []
    current = record.get("fingerprint", {}).get("shuffle_partitions")
    if history and current is not None and spec_partitions in {h["from"] for h in history}:
        return int(current)
    return spec_partitions


def adopt_repartition(spec: Any) -> Any:
    """``spec`` with the shuffle partitions its checkpoint runs at (see checkpoint_partitions)."""
    from dataclasses import replace

    n = checkpoint_partitions(spec.checkpoint, spec.shuffle_partitions)
    return spec if n == spec.shuffle_partitions else replace(spec, shuffle_partitions=n)
