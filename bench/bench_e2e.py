"""What users run, timed as whole processes, and the parse on its own.

- ``e2e``: ``python -m spark_jobs run JOB`` against :mod:`bench.builtin_pipeline` (the same
  output columns and sink, hand-written with Spark's built-ins), each a fresh process on the same
  generated files, side by side in interleaved rounds (median kept). Wall time includes start-up.
  ``fraud_alerts`` reads :mod:`bench.auth_workload` (mostly successful logins, brute force
  against few accounts: what fraud detection sees), not ``generate auth`` (56 % failures), and
  has two built-ins, tumbling and sliding windows of failure counts (``sliding``), each timed in
  the same rounds. Why the two used to disagree (0.67x against tumbling windows on generated
  data, 1.28x against sliding windows): a sliding window counts each failure in
  ``failure_gap / slide`` = 10 windows, so its cost grows with the failures, and generated data
  is mostly failures; the job's cost is per event, successes included (it holds every event
  until the watermark passes it, since a success resets the count). On generated data the
  tumbling built-in aggregates 56 % of the events once and wins; on realistic data both
  built-ins aggregate few rows, and the comparison is of everything else. Where the job's time
  goes on realistic data (py-spy, progress lines): every event crosses into Python once (a
  stateful step that only yields its metric row costs about as much as the job in the first
  batch, so the crossing, not the logic, is the cost). Until the batched executor settled what
  a batch's own events prove due (``keyed.settled_until_ms``), the first batch also stored every
  event in state (Spark's watermark admits nothing yet) and the no-data batch read it all back;
  now the first batch applies all but the last watermark delay of them. The built-ins drop the
  successes (91 %) before their shuffle; the job cannot (a success resets a count, and an
  older failure may still arrive), which is why it trails them on this workload.
  The first round's tables of ``sessions`` (whose built-in writes the very same rows) must be
  equal row for row.
- ``e2e_kafka``: the same for ``run sessions`` reading a 3-partition Kafka topic, against the
  built-in pipeline reading the same topic through Spark's Kafka source and ``from_json``.
- ``parse``: parse + validate + quarantine of the same lines through :mod:`spark_jobs.io.events`
  against Spark's JSON reader with a schema and a corrupt-record column, like with like: the
  parse alone against the reader alone, and the parse as the runner plans it (one shuffle on the
  job's key, read by the good and the bad side) against the reader plus the same shuffle; one
  warm session, every column materialised (``noop`` sink), interleaved rounds.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import auth_workload, suite
from spark_jobs.contract import paths

KIND = {"sessions": "clickstream", "fraud_alerts": "auth"}
# Each job's built-in side(s) -> the pipeline's variant (bench.builtins.PIPELINES; None: the job's)
BUILTINS: dict[str, dict[str, str | None]] = {
    "sessions": {"builtin": None},
    "fraud_alerts": {"builtin": None, "sliding": "fraud_alerts_sliding"},
}


def _process(
    args: list[str], work: Path, extra_env: dict[str, str] | None = None
) -> tuple[float, str]:
    """``python ARGS`` as a user starts it, from the project root: (wall seconds, its stdout).
    A non-zero exit raises, with the end of its stderr."""
    root = paths.project_root()
    # the run's folders are roots, as an operator adds theirs: work, and the input it is given
    given = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--input"]
    inputs = [Path(v).parent for v in given if "://" not in v]
    env = {
        **os.environ,
        "PYTHONPATH": f"{root}:{root / 'plugins'}",
        "STATEKEEPER_HOME": str(root),
        **paths.roots_env(work, *inputs),
        **(extra_env or {}),
    }
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:4])} failed: {done.stderr.strip()[-600:]}")
    return wall, done.stdout


def _table(uri: str) -> list[tuple]:
    """A Delta table's rows, each as its sorted (column, value) pairs, in a stable order, read
    without Spark (delta-rs)."""
    from deltalake import DeltaTable

    rows = [tuple(sorted(r.items())) for r in DeltaTable(uri).to_pyarrow_table().to_pylist()]
    return sorted(rows, key=repr)


def _summary_line(stdout: str) -> str:
    """The run's one-line JSON summary: the last stdout line that is one (a JVM or library may
    print a line of its own after it at shutdown)."""
    for line in reversed(stdout.strip().splitlines()):
        if line.startswith("{"):
            return line
    raise RuntimeError(f"no JSON summary in the run's output: {stdout.strip()[-600:]!r}")


def _contend(
    job: str,
    where: Path,
    run_args: list[str],
    builtin_input: str,
    events: int,
    keys: int,
    rounds: int,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """``python -m spark_jobs run JOB RUN_ARGS`` against the built-in pipeline on
    ``builtin_input``, fresh table and checkpoint each, interleaved rounds (median kept); the
    first round's two tables must be equal row for row."""
    others = BUILTINS[job]
    times: dict[str, list[float]] = {"run": [], **{who: [] for who in others}}
    rows: dict[str, Any] = {}
    tables: dict[str, list[tuple]] = {}
    for r in range(rounds):
        for who in list(times)[:: 1 if r % 2 == 0 else -1]:
            d = where / who
            shutil.rmtree(d, ignore_errors=True)
            out, ckpt = str(d / "out"), str(d / "ckpt")
            if who == "run":
                args = ["-m", "spark_jobs", "run", job, *run_args]
                args += ["--output", out, "--checkpoint", ckpt]
            else:
                args = ["-m", "bench.builtin_pipeline", job, builtin_input, out, ckpt]
                args += [v for v in (others[who],) if v]
            wall, stdout = _process(args, where.parent, env)
            last = _summary_line(stdout)
            if stdout.strip().splitlines()[-1] != last:
                print(f"  {job} {who}: after its summary: {stdout.strip()[-300:]!r}", flush=True)
            times[who].append(round(wall, 2))
            rows[who] = json.loads(last).get("input_rows")
            if r == 0 and job == "sessions":
                tables[who] = _table(out)
            print(f"  {job} {where.name} round {r + 1} {who}: {wall:.1f} s", flush=True)
    run_s, builtin_s = statistics.median(times["run"]), statistics.median(times["builtin"])
    result: dict[str, Any] = {
        "job": job,
        "input": where.name,
        "events": events,
        "keys": keys,
        "rounds": rounds,
        "run_seconds": times["run"],
        "builtin_seconds": times["builtin"],
        "run_events_per_s": round(events / run_s),
        "builtin_events_per_s": round(events / builtin_s),
        "ratio_vs_builtin": round(builtin_s / run_s, 2),
        "input_rows": rows,
    }
    if tables:  # only sessions' built-in is exact: fraud's are approximations
        result["same_table_as_builtin"] = tables["run"] == tables["builtin"] and bool(tables["run"])
    for who in list(others)[1:]:  # the other built-ins, e.g. sliding windows for fraud
        s = statistics.median(times[who])
        result |= {f"{who}_seconds": times[who], f"ratio_vs_{who}": round(s / run_s, 2)}
    return result


def e2e(
    work: Path,
    events: int,
    keys: int,
    rounds: int,
    jobs: tuple[str, ...] = ("sessions", "fraud_alerts"),
) -> list[dict[str, Any]]:
    results = []
    for job in jobs:
        if job == "fraud_alerts":
            data = auth_workload.dataset(work, events, keys)
        else:
            data = suite.dataset(work, KIND[job], events, keys)
        where = work / "e2e" / job / "files"
        results.append(
            _contend(job, where, ["--input", str(data)], str(data), events, keys, rounds)
        )
    return results


def e2e_kafka(work: Path, events: int, keys: int, rounds: int) -> dict[str, Any]:
    """``run sessions`` reading a 3-partition topic against the built-in pipeline reading the
    same topic (Spark's Kafka source and ``from_json``), whole processes, interleaved rounds.

    A local broker (the cached jars, a free port, a temporary home, always stopped) gets the
    clickstream once from ``generate --out kafka://...``. ``run`` reads it as a spec naming the
    topic would: a copy of the job specs whose ``sessions.yaml`` input is the topic, given to
    both processes through ``$STATEKEEPER_SPECS`` (so both take the same records per batch)."""
    import yaml

    from bench.local_topic import clickstream_topic

    with clickstream_topic("statekeeper-bench-e2e-kafka-", events, keys, seed=6) as topic:
        specs = topic.tmp / "specs"
        shutil.copytree(paths.specs_dir(), specs)
        spec_file = specs / "sessions.yaml"
        spec = yaml.safe_load(spec_file.read_text())
        spec["inputs"] = {"clickstream": topic.uri}
        spec_file.write_text(yaml.safe_dump(spec, sort_keys=False))
        where = work / "e2e" / "sessions" / "kafka"
        env = {"STATEKEEPER_SPECS": str(specs)}
        return _contend("sessions", where, [], topic.uri, events, keys, rounds, env)


def _text_lines(spark: Any, where: str) -> Any:
    """The files' lines as a run reads them: ``value`` and ``source_file``."""
    from pyspark.sql import functions as F

    return (
        spark.read.option("pathGlobFilter", "*.json*")
        .text(where)
        .select("value", F.col("_metadata.file_path").alias("source_file"))
    )


def _json_reader(spark: Any, where: str, schema: str) -> Any:
    """Spark's JSON reader on the files, with ``schema`` (its corrupt-record column included)."""
    return (
        spark.read.schema(schema)
        .option("columnNameOfCorruptRecord", "_corrupt")
        .option("pathGlobFilter", "*.json*")
        .json(where)
    )


def _noop(df: Any) -> None:
    """Every column of every row computed, nothing kept."""
    df.write.format("noop").mode("overwrite").save()


# The parse bench's share of bad lines in its second dataset (the demo lands 1 %).
BAD_RATE = 0.01


def parse(spark: Any, work: Path, events: int, rounds: int) -> dict[str, Any]:
    """Three like-for-like pairs, every column of every row materialised (``noop`` sink), in one
    warm session, interleaved rounds (median kept):

    - alone: ``parse_lines`` (the first tier in the JVM, the "certainly good" checks, the exact
      reason of the rest, the raw line of bad ones) on the text lines, against Spark's JSON reader with
      the schema and a corrupt-record column on the same files. Neither shuffles.
    - with the shuffle: the same parse as the runner plans it (one shuffle on ``user_id``, read
      by the good and the quarantine side, one write of their union), against the reader plus
      the same shuffle on ``user_id``.
    - with bad lines: the first pair on other files of the same events, :data:`BAD_RATE` of them
      spoiled as the generator spoils them (every reason the contract names, at about the
      share the demo lands): those lines also take the exact tier.

    And Spark's ``from_json`` alone on the same text lines, every field as text: what the
    parse's first tier was until it was measured. A parse must keep each line's text (a bad
    line's raw text is the quarantine's), which the JSON reader cannot give back, and
    ``from_json`` makes a character reader per line (``CreateJacksonParser.utf8String``: an
    ``InputStreamReader``, with its 8 KB buffer, over the line's bytes) where the file reader,
    and the first tier, hand Jackson the bytes themselves.
    """
    from pyspark.sql import functions as F

    from spark_jobs.contract.spec import load_spec
    from spark_jobs.io import event_kinds, sinks
    from spark_jobs.io import events as ev

    partitions = load_spec("sessions").shuffle_partitions  # as the runner plans the parse
    data = suite.dataset(work, "clickstream", events, max(events // 10, 1), calls=1)
    spoiled = suite.dataset(work, "clickstream", events, max(events // 10, 1), bad_rate=BAD_RATE)
    files = str(data)
    schema = f"{event_kinds.spark_schema('clickstream')}, _corrupt string"
    # from_json's share of a parse on text lines: every field as text, which keeps nothing out
    strings = ", ".join(
        [*(f"{f.name} string" for f in event_kinds.fields("clickstream")), "_c string"]
    )

    def lines(where: str = files) -> Any:
        return _text_lines(spark, where)

    def reader(where: str = files) -> Any:
        return _json_reader(spark, where, schema)

    def ours_shuffled() -> None:
        parsed = ev.shared(ev.parse_lines(lines(), "clickstream"), partitions, [F.col("user_id")])
        good = ev.good_events(parsed, "clickstream")
        _noop(sinks.combine(good, ev.bad_records(parsed, "job", "clickstream")))

    contenders = {
        "ours": lambda: _noop(ev.parse_lines(lines(), "clickstream")),
        "native": lambda: _noop(reader()),
        "ours_shuffled": ours_shuffled,
        "native_shuffled": lambda: _noop(reader().repartition(partitions, "user_id")),
        "from_json": lambda: _noop(
            lines()
            .select(F.from_json("value", strings, {"columnNameOfCorruptRecord": "_c"}).alias("j"))
            .select("j.*")
        ),
        "ours_bad": lambda: _noop(ev.parse_lines(lines(str(spoiled)), "clickstream")),
        "native_bad": lambda: _noop(reader(str(spoiled))),
    }
    contenders["native"]()  # warm-up: the file listing and the JIT, for both
    contenders["ours"]()
    times = _interleaved(contenders, rounds)
    med = {who: statistics.median(t) for who, t in times.items()}
    return {
        "events": events,
        **{f"{who}_seconds": t for who, t in times.items()},
        "ratio_vs_native": round(med["ours"] / med["native"], 2),
        "ratio_vs_native_shuffled": round(med["ours_shuffled"] / med["native_shuffled"], 2),
        "ratio_from_json_vs_native": round(med["from_json"] / med["native"], 2),
        "bad_rate": BAD_RATE,
        "ratio_vs_native_bad": round(med["ours_bad"] / med["native_bad"], 2),
        "load_average": os.getloadavg(),
    }


def _interleaved(contenders: dict[str, Callable[[], None]], rounds: int) -> dict[str, list[float]]:
    """Each contender's wall seconds per round; the order reverses every other round, so none
    always runs right after the same neighbour (a warm cache, a collector's debt)."""
    names = list(contenders)
    times: dict[str, list[float]] = {who: [] for who in names}
    for r in range(rounds):
        for who in names[:: 1 if r % 2 == 0 else -1]:
            started = time.perf_counter()
            contenders[who]()
            times[who].append(round(time.perf_counter() - started, 2))
    return times


def startup(work: Path, rounds: int) -> dict[str, Any]:
    """``python -m spark_jobs run sessions`` with nothing new, whole process, with the driver's
    class archive (:mod:`spark_jobs.contract.jvm`) and without it, interleaved."""
    from spark_jobs.contract import jvm as jvm_archive

    data = suite.dataset(work, "clickstream", 1000, 100)
    d = work / "startup"
    shutil.rmtree(d, ignore_errors=True)
    args = [
        "-m",
        "spark_jobs",
        "run",
        "sessions",
        "--input",
        str(data),
        "--output",
        str(d / "out"),
        "--checkpoint",
        str(d / "ckpt"),
    ]
    _process(args, work)  # the first run takes the input; the timed ones find nothing new
    off = {jvm_archive.OFF: "0"}
    times: dict[str, list[float]] = {"archive": [], "no_archive": []}
    for r in range(rounds):
        for who in ("archive", "no_archive")[:: 1 if r % 2 == 0 else -1]:
            wall, _ = _process(args, work, off if who == "no_archive" else None)
            times[who].append(round(wall, 2))
            print(f"  run with nothing new, round {r + 1}, {who}: {wall:.1f} s", flush=True)
    a, n = statistics.median(times["archive"]), statistics.median(times["no_archive"])
    return {
        "archive_seconds": times["archive"],
        "no_archive_seconds": times["no_archive"],
        "archive_used": jvm_archive.intact(jvm_archive.archive_path()),
        "ratio_no_archive_vs_archive": round(n / a, 2),
    }
