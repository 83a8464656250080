"""Facts about a Delta table read straight from ``_delta_log`` (no Spark): version, commit info."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _log_dir(table: str) -> Path | None:
    if "://" in table and not table.startswith("file://"):
        return None
    return Path(table.removeprefix("file://")) / "_delta_log"


def version(table: str) -> int | None:
    """The latest committed version, or None when there is no table yet (or it is remote)."""
    log = _log_dir(table)
    if log is None or not log.is_dir():
        return None
    versions = [int(p.stem) for p in log.glob("*.json") if p.stem.isdigit()]
    return max(versions) if versions else None


def commit_infos(table: str) -> list[dict[str, Any]]:
    """``commitInfo`` of every version still in the log, oldest first."""
    log = _log_dir(table)
    if log is None or not log.is_dir():
        return []
    out = []
    for p in sorted(log.glob("*.json")):
        if not p.stem.isdigit():
            continue
        for line in p.read_text().splitlines():
            if '"commitInfo"' in line:
                info = json.loads(line).get("commitInfo", {})
                info["version"] = int(p.stem)
                out.append(info)
    return out
