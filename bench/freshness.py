"""Continuous freshness (issue 30): how long after a file lands (or an event is produced) is its
row in Delta, for ``run user_counts --trigger processing-time:1s`` against the pipeline a user
would write with Spark's built-ins, in one run.

``python -m bench.freshness`` (or ``python -m bench --only freshness``) starts, per input, each
contender as a whole process as a user starts it, one at a time (each alone on the machine, as
a user runs one job, on its own copy of the input: a landing folder or a topic of the same
local broker; ``--together``: all at once on the same input, sharing the cores):

- ours: ``python -m spark_jobs run user_counts --trigger processing-time:1s`` (the landing folder
  as ``--input``; for Kafka a spec naming the topic, ``STATEKEEPER_SPECS``);
- built-in: ``python -m bench.freshness_builtin ...``: Spark's JSON reader with the kind's schema
  (or the Kafka source + ``from_json``), per-user counts (streaming aggregation, update mode,
  RocksDB, the spec's shuffle partitions), ``foreachBatch`` MERGE into a Delta table with the
  same columns, 1 s trigger;
- built-in, exactly once (``built-in+txn``): the same, each MERGE with Delta's documented
  idempotent-write pair (``txnAppId``/``txnVersion``), the guarantee ours gives: the same work.
  A MERGE without it adds a batch replayed after a crash twice; with it, Delta answers the
  check from the table's snapshot state, which a MERGE rebuilds per new version anyway.

Then every ``--every`` seconds, at a point of the trigger period that moves from marker to
marker (:func:`bench.landing_schedule.landing_offsets`), it lands a file (written beside the
folder, moved in whole), or produces the same lines to a local broker's topic, holding a marker:
a user id no other line has.
A marker's row is visible when the commit that added a data file holding it is in the table's
``_delta_log``; its time is that commit file's modification time (the poll only finds it). Per
marker: visible - landed; p50/p95/max of the ``--files`` markers after ``--warm-up`` ones (the
``start`` window: a fresh process's first minute) and of the ``--later`` markers after those (the
``later`` window: the steady state), each a row (:mod:`bench.freshness_report`). The progress
records of each window's batches say where a data batch's time went (medians of ``durationMs``)
and how long a batch that read nothing took (the nothing-due batch; "-" when the run logged
none: Spark 4 runs no batch for an idle trigger unless a stateful operator needs one).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.freshness_builtin import JOB
from bench.freshness_report import Visible, summarise, table
from bench.landing_schedule import landing_offsets
from spark_jobs.contract import paths
from spark_jobs.contract.durations import parse_seconds

BACKGROUND_USERS = 30
EVENT_TYPES = ("page_view", "checkout", "purchase")
EXACTLY_ONCE = "built-in+txn"
CONTENDERS = ("ours", "built-in", EXACTLY_ONCE)  # run in this order, one at a time


def lines_for(n: int, events: int) -> list[str]:
    """File ``n``'s lines: ``events`` clicks of the background users and one of marker ``m<n>``,
    all timed now (so the job's watermark and future-time checks admit them)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    users = [f"u{(n * events + i) % BACKGROUND_USERS}" for i in range(events)] + [marker(n)]
    return [
        json.dumps(
            {
                "event_id": f"f{n}-{i}",
                "user_id": u,
                "event_type": EVENT_TYPES[i % 3],
                "page": "/p",
                "duration_sec": 1,
                "event_time": now,
            }
        )
        for i, u in enumerate(users)
    ]


def marker(n: int) -> str:
    return f"m{n:05d}"


def _env(run: Path, specs: Path | None) -> dict[str, str]:
    root = paths.project_root()
    env = {
        **os.environ,
        **paths.roots_env(run.parent),  # its landing folder, table and checkpoint live here
        "PYTHONPATH": f"{root}:{root / 'plugins'}",
        "STATEKEEPER_HOME": str(root),
        "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON") or sys.executable,
    }
    if specs is not None:
        env["STATEKEEPER_SPECS"] = str(specs)
    return env


def _start(args: list[str], log: Path, specs: Path | None = None) -> subprocess.Popen:
    fh = open(log, "w")  # noqa: SIM115 (the process holds it until it ends)
    return subprocess.Popen(
        [sys.executable, *args],
        cwd=paths.project_root(),
        env=_env(log.parent, specs),
        stdout=fh,
        stderr=subprocess.STDOUT,
    )


def start_ours(run: Path, inp: str | None, trigger: str, specs: Path | None) -> subprocess.Popen:
    """``run user_counts`` as a user starts it; ``inp`` None: the spec's input (Kafka)."""
    args = ["-m", "spark_jobs", "run", JOB, "--output", str(run / "out")]
    args += ["--checkpoint", str(run / "ckpt"), "--trigger", f"processing-time:{trigger}"]
    args += ["--run-for", "2 hours"] + (["--input", inp] if inp else [])
    return _start(args, run.with_suffix(".log"), specs)


def start_builtin(run: Path, inp: str, trigger: str, exactly_once: bool) -> subprocess.Popen:
    args = ["-m", "bench.freshness_builtin", inp, str(run / "out"), str(run / "ckpt"), trigger]
    args += ["exactly-once" if exactly_once else "plain"]
    return _start(args, run.with_suffix(".log"))


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def one_input(kind: str, work: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every contender on one input (``files`` or ``kafka``), then their figures: one at a time
    (each alone on the machine, as a user runs one job; its own landing folder or topic, the
    same marker schedule), or with ``--together`` all at once on the same input."""
    runs = {n: work / kind / n.replace("-", "").replace("+", "-") for n in CONTENDERS}
    for r in runs.values():
        r.mkdir(parents=True)
    home = work / kind / "broker"
    landed: dict[str, dict[str, float]] = {}
    bootstrap = None
    try:
        if kind == "kafka":
            from spark_jobs.kafka import broker

            bootstrap = broker.up(port=broker.free_port(), home=home, timeout=180).bootstrap
        groups = [list(runs)] if args.together else [[n] for n in runs]
        for names in groups:
            got = _contend(kind, {n: runs[n] for n in names}, bootstrap, args)
            landed |= {n: got for n in names}
    finally:
        if bootstrap is not None:
            from spark_jobs.kafka import broker

            broker.down(home)
    return [
        {"input": kind, **row}
        for n, r in runs.items()
        for row in summarise(n, r, n == "ours", landed[n], args.warm_up, args.files)
    ]


def _contend(
    kind: str, runs: dict[str, Path], bootstrap: str | None, args: argparse.Namespace
) -> dict[str, float]:
    """``runs`` (name -> folder) started at once on a fresh input of their own, fed the
    markers, stopped; the landed time of each marker."""
    where = next(iter(runs.values())).parent / ("input-" + "-".join(r.name for r in runs.values()))
    where.mkdir()
    procs = []
    try:
        if bootstrap is not None:
            send, inp, specs = _kafka(bootstrap, where)
        else:
            land, staging = where / "land", where / "staging"
            land.mkdir()
            staging.mkdir()
            send, inp, specs = _files(land, staging), str(land), None
        for name, run in runs.items():
            if name == "ours":
                procs.append(start_ours(run, None if specs else inp, args.trigger, specs))
            else:
                procs.append(start_builtin(run, inp, args.trigger, name == EXACTLY_ONCE))
        return _feed(send, runs, procs, args.warm_up + args.files + args.later, args)
    finally:
        _stop(procs)


def _files(land: Path, staging: Path) -> Any:
    def send(n: int, events: int) -> None:
        tmp = staging / f"part{n:05d}.json"
        tmp.write_text("\n".join(lines_for(n, events)) + "\n")
        os.replace(tmp, land / tmp.name)

    return send


def _kafka(bootstrap: str, where: Path) -> tuple[Any, str, Path]:
    """A new topic on the local broker, a spec naming it, and a sender producing a marker's
    lines."""
    from spark_jobs.contract.kafka import parse
    from spark_jobs.kafka.produce import ensure_topic, produce

    uri = f"kafka://{bootstrap}/clickstream-{where.name}"
    target = parse(uri)
    ensure_topic(target)
    specs = where / "specs"
    specs.mkdir()
    text = (paths.project_root() / "include" / "jobs" / f"{JOB}.yaml").read_text()
    text = text.replace(".data/landing/clickstream", uri)
    (specs / f"{JOB}.yaml").write_text(text)
    return (lambda n, events: produce(target, lines_for(n, events))), uri, specs


def _feed(
    send: Any,
    runs: dict[str, Path],
    procs: list[subprocess.Popen],
    total: int,
    args: argparse.Namespace,
) -> dict[str, float]:
    """Marker 0, until every table shows it (start-up), then one marker every ``--every`` s;
    the landed (or acknowledged) wall time of each."""
    tables = [Visible(r / "out") for r in runs.values()]
    landed: dict[str, float] = {}

    def until(m: str, timeout: float) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if any(p.poll() is not None for p in procs):
                raise RuntimeError(f"a run ended early: see the logs under {runs['ours'].parent}")
            for t in tables:
                t.poll()
            if all(m in t.seen for t in tables):
                return
            time.sleep(0.2)
        raise RuntimeError(f"marker {m} not in every table within {timeout:g} s")

    send(0, args.events)
    landed[marker(0)] = time.time()
    until(marker(0), 600)
    t0 = time.time()
    offsets = landing_offsets(total, args.every, parse_seconds(args.trigger))
    for n in range(1, total):
        while time.time() < t0 + offsets[n]:
            for t in tables:
                t.poll()
            time.sleep(0.1)
        send(n, args.events)
        landed[marker(n)] = time.time()
    try:  # the last marker: a slow machine gets a summary of what arrived, not an error
        until(marker(total - 1), 600)
    except RuntimeError as exc:
        print(f"freshness: {exc}; summarising the markers that arrived", flush=True)
    return landed


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.freshness", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="files only, 6 markers, no later")
    parser.add_argument("--inputs", default="files,kafka", help="files, kafka or both")
    parser.add_argument("--files", type=int, default=30, help="markers of the start window")
    parser.add_argument("--later", type=int, default=30, help="markers of the later window")
    parser.add_argument("--warm-up", type=int, default=5, help="markers not counted")
    parser.add_argument("--every", type=float, default=2.0, help="wall s between markers")
    parser.add_argument("--events", type=int, default=20, help="background lines per marker")
    parser.add_argument("--trigger", default="1s")
    parser.add_argument(
        "--together", action="store_true", help="every contender at once (default: in turn)"
    )
    parser.add_argument("--work", default=None, help="default .data/bench/freshness")
    args = parser.parse_args(argv)
    if args.smoke:
        args.inputs, args.files, args.warm_up, args.later = "files", 6, 2, 0
    root = Path(os.environ.get("STATEKEEPER_HOME") or paths.project_root())
    work = Path(args.work) if args.work else root / ".data" / "bench" / "freshness"
    shutil.rmtree(work, ignore_errors=True)
    rows: list[dict[str, Any]] = []
    for kind in args.inputs.split(","):
        how = "at once" if args.together else "one at a time"
        print(f"freshness: {kind}, {', '.join(CONTENDERS)} {how}; work in {work}", flush=True)
        rows += one_input(kind, work, args)
    print(table(rows, args), flush=True)
    out = {"params": vars(args), "rows": rows}
    (work / "results.json").write_text(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
