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

from spark_jobs.contract import paths
from spark_jobs.contract.errors import UserError

if TYPE_CHECKING:
    from spark_jobs.contract.kafka import KafkaUri

KINDS = ("clickstream", "auth", "service-logs", "orders", "payments")
STATE_FILE = ".statekeeper-generate.json"
DEFAULT_START = datetime(2026, 3, 15, 12, 0, tzinfo=UTC)
PAGES = (
    "/",
    "/search",
    "/product/1",
    "/product/2",
    "/product/3",
    "/cart",
    "/checkout",
    "/help",
    "/account",
    "/deals",
)
CLICK_TYPES = (
    ("page_view", 0.70),
    ("click", 0.14),
    ("add_to_cart", 0.07),
    ("checkout", 0.06),
    ("purchase", 0.03),
)
LEVELS = (("INFO", 0.85), ("WARN", 0.1), ("ERROR", 0.05))


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


def _ts(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _pick(rng: random.Random, weighted: tuple[tuple[str, float], ...]) -> str:
    r, acc = rng.random(), 0.0
    for value, w in weighted:
        acc += w
        if r < acc:
            return value
    return weighted[-1][0]


def _eid(rng: random.Random) -> str:
    return f"{rng.getrandbits(64):016x}"


def _clickstream(
    rng: random.Random, n: int, keys: int, start: datetime
) -> tuple[list[dict[str, Any]], datetime]:
    sessions_per_user = max(1.0, n / keys / 7)
    span = timedelta(hours=max(2.0, sessions_per_user * 3))
    out: list[dict[str, Any]] = []
    while len(out) < n:
        user = f"u{rng.randrange(keys):06d}"
        t = start + span * rng.random()
        for _ in range(min(n - len(out), 1 + int(rng.expovariate(1 / 6)))):
            etype = _pick(rng, CLICK_TYPES)
            page = rng.choice(PAGES) if etype == "page_view" or rng.random() < 0.5 else None
            dur = rng.randint(1, 300) if rng.random() < 0.9 else None
            out.append(
                {
                    "event_id": _eid(rng),
                    "user_id": user,
                    "event_type": etype,
                    "page": page,
                    "duration_sec": dur,
                    "_t": t,
                }
            )
            t += timedelta(seconds=min(1200.0, rng.expovariate(1 / 90)))
    return out, start + span


def _auth(
    rng: random.Random, n: int, keys: int, start: datetime
) -> tuple[list[dict[str, Any]], datetime]:
    span = timedelta(hours=max(1.0, n / keys / 4))
    out: list[dict[str, Any]] = []
    while len(out) < n:
        user = f"u{rng.randrange(keys):06d}"
        t = start + span * rng.random()
        ips = [
            f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
            for _ in range(3)
        ]
        if rng.random() < 0.08:  # a brute-force burst: many failures, a few IPs, seconds apart
            burst = [("LOGIN_FAILED", rng.choice(ips)) for _ in range(rng.randint(3, 12))]
        else:  # a person: maybe a typo or two, then in
            burst = [("LOGIN_FAILED", ips[0])] * rng.choice((0, 0, 0, 1, 2)) + [
                ("LOGIN_SUCCESS", ips[0])
            ]
        for etype, ip in burst[: n - len(out)]:
            out.append(
                {"event_id": _eid(rng), "user_id": user, "event_type": etype, "ip": ip, "_t": t}
            )
            t += timedelta(seconds=rng.uniform(5, 120))
    return out, start + span


def _service_logs(
    rng: random.Random, n: int, keys: int, start: datetime
) -> tuple[list[dict[str, Any]], datetime]:
    per_service = max(1, n // keys)
    out: list[dict[str, Any]] = []
    end = start
    for s in range(keys):
        service = f"svc-{s:03d}"
        t = start + timedelta(seconds=rng.uniform(0, 30))
        silent_at = rng.randrange(per_service) if rng.random() < 0.3 else -1
        for i in range(per_service):
            level = _pick(rng, LEVELS)
            out.append(
                {
                    "service": service,
                    "level": level,
                    "message": f"{level.lower()} handled request {rng.randrange(10**6)}",
                    "_t": t,
                }
            )
            t += timedelta(seconds=rng.uniform(20, 60))
            if i == silent_at:  # goes quiet for longer than stale_after
                t += timedelta(minutes=rng.uniform(7, 20))
        end = max(end, t)
    return out[:n], end


def _orders(
    rng: random.Random, n: int, keys: int, start: datetime
) -> tuple[list[dict[str, Any]], datetime]:
    span = timedelta(hours=max(1.0, n / 2000))
    out = [
        {
            "order_id": f"o-{_eid(rng)}",
            "user_id": f"u{rng.randrange(keys):06d}",
            "amount": round(rng.uniform(5, 500), 2),
            "_t": start + span * rng.random(),
        }
        for _ in range(n)
    ]
    return out, start + span


def _payments(
    rng: random.Random, n: int, orders_dir: Path, state: dict[str, Any]
) -> list[dict[str, Any]]:
    """Payments for orders in ``orders_dir`` not paid by an earlier call: most within the hour,
    some late (past the join's hour), some never."""
    done = set(state.get("paid_files", []))
    out: list[dict[str, Any]] = []
    for f in sorted(orders_dir.glob("*.json")):
        if f.name.startswith(".") or f.name in done or len(out) >= n:
            continue
        for line in f.read_text().splitlines():
            try:
                o = json.loads(line)
                t = datetime.fromisoformat(o["event_time"].replace("Z", "+00:00"))
                order_id, amount = str(o["order_id"]), o["amount"]
                if t.tzinfo is None:
                    continue
            except (ValueError, KeyError, TypeError, AttributeError):
                continue  # the orders' own bad lines have nothing to pay
            r = rng.random()
            if r < 0.10:
                continue
            delay = timedelta(minutes=rng.uniform(1, 50) if r < 0.95 else rng.uniform(70, 180))
            out.append(
                {
                    "payment_id": f"p-{_eid(rng)}",
                    "order_id": order_id,
                    "amount": amount,
                    "_t": t + delay,
                }
            )
        done.add(f.name)
    state["paid_files"] = sorted(done)
    return out[:n] if n else out


_BAD = ("malformed", "missing", "wrong_type", "no_timezone")


def _bad_line(rng: random.Random, event: dict[str, Any], kind: str, i: int) -> str:
    how = _BAD[i % len(_BAD)]
    e = dict(event)
    if how == "malformed":
        return json.dumps(e)[: rng.randint(5, 30)]
    key = next(k for k in e if k != "event_time")
    if how == "missing":
        e.pop(key)
    elif how == "wrong_type":
        e[key] = 12345 if isinstance(e[key], str) else "12345"
    else:
        e["event_time"] = e["event_time"].replace("Z", "").replace("T", " ")
    return json.dumps(e)


def _load_state(folder: Path) -> dict[str, Any]:
    p = folder / STATE_FILE
    if p.exists():
        try:
            return dict(json.loads(p.read_text()))
        except ValueError as exc:
            raise UserError(
                f"{p} is not valid JSON; delete it to restart the folder's clock"
            ) from exc
    return {"calls": 0, "clock": _ts(DEFAULT_START)}


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
    state["clock"] = _ts(max(end, start))
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
        return _clickstream(rng, events, keys, start)
    if kind == "auth":
        return _auth(rng, events, keys, start)
    if kind == "service-logs":  # few services unless asked: a service per 20 logs is too many
        services = keys if keys != max(1, events // 20) else max(1, min(50, keys))
        return _service_logs(rng, events, services, start)
    if kind == "orders":
        return _orders(rng, events, keys, start)
    orders_dir = Path(orders_from) if orders_from else folder.parent / "orders"
    if not orders_dir.is_dir():
        raise UserError(
            f"payments are made for orders: generate orders into {orders_dir} first (or pass orders_from)"
        )
    evs = _payments(rng, events, orders_dir, state)
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
        body["event_time"] = _ts(e["_t"])
        if i in bad_idx:
            lines.append(_bad_line(rng, body, kind, len(lines)))
            report.bad += 1
        else:
            lines.append(json.dumps(body, separators=(",", ":")))
    report.events = len(lines) - report.bad
    times = [e["_t"] for e in evs]
    if times:
        report.first_event_time, report.last_event_time = _ts(min(times)), _ts(max(times))
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
