"""Facts about a Delta table read straight from ``_delta_log`` (no Spark): version, commit info."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote


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


def newest_versions(table: str, n: int) -> list[tuple[int, list[dict[str, Any]]]]:
    """The actions of the newest ``n`` commits still in the log, newest first."""
    log = _log_dir(table)
    if log is None or not log.is_dir():
        return []
    versions = sorted(
        (
            int(e.name[:-5])
            for e in os.scandir(log)
            if e.name.endswith(".json") and e.name[:-5].isdigit()
        ),
        reverse=True,
    )[:n]
    out = []
    for v in versions:
        try:
            text = (log / f"{v:020d}.json").read_text()
        except FileNotFoundError:
            continue  # removed by log cleanup between the listing and the read
        out.append((v, [json.loads(line) for line in text.splitlines() if line.strip()]))
    return out


def added_files(table: str, actions: list[dict[str, Any]]) -> list[str]:
    """Local paths of the data files a commit added."""
    root = Path(table.removeprefix("file://"))
    return [
        str(root / unquote(a["add"]["path"]))
        for a in actions
        if "add" in a and "://" not in a["add"]["path"]
    ]
