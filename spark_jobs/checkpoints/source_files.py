"""The landing files a checkpoint's file sources have read, from Spark's own log (no Spark).

Spark's file source logs every file it reads under ``<checkpoint>/sources/<i>/``: after a ``v1``
line, one JSON line per file (``{"path": URL, "timestamp", "batchId"}``) in log files ``N`` and,
every 10th, ``N.compact``, which repeats every entry before it. A Kafka source keeps its offsets
in the same layout, without ``path``: it has no files to report.
"""

from __future__ import annotations

import json
import os
from urllib.parse import unquote, urlparse

from spark_jobs.checkpoints.layout import SOURCE_LOG_NAME, filesystem


def file_key(url_or_path: str) -> str:
    """One spelling of a file for every side: an absolute local path, or ``bucket/key``."""
    u = urlparse(url_or_path)
    if u.scheme in ("", "file"):
        return os.path.abspath(unquote(u.path))
    return unquote(u.netloc + u.path)


def files_read(checkpoint: str) -> set[str]:
    """Every file the checkpoint's file sources logged, spelled by :func:`file_key`."""
    fs, root = filesystem(checkpoint)
    sources = f"{root}/sources"
    if not fs.exists(sources):
        return set()
    out: set[str] = set()
    for src in fs.ls(sources, detail=False):
        logs: dict[int, str] = {}
        newest_compact = -1
        for p in fs.ls(src, detail=False):
            name = p.rstrip("/").rsplit("/", 1)[-1]
            m = SOURCE_LOG_NAME.match(name)
            if m is None or name.startswith(".") or m.group(3):
                continue  # Hadoop's hidden .crc files
            logs[int(m.group(1))] = p
            if m.group(2):
                newest_compact = max(newest_compact, int(m.group(1)))
        for n in sorted(b for b in logs if b >= newest_compact):
            for line in fs.cat_file(logs[n]).decode("utf-8").split("\n")[1:]:
                path = _path(line)
                if path is not None:
                    out.add(file_key(path))
    return out


def _path(line: str) -> str | None:
    """The file of one log line; None for a line that names none (a Kafka source's offsets)."""
    if not line.strip().startswith("{"):
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    path = value.get("path") if isinstance(value, dict) else None
    return path if isinstance(path, str) else None
