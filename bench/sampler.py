"""Peak resident memory of this process's tree (driver JVM, Python workers), sampled from /proc."""

from __future__ import annotations

import os
import threading
from pathlib import Path


def _tree() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command name) for every process we can see."""
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        out[int(d.name)] = (ppid, name)
    return out


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def sample_tree(root: int | None = None) -> dict[str, int]:
    """Current RSS (bytes) of ``root``'s descendants: ``jvm``, ``python_workers``, ``total``."""
    root = root or os.getpid()
    tree = _tree()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in tree.items():
        children.setdefault(ppid, []).append(pid)
    jvm = workers = 0
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, []))
        rss = _rss_kib(pid) * 1024
        if tree[pid][1] == "java":
            jvm += rss
        elif "python" in tree[pid][1]:
            workers += rss
    return {"jvm": jvm, "python_workers": workers, "total": jvm + workers}


class PeakRss:
    """``with PeakRss() as peak: ...`` then ``peak.result`` (the peaks, bytes)."""

    def __init__(self, every: float = 0.5) -> None:
        self.every = every
        self.result = {"jvm": 0, "python_workers": 0, "total": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            now = sample_tree()
            for k, v in now.items():
                self.result[k] = max(self.result[k], v)
            self._stop.wait(self.every)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
