"""Where ``upgrade migrate`` builds a rewritten checkpoint, and how it takes the live one's place.

The live checkpoint is never written while the new one is built: the new one is a copy of its
logs (offsets, commits, file-source logs, metadata, ``_statekeeper/``) in a hidden folder beside
it, ``.<name>.migrate-<time>/checkpoint``, plus one batch K+1 that reads no input: its offsets
are batch K's (so the sources continue where they were), its confs name the new state store,
and its commit carries the watermark for the next batch. Then the two folders are swapped in one
``renameat2(RENAME_EXCHANGE)``: a kill at any moment leaves the old checkpoint or the new one,
never a mix. The hidden folder (then holding the old checkpoint) is deleted afterwards, or by the
next migrate when a kill came first.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from spark_jobs.contract import paths
from spark_jobs.contract.errors import UserError

PREFIX = "migrate-"
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"


def work_prefix(live: Path) -> str:
    return f".{live.name}.{PREFIX}"


def clear_leftovers(live: Path) -> list[str]:
    """Remove what a killed migrate left beside ``live`` (never the live folder itself)."""
    gone = []
    for p in live.parent.glob(work_prefix(live) + "*"):
        if p.is_dir() and p != live:
            shutil.rmtree(p, ignore_errors=True)
            gone.append(p.name)
    return gone


def new_work(live: Path) -> Path:
    work = live.parent / f"{work_prefix(live)}{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}"
    work.mkdir()
    return work


def copy_logs(live: Path, staged: Path) -> None:
    """Everything but the state (rewritten) and the lock file (the live one's)."""
    lock_rel = Path(paths.STATEKEEPER_DIR) / paths.LOCK_FILE

    def ignore(folder: str, names: list[str]) -> list[str]:
        rel = Path(folder).relative_to(live)
        return [n for n in names if rel / n in (Path("state"), lock_rel)]

    shutil.copytree(live, staged, ignore=ignore, copy_function=shutil.copy2)


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def add_batch(staged: Path, batch: int, conf: dict[str, str], watermark_ms: int | None) -> None:
    """Batch ``batch``+1: batch ``batch``'s offsets with ``conf`` laid over its confs, committed
    with ``watermark_ms`` (None: the same watermark) as the next batch's watermark."""
    lines = (staged / "offsets" / str(batch)).read_text().split("\n")
    meta = json.loads(lines[1])
    meta["conf"] = {**meta.get("conf", {}), **conf}
    lines[1] = json.dumps(meta, separators=(",", ":"))
    _write(staged / "offsets" / str(batch + 1), "\n".join(lines))
    commit = (staged / "commits" / str(batch)).read_text().split("\n")
    body = json.loads(commit[1])
    if watermark_ms is not None:
        body["nextBatchWatermarkMs"] = int(watermark_ms)
    commit[1] = json.dumps(body, separators=(",", ":"))
    _write(staged / "commits" / str(batch + 1), "\n".join(commit))


def next_watermark(live: Path, batch: int) -> int:
    """The watermark batch ``batch`` handed to the next one (its commit)."""
    commit = (live / "commits" / str(batch)).read_text().split("\n")
    return int(json.loads(commit[1]).get("nextBatchWatermarkMs", 0))


def pinned_conf(live: Path, batch: int) -> dict[str, Any]:
    lines = (live / "offsets" / str(batch)).read_text().split("\n")
    return dict(json.loads(lines[1]).get("conf", {}))


def swap(staged: Path, live: Path) -> None:
    """``staged`` becomes ``live`` in one step; the old checkpoint is left at ``staged``."""
    from spark_jobs.checkpoints.restore import exchange

    if not exchange(staged, live):
        raise UserError(
            f"cannot swap {staged} into {live} atomically on this filesystem (renameat2); "
            "nothing changed: migrate a copy on a local filesystem and restore it"
        )
