"""The HTML of the Streaming health pages, rendered on the server with inline SVG charts.

No script and no CDN (the api-server may have no internet): the overview is a table, the job page
a grid of SVG line charts, the time range a row of links. Every number cell carries its raw
value in ``data-value`` for scripts and tests; the text is in readable units.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from html import escape
from typing import Any

STATUS_LABEL = {
    "running": "running",
    "idle": "idle",
    "stalled": "stalled",
    "dead": "dead",
    "maintenance": "maintenance",
    "never_run": "never run",
}


# -- units ---------------------------------------------------------------------------------------
def rate(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{v:,.0f} ev/s" if v >= 100 else f"{v:,.1f} ev/s"


def duration_ms(v: float | None) -> str:
    if v is None:
        return "–"
    if v < 1000:
        return f"{v:,.0f} ms"
    return f"{v / 1000:,.1f} s" if v < 60_000 else f"{v / 60_000:,.1f} min"


def seconds(v: float | None) -> str:
    if v is None:
        return "–"
    if abs(v) < 120:
        return f"{v:,.0f} s"
    return f"{v / 60:,.1f} min" if abs(v) < 7200 else f"{v / 3600:,.1f} h"


def mb(v: float | None) -> str:
    return "–" if v is None else f"{v / 1_000_000:,.1f} MB"


def count(v: int | None) -> str:
    return "–" if v is None else f"{v:,}"


def percent(v: float | None) -> str:
    return "–" if v is None else f"{v * 100:.2f} %"


def lag_text(lag: Any) -> str:
    """A source's lag as the record carries it: a number, or per source."""
    if isinstance(lag, dict):
        return ", ".join(
            f"{k}: {v:,}" if isinstance(v, int) else f"{k}: {v}" for k, v in lag.items()
        )
    return f"{lag:,}" if isinstance(lag, int) else str(lag)


def when(iso: str | None, now: float) -> str:
    if not iso:
        return "–"
    t = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return f"{t:%Y-%m-%d %H:%M} UTC · {seconds(now - t.timestamp())} ago"


# -- pieces --------------------------------------------------------------------------------------
def _cell(field: str, value: Any, text: str, extra: str = "", after: str = "") -> str:
    raw = "" if value is None else escape(str(value))
    return f'<td data-field="{field}" data-value="{raw}"{extra}>{escape(text)}{after}</td>'


def _status(row: dict[str, Any]) -> str:
    st = row["status"]
    tip = escape(row.get("reason") or "")
    warn = "".join(f"<div class=warn>{escape(w)}</div>" for w in row.get("warnings") or [])
    return (
        f'<td data-field="status" data-value="{st}"><span class="badge {st}" title="{tip}">'
        f"{STATUS_LABEL.get(st, st)}</span>{warn}</td>"
    )


def _verdict(field: str, value: str | None, detail: str, after: str = "") -> str:
    text = value or "–"
    return (
        f'<td data-field="{field}" data-value="{escape(value or "")}">'
        f'<span class="verdict {escape(value or "none")}" title="{escape(detail)}">{escape(text)}</span>{after}</td>'
    )


def _upgrade(row: dict[str, Any]) -> str:
    """The last upgrade plan's worst change, under the checkpoint's verdict, while there is one:
    the next catch-up or supervise run stops at its plan until it is applied."""
    verdict = row.get("upgrade_verdict")
    if not verdict:
        return ""
    return (
        f'<div class=warn data-field="upgrade_verdict" data-value="{escape(verdict)}" '
        f'title="{escape(row.get("upgrade_next_step") or "")}">upgrade plan: '
        f"{escape(row.get('upgrade_line') or verdict)}</div>"
    )


def _page(title: str, base: str, body: str) -> str:
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title>"
        f'<link rel=stylesheet href="{escape(base)}/static/health.css"></head>'
        f"<body>{body}</body></html>"
    )


HEAD = (
    "<tr><th class=job>Job</th><th>Status</th><th>Last batch</th><th>Input / processed</th>"
    "<th>Batch</th><th>State keys</th><th>State memory</th><th>Watermark lag</th>"
    "<th>Dropped late</th><th>Quarantine</th><th>Checkpoint</th><th>Quality</th><th>Tables</th></tr>"
)


def _iso_or_none(t: float | None) -> str | None:
    from datetime import UTC, datetime

    return None if t is None else datetime.fromtimestamp(t, UTC).isoformat()


def _input_lag(lag: dict[str, Any] | None) -> str:
    """The unread input under the watermark lag: files (and the oldest one's age), records."""
    if not lag:
        return ""
    parts = []
    if lag.get("files"):
        parts.append(f"{lag['files']:,} files unread, oldest {seconds(lag['oldest_seconds'])}")
    if lag.get("records"):
        parts.append(f"{lag['records']:,} records behind")
    text = "; ".join(parts) or "input all read"
    return f"<div class=sub data-field=input_lag>{escape(text)}</div>"


def overview_row(row: dict[str, Any], base: str, now: float) -> str:
    job = escape(row["job"])
    link = f'<td class=job data-field="job"><a href="{escape(base)}/jobs/{job}">{job}</a>'
    link += f"<div class=sub>{escape(row['mode'])} · {escape(row['trigger'])}</div></td>"
    if row.get("last_batch_at") is None and row.get("other_runs"):
        other = row["other_runs"][0]
        return (
            f'<tr data-job="{job}">{link}{_status(row)}<td colspan=10 class=empty>'
            "Its live query has not run yet, but it ran on "
            f"<code>{escape(other['checkpoint'])}</code>: last batch "
            f"{when(_iso_or_none(other['last_batch_time']), now)}, watermark lag "
            f"{seconds(other['watermark_lag_seconds'])}"
            f" ({len(row['other_runs'])} other run(s)).</td></tr>"
        )
    if row["status"] == "never_run":
        return (
            f'<tr data-job="{job}">{link}{_status(row)}<td colspan=11 class=empty>'
            f"No batches yet: this job has never run. Its catch-up DAG <code>catchup_{job}</code> "
            "(or <code>python -m spark_jobs run " + job + "</code>) starts it.</td></tr>"
        )
    rates = f"{rate(row['input_rows_per_second'])} / {rate(row['processed_rows_per_second'])}"
    lag = row.get("lag")
    lag_html = (
        f"<div class=sub data-field=lag>lag {escape(lag_text(lag))}</div>"
        if lag is not None
        else ""
    )
    keys_note = " (state rows)" if row.get("state_keys_counted") == "state_rows" else ""
    quarantine = percent(row["quarantined"])
    if row.get("quarantined_rows") is not None:
        quarantine += f" ({row['quarantined_rows']:,} of {row['quarantine_input_rows']:,})"
    dropped = count(row["dropped_by_watermark"])
    if row.get("dropped_by_watermark_recent"):
        dropped += f" ({row['dropped_by_watermark_recent']:,} in last {row['recent_batches']})"
    return (
        f'<tr data-job="{job}">{link}{_status(row)}'
        + _cell("last_batch_at", row["last_batch_at"], when(row["last_batch_at"], now))
        + _cell(
            "rates",
            f"{row['input_rows_per_second']}/{row['processed_rows_per_second']}",
            rates,
            after=lag_html,
        )
        + _cell(
            "batch_duration_ms", row["batch_duration_ms"], duration_ms(row["batch_duration_ms"])
        )
        + _cell("state_keys", row["state_keys"], count(row["state_keys"]) + keys_note)
        + _cell("state_memory_bytes", row["state_memory_bytes"], mb(row["state_memory_bytes"]))
        + _cell(
            "watermark_lag_seconds",
            row.get("watermark_lag_seconds"),
            seconds(row.get("watermark_lag_seconds")),
            f' title="now minus the watermark {escape(row["watermark"] or "not set")}; the '
            f'watermark is {seconds(row["watermark_delay_seconds"])} behind the newest event"',
            after=_input_lag(row.get("input_lag")),
        )
        + _cell("dropped_by_watermark", row["dropped_by_watermark"], dropped)
        + _cell("quarantined", row["quarantined"], quarantine)
        + _verdict(
            "checkpoint_verdict",
            row["checkpoint_verdict"],
            ", ".join(row.get("checkpoint_findings") or []) or "no findings",
            after=_upgrade(row),
        )
        + _verdict(
            "quality_verdict",
            row["quality_verdict"],
            f"{row.get('quality_failed', 0)} of {row.get('quality_checks', 0)} checks not passed, "
            f"run {row.get('quality_run_at') or 'never'}",
        )
        + _tables_cell(row, now)
        + "</tr>"
    )


def _tables_cell(row: dict[str, Any], now: float) -> str:
    """Output files and their average size; below, the quarantine's and the last maintenance."""

    def files(role: str, name: str) -> str:
        n = row.get(f"{role}_files")
        if n is None:
            return f"{name}: no table"
        avg = row.get(f"{role}_average_file_bytes") or 0
        return f"{name} {n:,} files, avg {avg / 1024:,.0f} KiB"

    done = row.get("last_maintenance_at")
    subs = (files("quarantine", "quarantine"), f"maintained {when(done, now) if done else 'never'}")
    after = "".join(f"<div class=sub>{escape(t)}</div>" for t in subs)
    return _cell("table_files", row.get("table_files"), files("table", "output"), after=after)


def overview(rows: list[dict[str, Any]], base: str = "", now: float | None = None) -> str:
    now = time.time() if now is None else now
    body = (
        "<header><h1>Streaming health</h1>"
        f"<p class=sub>{len(rows)} jobs · read from progress logs and checkpoints at "
        f"{datetime.fromtimestamp(now, UTC):%H:%M:%S} UTC · rates and sizes of each job's last batch"
        "</p></header>"
        f"<table class=jobs><thead>{HEAD}</thead><tbody>"
        + "".join(overview_row(r, base, now) for r in rows)
        + "</tbody></table>"
    )
    return _page("Streaming health", base, body)


# -- charts --------------------------------------------------------------------------------------
W, H, PAD_L, PAD_R, PAD_T, PAD_B = 560, 190, 64, 10, 12, 26
COLORS = ("#2563eb", "#ea580c")


def _clock(t: float, span: float) -> str:
    d = datetime.fromtimestamp(t, UTC)
    return f"{d:%m-%d %H:%M}" if span > 86400 else f"{d:%H:%M:%S}" if span < 600 else f"{d:%H:%M}"


def chart(
    title: str,
    points: list[dict[str, Any]],
    keys: list[tuple[str, str]],
    fmt,
    bars: bool = False,
) -> str:
    """One SVG chart of ``keys`` (field, legend) over time; gaps where a value is missing."""
    pts = [p for p in points if p.get("t") is not None]
    values = [p[k] for p in pts for k, _ in keys if p.get(k) is not None]
    legend = "".join(
        f'<span><i style="background:{COLORS[i]}"></i>{escape(label)}</span>'
        for i, (_, label) in enumerate(keys)
    )
    head = f"<figure class=chart data-chart='{escape(keys[0][0])}'><figcaption>{escape(title)}<span class=legend>{legend}</span></figcaption>"
    if not values:
        return head + "<p class=empty>No values in this range.</p></figure>"
    t0, t1 = pts[0]["t"], pts[-1]["t"]
    span = max(t1 - t0, 1e-9)
    top = max(max(values), 1e-9)
    iw, ih = W - PAD_L - PAD_R, H - PAD_T - PAD_B

    def x(t: float) -> float:
        return PAD_L + (iw / 2 if t1 == t0 else (t - t0) / span * iw)

    def y(v: float) -> float:
        return PAD_T + ih - v / top * ih

    parts = [
        f'<line x1="{PAD_L}" y1="{PAD_T + ih}" x2="{W - PAD_R}" y2="{PAD_T + ih}" class=axis />',
        f'<line x1="{PAD_L}" y1="{PAD_T}" x2="{W - PAD_R}" y2="{PAD_T}" class=grid />',
        f'<text x="{PAD_L - 6}" y="{PAD_T + 4}" class=ylab>{escape(fmt(top))}</text>',
        f'<text x="{PAD_L - 6}" y="{PAD_T + ih}" class=ylab>{escape(fmt(0))}</text>',
        f'<text x="{PAD_L}" y="{H - 6}" class=xlab>{_clock(t0, span)}</text>',
        f'<text x="{W - PAD_R}" y="{H - 6}" class="xlab end">{_clock(t1, span)}</text>',
    ]
    for i, (key, _) in enumerate(keys):
        if bars:
            bw = max(iw / max(len(pts), 1) * 0.8, 1.0)
            for p in pts:
                if p.get(key):
                    parts.append(
                        f'<rect x="{x(p["t"]) - bw / 2:.1f}" y="{y(p[key]):.1f}" width="{bw:.1f}" '
                        f'height="{PAD_T + ih - y(p[key]):.1f}" fill="{COLORS[i]}" />'
                    )
            continue
        segment: list[str] = []
        for p in pts + [{"t": None}]:
            v = p.get(key)
            if v is None:
                if len(segment) == 1:
                    cx, cy = segment[0].split(",")
                    parts.append(f'<circle cx="{cx}" cy="{cy}" r="2.5" fill="{COLORS[i]}" />')
                elif segment:
                    parts.append(
                        f'<polyline points="{" ".join(segment)}" stroke="{COLORS[i]}" class=line />'
                    )
                segment = []
            else:
                segment.append(f"{x(p['t']):.1f},{y(v):.1f}")
    svg = f'<svg viewBox="0 0 {W} {H}" role=img aria-label="{escape(title)}">{"".join(parts)}</svg>'
    return head + svg + "</figure>"


CHARTS = (
    (
        "Input vs processed rate",
        [("input_rows_per_second", "input"), ("processed_rows_per_second", "processed")],
        rate,
        False,
    ),
    ("Batch duration", [("batch_duration_ms", "duration")], duration_ms, False),
    ("State keys", [("state_keys", "keys")], lambda v: f"{v:,.0f}", False),
    ("State memory", [("state_memory_bytes", "memory")], mb, False),
    ("Watermark delay behind newest event", [("watermark_delay_seconds", "delay")], seconds, False),
    (
        "Rows dropped by the watermark",
        [("dropped_by_watermark", "dropped")],
        lambda v: f"{v:,.0f}",
        True,
    ),
)


def job(
    row: dict[str, Any],
    data: dict[str, Any],
    current: str,
    ranges: dict[str, str],
    base: str = "",
    now: float | None = None,
) -> str:
    now = time.time() if now is None else now
    name = escape(row["job"])
    links = " ".join(
        f'<a href="{escape(base)}/jobs/{name}?range={k}"'
        + (' class=current aria-current="page"' if k == current else "")
        + f">{escape(label)}</a>"
        for k, label in ranges.items()
    )
    summary = f"<table class=jobs><thead>{HEAD}</thead><tbody>{overview_row(row, base, now)}</tbody></table>"
    note = f"{data['batches']:,} batches in range"
    if data["downsampled"]:
        note += f", shown as {len(data['points'])} points (rates averaged, worst duration, dropped rows summed)"
    if not data["points"]:
        charts = "<p class=empty>No batches in this range. Pick a longer range above.</p>"
    else:
        charts = (
            "<div class=charts>"
            + "".join(
                chart(title, data["points"], keys, fmt, bars) for title, keys, fmt, bars in CHARTS
            )
            + "</div>"
        )
    body = (
        f'<header><a href="{escape(base)}/" class=back>← all jobs</a><h1>{name}</h1>'
        f"<p class=sub>{escape(row.get('reason') or '')}</p></header>{summary}"
        f"<nav class=ranges>Range: {links}<span class=sub> · {note}</span></nav>{charts}"
    )
    return _page(f"{row['job']} · Streaming health", base, body)
