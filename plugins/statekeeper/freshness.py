"""Freshness in event time: how far a job's output is behind (watermark lag) and how much input
waits unread (input lag), and the alerting state machine over the spec's ``freshness`` limits.

Read from files only (the progress log's last record, the landing folders, the checkpoint's
file-source log), so the health API and the freshness DAG compute the same figures. The state
machine is a pure function: one alert when a limit is first breached, one "recovered" when no
limit is breached any more, nothing in between however often it is asked.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from spark_jobs.contract import paths
from spark_jobs.contract.spec import JobSpec

OK, BREACHED = "ok", "breached"


def _epoch(iso: Any) -> float | None:
    if not iso:
        return None
    t = datetime.fromisoformat(str(iso).replace("Z", "+00:00")).timestamp()
    return t if t > 0 else None  # Spark's watermark starts at the epoch: none yet


def watermark_lag_seconds(watermark: Any, now: float) -> float | None:
    """Now minus the watermark (None before the job has one)."""
    wm = _epoch(watermark)
    return None if wm is None else round(now - wm, 1)


_UNREAD: dict[str, tuple[Any, list[tuple[Path, float]]]] = {}


def _signature(spec: JobSpec) -> tuple[Any, ...]:
    """What the unread files depend on: the landing folders' and the source logs' mtimes (a
    file added or a batch logged changes its folder's)."""
    folders = [paths.local_path(u) for u in spec.inputs.values() if not u.startswith("kafka://")]
    local = paths.local_path(spec.checkpoint)
    if local is not None and (local / "sources").is_dir():
        folders += [*(local / "sources").iterdir()]
    return tuple(f.stat().st_mtime_ns if f is not None and f.exists() else None for f in folders)


def unread_files(spec: JobSpec) -> list[tuple[Path, float]]:
    """(path, arrival time) of the landing files of the job's local folders that its checkpoint
    has not read yet; listed again only when a folder changed (the health API asks on every
    request; a file added inside a sub-folder of a landing folder is seen at the folder's next
    change)."""
    sig = _signature(spec)
    hit = _UNREAD.get(spec.checkpoint)
    if hit is not None and hit[0] == sig:
        return hit[1]
    found = _unread(spec)
    _UNREAD[spec.checkpoint] = (sig, found)
    return found


def _unread(spec: JobSpec) -> list[tuple[Path, float]]:
    """The local landing files the file sources' logs do not name, by arrival time: the same
    listing and rule as ``checkpoint validate`` (hidden names and folders are never read)."""
    from spark_jobs.checkpoints.source_files import files_read
    from spark_jobs.checkpoints.unread import landing_files

    read = files_read(spec.checkpoint)
    found = []
    for uri in spec.inputs.values():
        if uri.startswith("kafka://") or paths.local_path(uri) is None:
            continue
        found += [(Path(f), t) for f, t in landing_files(uri).items() if f not in read]
    return found


def input_lag(spec: JobSpec, source_lag: Any, now: float) -> dict[str, Any]:
    """``{"records", "files", "oldest_seconds"}``: Kafka records behind the topics' ends (from
    the last batch), landing files not read yet and the age of the oldest of them."""
    records = None
    if isinstance(source_lag, dict):
        records = sum(int(v.get("behind", 0)) for v in source_lag.values() if isinstance(v, dict))
    files = unread_files(spec)
    oldest = min((arrived for _, arrived in files), default=None)
    return {
        "records": records,
        "files": len(files),
        "oldest_seconds": round(now - oldest, 1) if oldest is not None else None,
    }


def lags(spec: JobSpec, watermark: Any, source_lag: Any, now: float | None = None) -> dict:
    """The health row's ``watermark_lag_seconds`` and ``input_lag``."""
    now = time.time() if now is None else now
    return {
        "watermark_lag_seconds": watermark_lag_seconds(watermark, now),
        "input_lag": input_lag(spec, source_lag, now),
    }


def breaches(spec: JobSpec, row: dict[str, Any]) -> list[str]:
    """The spec's freshness limits the lags in ``row`` exceed, one line each."""
    out = []
    f = spec.freshness
    wm = row.get("watermark_lag_seconds")
    if f.max_watermark_lag is not None and wm is not None and wm > f.max_watermark_lag:
        out.append(f"watermark lag {wm:.0f}s > max_watermark_lag {f.max_watermark_lag:.0f}s")
    oldest = (row.get("input_lag") or {}).get("oldest_seconds")
    if f.max_input_lag is not None and oldest is not None and oldest > f.max_input_lag:
        out.append(f"oldest unread input {oldest:.0f}s old > max_input_lag {f.max_input_lag:.0f}s")
    return out


@dataclass(frozen=True)
class AlertState:
    """What was last said about a job's freshness (kept between checks)."""

    state: str = OK
    since: float | None = None
    reasons: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str | None) -> AlertState:
        if not text:
            return cls()
        raw = json.loads(text)
        return cls(raw["state"], raw.get("since"), tuple(raw.get("reasons") or ()))


def step(prev: AlertState, reasons: list[str], now: float) -> tuple[AlertState, str | None]:
    """(the new state, "alert" | "recovered" | None): an alert once per breach, one recovery."""
    if reasons and prev.state == OK:
        return AlertState(BREACHED, now, tuple(reasons)), "alert"
    if not reasons and prev.state == BREACHED:
        return AlertState(OK, now), "recovered"
    return prev, None
