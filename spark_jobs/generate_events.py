"""What each input kind's generated events look like (``python -m spark_jobs generate``): pages,
event types, log levels, orders and their payments, and the bad lines mixed in. Deterministic for
the caller's random generator; files, clock and delivery are :mod:`spark_jobs.generate`'s."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

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


def ts(t: datetime) -> str:
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


def clickstream(
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


def auth(
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


def service_logs(
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


def orders(
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


def payments(
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


def bad_line(rng: random.Random, event: dict[str, Any], kind: str, i: int) -> str:
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
