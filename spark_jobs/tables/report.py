"""``table maintain``'s report as text: one block per table, sizes people read."""

from __future__ import annotations

from typing import Any


def size(n: int | float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def _files(s: dict[str, Any]) -> str:
    return (
        f"{s['files']} live files, {size(s['bytes'])} (avg {size(s['average_bytes'])}); "
        f"{s['files_on_disk']} on disk, {size(s['bytes_on_disk'])}"
    )


def text(report: dict[str, Any]) -> str:
    would = "would " if report["dry_run"] else ""
    lines = [
        f"table maintain {report['job']}{' (dry run)' if report['dry_run'] else ''}: "
        f"{report['seconds']:.1f} s"
    ]
    for t in report["tables"]:
        lines.append(f"{t['role']} {t['table']}")
        if "skipped" in t:
            lines.append(f"  skipped: {t['skipped']}")
            continue
        lines.append(f"  before:     {_files(t['before'])}")
        st = t["settings"]
        changed = [*(f"{k}={v}" for k, v in st["set"].items()), *(f"-{k}" for k in st["unset"])]
        lines.append(
            f"  settings:   {would + 'set ' + ', '.join(changed) if changed else 'as declared'}"
            f" ({st['seconds']:.1f} s)"
        )
        c = t["compaction"]
        if c.get("dry_run"):
            lines.append(f"  compaction: would rewrite {c['would_rewrite_files']} small files")
        else:
            how = f"z-ordered by {', '.join(c['zorder_by'])}" if c["zorder_by"] else "bin-packed"
            lines.append(
                f"  compaction: {how} {c['files_removed']} files ({size(c['bytes_removed'])}) "
                f"into {c['files_added']} ({size(c['bytes_added'])}) "
                f"({c['seconds']:.1f} s, {c['attempts']} attempt(s))"
            )
        r, v = t["retention"], t["vacuum"]
        lines.append(
            f"  vacuum:     {'would delete' if would else 'deleted'} {v['files_deleted']} files ({size(v['bytes_deleted'])})"
            f" removed over {r['seconds'] / 3600:.2f} h ago (longest floor: {r['because']}"
            f"{', snapshot ' + r['oldest_snapshot'] if r['oldest_snapshot'] else ''})"
            f" ({v['seconds']:.1f} s)"
        )
        lines.append(f"  after:      {_files(t['after'])}")
        lines += [f"  warning:    {w}" for w in t["warnings"]]
    return "\n".join(lines)


def event_details(report: dict[str, Any]) -> dict[str, Any]:
    """The ``maintenance`` row's details in the event log: per table its live files and bytes
    before and after, the files compaction replaced and VACUUM deleted, each step's seconds."""
    out: dict[str, Any] = {"seconds": report["seconds"]}
    for t in report["tables"]:
        if "skipped" in t:
            out[t["role"]] = {"table": t["table"], "skipped": t["skipped"]}
            continue
        c, v = t["compaction"], t["vacuum"]
        out[t["role"]] = {
            "table": t["table"],
            "before": {"files": t["before"]["files"], "bytes": t["before"]["bytes"]},
            "after": {"files": t["after"]["files"], "bytes": t["after"]["bytes"]},
            "compacted": {"files": c["files_removed"], "bytes": c["bytes_removed"]},
            "vacuumed": {"files": v["files_deleted"], "bytes": v["bytes_deleted"]},
            "retention_seconds": t["retention"]["seconds"],
            "step_seconds": {
                "settings": t["settings"]["seconds"],
                "compaction": c["seconds"],
                "vacuum": v["seconds"],
            },
        }
    return out


def verdict(report: dict[str, Any]) -> str:
    """The row's ``reason``: ``warn`` when a table's report carries a warning, else ``pass``."""
    return "warn" if any(t.get("warnings") for t in report["tables"]) else "pass"
