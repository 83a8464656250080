"""``python -m spark_jobs generate KIND``: realistic JSON-lines events for every input kind.

Deterministic for a seed. Each call writes new files (never overwriting) and continues the
folder's event-time clock, so repeated calls look like new data arriving. Files are written under
a hidden name and renamed into place, so a running query never reads half a file.

``--out kafka://HOST:PORT/TOPIC`` writes the very same files into a local staging folder
(:func:`kafka_staging`, which also keeps the clock) and then sends their new lines to the topic,
one record per line, creating the topic with 3 partitions when it is missing.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spark_jobs import generate_events as make
from spark_jobs.contract import paths
from spark_jobs.contract.errors import UserError
from spark_jobs.io import event_kinds

if TYPE_CHECKING:
    from spark_jobs.contract.kafka import KafkaUri

KINDS = tuple(event_kinds.KINDS)
STATE_FILE = ".statekeeper-generate.json"
DEFAULT_START = datetime(2026, 3, 15, 12, 0, tzinfo=UTC)


@dataclass
class Report:
    kind: str
    out: str
    files: list[str] = field(default_factory=list)
    events: int = 0
    bad: int = 0
    late: int = 0
    duplicates: int = 0
    first_event_time: str = ""
    last_event_time: str = ""

    def line(self) -> str:
        d = asdict(self)
        d["files"] = len(self.files)
        return json.dumps(d)


def _load_state(folder: Path) -> dict[str, Any]:
    p = folder / STATE_FILE
    if p.exists():
        try:
            return dict(json.loads(p.read_text()))
        except ValueError as exc:
            raise UserError(
                f"{p} is not valid JSON; delete it to restart the folder's clock"
            ) from exc
    return {"calls": 0, "clock": make.ts(DEFAULT_START)}


def generate(
    kind: str,
    out: str,
    events: int,
    keys: int | None = None,
    seed: int = 1,
    bad_rate: float = 0.0,
    late_rate: float = 0.0,
    files: int | None = None,
    dup_rate: float = 0.0,
    orders_from: str | None = None,
) -> Report:
    """Write ``events`` events of ``kind`` as new files under ``out``; see the module docstring."""
    _check_args(kind, events, bad_rate=bad_rate, late_rate=late_rate, dup_rate=dup_rate)
    from spark_jobs.contract import kafka as kafka_uri

    target = kafka_uri.parse(out) if kafka_uri.is_kafka(out) else None
    folder = kafka_staging(target) if target is not None else paths.local_path(out)
    if folder is None:
        raise UserError(f"generate writes local folders or kafka:// topics, not {out}")
    folder.mkdir(parents=True, exist_ok=True)
    state = _load_state(folder)
    call = int(state["calls"])
    rng = random.Random(f"{seed}:{kind}:{call}")
    start = datetime.fromisoformat(state["clock"].replace("Z", "+00:00"))
    keys = max(1, keys if keys is not None else events // 20 or 1)
    evs, end = _events(kind, rng, events, keys, start, folder, orders_from, state)
    report = Report(kind=kind, out=str(folder))
    _deliver_like_real_sources(evs, rng, start, late_rate, dup_rate, report)
    lines = _lines(evs, rng, kind, bad_rate, report)
    _write_files(lines, folder, f"{kind}-{call:05d}", files, report)
    state["calls"] = call + 1
    state["clock"] = make.ts(max(end, start))
    if target is not None:  # before the clock moves on: a failed send can be generated again
        from spark_jobs.kafka.produce import produce

        try:
            produce(target, lines)
        except BaseException:  # the staging folder mirrors the topic: drop what was not sent
            for written in report.files:
                Path(written).unlink(missing_ok=True)
            raise
        report.out = str(target)
    tmp = folder / f"{STATE_FILE}.tmp"
    tmp.write_text(json.dumps(state))
    os.replace(tmp, folder / STATE_FILE)
    return report


def _check_args(kind: str, events: int, **rates: float) -> None:
    if kind not in KINDS:
        raise UserError(f"unknown kind {kind!r}; kinds: {', '.join(KINDS)}")
    if events < 0:
        raise UserError("--events must be >= 0")
    for name, rate in rates.items():
        if not 0.0 <= rate <= 1.0:
            flag = "--" + name.replace("_", "-")
            raise UserError(f"{flag} must be between 0 and 1, not {rate}")


def _events(
    kind: str,
    rng: random.Random,
    events: int,
    keys: int,
    start: datetime,
    folder: Path,
    orders_from: str | None,
    state: dict[str, Any],
) -> tuple[list[dict[str, Any]], datetime]:
    """The call's events of ``kind`` (event time in ``_t``) and the clock after them."""
    if kind == "clickstream":
        return make.clickstream(rng, events, keys, start)
    if kind == "auth":
        return make.auth(rng, events, keys, start)
    if kind == "service-logs":  # few services unless asked: a service per 20 logs is too many
        services = keys if keys != max(1, events // 20) else max(1, min(50, keys))
        return make.service_logs(rng, events, services, start)
    if kind == "orders":
        return make.orders(rng, events, keys, start)
    orders_dir = Path(orders_from) if orders_from else folder.parent / "orders"
    if not orders_dir.is_dir():
        raise UserError(
            f"payments are made for orders: generate orders into {orders_dir} first (or pass orders_from)"
        )
    evs = make.payments(rng, events, orders_dir, state)
    return evs, max([e["_t"] for e in evs], default=start)


def _deliver_like_real_sources(
    evs: list[dict[str, Any]],
    rng: random.Random,
    start: datetime,
    late_rate: float,
    dup_rate: float,
    report: Report,
) -> None:
    """In place: a little disorder, late events (arriving last) and duplicates, as delivered."""
    evs.sort(key=lambda e: e["_t"])
    for i in range(1, len(evs)):  # a little disorder: neighbours swap, as in real delivery
        if rng.random() < 0.1:
            evs[i - 1], evs[i] = evs[i], evs[i - 1]
    late_n = int(round(len(evs) * late_rate))
    for e in rng.sample(evs, late_n) if late_n else ():
        e["_t"] = start - timedelta(minutes=rng.uniform(90, 180))  # behind any watermark of a job
        e["_late"] = True
    if late_n:  # late events arrive last, after the watermark has moved on
        evs.sort(key=lambda e: e.get("_late", False))
    dup_n = int(round(len(evs) * dup_rate))
    dups = [dict(e) for e in rng.sample(evs, dup_n)] if dup_n else []
    evs.extend(dups)
    report.late, report.duplicates = late_n, dup_n


def _lines(
    evs: list[dict[str, Any]], rng: random.Random, kind: str, bad_rate: float, report: Report
) -> list[str]:
    """The events as JSON lines, ``bad_rate`` of them spoiled; the report counts both."""
    lines: list[str] = []
    bad_idx = set(rng.sample(range(len(evs)), int(round(len(evs) * bad_rate)))) if evs else set()
    for i, e in enumerate(evs):
        body = {k: v for k, v in e.items() if not k.startswith("_")}
        body["event_time"] = make.ts(e["_t"])
        if i in bad_idx:
            lines.append(make.bad_line(rng, body, kind, len(lines)))
            report.bad += 1
        else:
            lines.append(json.dumps(body, separators=(",", ":")))
    report.events = len(lines) - report.bad
    times = [e["_t"] for e in evs]
    if times:
        report.first_event_time, report.last_event_time = make.ts(min(times)), make.ts(max(times))
    return lines


def _write_files(
    lines: list[str], folder: Path, prefix: str, files: int | None, report: Report
) -> None:
    """``lines`` in ``files`` files (200,000 lines a file by default), each written whole under a
    hidden name and renamed into place, never over an earlier call's file."""
    n_files = max(1, files or (len(lines) + 199_999) // 200_000)
    per = (len(lines) + n_files - 1) // n_files if lines else 0
    for f in range(n_files if lines else 0):
        chunk = lines[f * per : (f + 1) * per]
        if not chunk:
            continue
        name = f"{prefix}-{f:03d}.json"
        n = 0
        while (folder / name).exists():  # never overwrite an earlier call's file
            n += 1
            name = f"{prefix}-{f:03d}-{n}.json"
        tmp = folder / f".{name}.tmp"
        tmp.write_text("\n".join(chunk) + "\n", encoding="utf-8")
        os.replace(tmp, folder / name)
        report.files.append(str(folder / name))


def kafka_staging(target: KafkaUri) -> Path:
    """The local folder mirroring what ``generate`` sent to a topic: the same files a folder
    output gets (a benchmark reads them as the file-side twin of the topic) and the clock.
    Topics named after the kinds sit side by side, so payments find their orders."""
    server = target.bootstrap.split(",")[0].replace(":", "_").replace("[", "").replace("]", "")
    return paths.data_dir() / "kafka-generated" / server / target.topic
