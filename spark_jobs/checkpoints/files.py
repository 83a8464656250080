"""Reading a checkpoint's files with fsspec (a local path or any object-store URL): the listing
with sizes and times, one file's text, and Spark's metadata-log file format (version line, JSON
metadata line, one line per source). What the files mean is :mod:`spark_jobs.checkpoints.layout`."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any

from spark_jobs.contract import paths


@dataclass(frozen=True)
class FileInfo:
    path: str  # relative to the checkpoint, "/"-separated
    size: int
    mtime: float


def filesystem(uri: str) -> tuple[Any, str]:
    import fsspec

    fs, root = fsspec.core.url_to_fs(uri)
    return fs, root.rstrip("/")


def list_files(uri: str, sizes: bool = True) -> dict[str, dict[str, FileInfo]] | None:
    """Every file under ``uri``, by folder: {relative folder: {name: FileInfo}}; None when the
    folder does not exist. ``sizes=False`` skips the per-file stat on local disks (size -1)."""
    local = paths.local_path(uri)
    if local is not None:
        if not local.is_dir():
            return None
        return _walk_local(str(local), sizes)
    fs, root = filesystem(uri)
    if not fs.exists(root):
        return None
    out: dict[str, dict[str, FileInfo]] = {}
    for full, info in fs.find(root, detail=True).items():
        rel = full[len(root) :].lstrip("/")
        mtime = info.get("mtime") or info.get("LastModified") or info.get("created") or 0
        if hasattr(mtime, "timestamp"):
            mtime = mtime.timestamp()
        folder, _, name = rel.rpartition("/")
        out.setdefault(folder, {})[name] = FileInfo(
            rel, int(info.get("size") or 0), float(mtime or 0)
        )
    return out


def _walk_local(root: str, sizes: bool) -> dict[str, dict[str, FileInfo]]:
    # os.scandir knows file-or-folder without a stat; the stat per file is what costs, so
    # validation (which needs no sizes) skips it.
    out: dict[str, dict[str, FileInfo]] = {}
    stack = [("", root)]
    while stack:
        rel_dir, full_dir = stack.pop()
        try:
            entries = list(os.scandir(full_dir))
        except OSError:
            continue
        here: dict[str, FileInfo] = {}
        prefix = f"{rel_dir}/" if rel_dir else ""
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                stack.append((prefix + e.name, e.path))
            elif sizes:
                try:
                    st = e.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue  # removed since the folder was read (a running query's cleanup)
                here[e.name] = FileInfo(prefix + e.name, st.st_size, st.st_mtime)
            else:
                here[e.name] = FileInfo(prefix + e.name, -1, 0.0)
        if here:
            out[rel_dir] = here
    return out


def stat_file(uri: str, rel: str) -> FileInfo | None:
    local = paths.local_path(uri)
    try:
        if local is not None:
            st = (local / rel).stat()
            return FileInfo(rel, st.st_size, st.st_mtime)
        fs, root = filesystem(uri)
        info = fs.info(f"{root}/{rel}")
        return FileInfo(rel, int(info.get("size") or 0), float(info.get("mtime") or 0))
    except (OSError, FileNotFoundError):
        return None


def read_text(uri: str, rel: str) -> str:
    local = paths.local_path(uri)
    if local is not None:
        return (local / rel).read_text(encoding="utf-8")
    fs, root = filesystem(uri)
    return fs.cat_file(f"{root}/{rel}").decode("utf-8")


def parse_log_file(text: str) -> tuple[str, dict[str, Any], list[str]]:
    """A Spark metadata-log file: version line, JSON metadata line, then the rest."""
    lines = text.split("\n")
    if not lines or not re.fullmatch(r"v\d+", lines[0].strip()):
        raise ValueError("first line is not a log version like v1")
    if len(lines) < 2 or not lines[1].strip():
        raise ValueError("no metadata line")
    meta = json.loads(lines[1])
    if not isinstance(meta, dict):
        raise ValueError("metadata line is not a JSON object")
    rest = [line for line in lines[2:] if line.strip()]
    for line in rest:
        if line.strip() != "-":
            json.loads(line)
    return lines[0].strip(), meta, rest
