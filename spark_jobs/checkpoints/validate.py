"""``validate``: the checks of a Spark checkpoint, each raising a finding of the catalogue
(:mod:`spark_jobs.checkpoints.findings`, stable codes).

Read-only by construction: it lists and reads files, never writes. Cheap enough to run before
every submit (one listing plus the newest offset and commit files). A checkpoint that does not
exist yet is clean: a new job starts one.

Exit codes of the command: 0 clean (info findings allowed), 10 warnings, 20 errors.
"""

from __future__ import annotations

import time
from typing import Any

from spark_jobs.checkpoints import first_batch, landing_codecs
from spark_jobs.checkpoints.findings import Report
from spark_jobs.checkpoints.landing_changes import changed_after_read
from spark_jobs.checkpoints.landing_changes import describe as describe_changed
from spark_jobs.checkpoints.layout import STATEKEEPER_DIR, Layout, read_layout
from spark_jobs.checkpoints.recovery import check_recovery
from spark_jobs.checkpoints.unread import unread
from spark_jobs.contract import binding, lock, paths
from spark_jobs.contract.errors import UserError

# Thresholds (named so the docs and the tests can quote them).
TOO_MANY_FACTOR = 3  # retained batches above factor * minBatchesToRetain + slack: no cleanup
TOO_MANY_SLACK = 10
STATE_VERSIONS_LIMIT = 200  # state versions on disk in one store beyond minBatchesToRetain + this
SOURCE_LOG_BLOAT_BYTES = 64 * 1024 * 1024
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
SHUFFLE_CONF = "spark.sql.shuffle.partitions"
# Confs compared only when both the spec and the checkpoint say something.
_NOT_PINNED = {
    "spark.sql.streaming.minBatchesToRetain",
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled",
}


# A run writes its checkpoint while the health page or the daily validate reads it: one look can
# list a batch half-written (a commit without its state version, two offsets ahead of the
# commits, a temp file in flight) or lose a file to Spark's cleanup. Those findings are looked at
# again: what the next look no longer finds was the race; what every look finds is real.
LIVE_LOOKS = 4
LOOK_PAUSE_SECONDS = 0.1  # doubled after each look: never in step with the run's batches
RACES = frozenset(
    {
        "OFFSET_GAP",
        "COMMIT_GAP",
        "COMMIT_WITHOUT_OFFSET",
        "UNCOMMITTED_MULTIPLE",
        "STATE_MISSING",
        "STATE_PARTITIONS",
        "TEMP_FILES",
        "FIRST_BATCH_CUT_SHORT",
    }
)


def validate_checkpoint(
    checkpoint: str,
    spec: Any = None,
    snapshot_root: str | None = None,
    layout: Layout | None = None,
) -> Report:
    """Check ``checkpoint`` (a path or URL) against Spark's layout and, given one, the job spec.

    Never writes. A checkpoint that does not exist yet gives a clean report. While a run holds
    the checkpoint, a look that finds one of :data:`RACES`, or loses a file to Spark's cleanup,
    is taken again, up to :data:`LIVE_LOOKS` times (a given ``layout`` is the caller's one look).
    """
    if layout is not None:
        return _validate(checkpoint, spec, snapshot_root, layout)
    for look in range(1, LIVE_LOOKS + 1):
        last = look == LIVE_LOOKS
        try:
            rep = _validate(checkpoint, spec, snapshot_root, read_layout(checkpoint, sizes=False))
        except FileNotFoundError as exc:
            if last or not _running(checkpoint):
                raise UserError(
                    f"checkpoint {checkpoint} changed while it was validated ({exc.filename} "
                    "was removed); try again"
                ) from exc
        else:
            if RACES.isdisjoint(rep.codes) or last or not _running(checkpoint):
                return rep
        time.sleep(LOOK_PAUSE_SECONDS * 2 ** (look - 1))
    raise AssertionError("the last look returns or raises")


def _running(checkpoint: str) -> bool:
    """A run holds the checkpoint (a local one: a run needs its lock)."""
    if paths.local_path(checkpoint) is None:
        return False
    return (lock.holder(checkpoint) or {}).get("purpose") == lock.RUN


def _validate(checkpoint: str, spec: Any, snapshot_root: str | None, lay: Layout) -> Report:
    """One look: the checks of the layout ``lay`` as it was listed."""
    started = time.perf_counter()
    rep = Report(checkpoint=checkpoint, exists=lay.exists)
    spark_files = lay.offsets or lay.commits or "metadata" in lay.files or lay.stores
    if lay.exists and not spark_files and (foreign := _foreign_files(lay)):
        rep.add(
            "NOT_A_CHECKPOINT",
            f"the folder holds {len(foreign)} file(s) and no checkpoint (e.g. {foreign[0]}): "
            "a run would start one among them",
        )
    if lay.exists and spark_files:
        _check_layout(lay, rep)
        # the landing files its source log names, spec or not (a job's own or a backfill's)
        if changed := changed_after_read(lay):
            rep.add("LANDING_FILES_CHANGED", describe_changed(changed))
        if (owed := binding.owed_batches(checkpoint)) is not None:
            rep.add("TABLE_GONE", binding.table_gone_line(checkpoint, *owed))
        if spec is not None:
            _check_spec(lay, rep, spec, snapshot_root)
    rep.seconds = time.perf_counter() - started
    return rep


# What a checkpoint holds at its top level: Spark's folders and files, and our own.
_CHECKPOINT_NAMES = frozenset(
    {"metadata", "offsets", "commits", "sources", "state", STATEKEEPER_DIR}
)


def _foreign_files(lay: Layout) -> list[str]:
    """Files no checkpoint writes (hidden ones aside: ``.keep``, a copy tool's leftovers)."""
    return sorted(
        p
        for p in lay.files
        if p.split("/", 1)[0] not in _CHECKPOINT_NAMES and not p.split("/")[-1].startswith(".")
    )


def _check_layout(lay: Layout, rep: Report) -> None:
    if lay.metadata_error == "missing":
        rep.add("METADATA_MISSING", "no metadata file (it holds the query id)")
    elif lay.metadata_error:
        rep.add("METADATA_UNREADABLE", f"metadata is {lay.metadata_error}")

    offsets, commits = lay.offsets, lay.commits
    gaps = _gaps(offsets)
    if gaps:
        rep.add(
            "OFFSET_GAP",
            f"offsets missing for batch(es) {_ranges(gaps)} between {offsets[0]} and {offsets[-1]}",
        )
    cgaps = _gaps(commits)
    if cgaps:
        rep.add("COMMIT_GAP", f"commits missing for batch(es) {_ranges(cgaps)}")
    oset = set(offsets)
    orphan = [b for b in commits if b not in oset and (not offsets or b > offsets[0])]
    if orphan:
        rep.add("COMMIT_WITHOUT_OFFSET", f"commit(s) without offset: batch(es) {_ranges(orphan)}")
    unc = lay.uncommitted
    if len(unc) > 1:
        rep.add(
            "UNCOMMITTED_MULTIPLE",
            f"{len(unc)} batches started but not committed: {_ranges(unc)} (Spark re-runs only one)",
        )
    elif len(unc) == 1:
        rep.add("UNCOMMITTED_BATCH", f"batch {unc[0]} was started but not committed")
    for rel, why in sorted(lay.unparsable.items()):
        code = "OFFSET_UNPARSABLE" if rel.startswith("offsets/") else "COMMIT_UNPARSABLE"
        rep.add(code, f"{rel} cannot be parsed: {why}")

    partial = first_batch.partial_state(lay)
    if partial:
        rep.add(
            "FIRST_BATCH_CUT_SHORT",
            f"batch 0 never committed and left {len(partial)} state file(s) under state/",
        )

    last = lay.last_committed
    if last is not None:
        need = last + 1
        missing = [s.key for s in lay.data_stores() if need not in s.reachable()]
        if missing:
            shown = ", ".join(missing[:5]) + (
                f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            )
            rep.add(
                "STATE_MISSING",
                f"state version {need} (after committed batch {last}) cannot be rebuilt for {shown}",
            )

    pinned = lay.pinned_conf()
    # A cut-short batch 0's partitions are whatever its tasks reached: none of its state is needed.
    for op, meta in [] if partial else sorted(lay.operators.items()):
        parts = {s.part for s in lay.stores.values() if s.op == op}
        # The newest offset file decides: `checkpoint repartition` changes it, while Spark leaves
        # the operator's v1 metadata at the partitions of the batch that first wrote it.
        declared = int(pinned[SHUFFLE_CONF]) if SHUFFLE_CONF in pinned else None
        for info in meta.get("stateStoreInfo") or [] if declared is None else []:
            declared = info.get("numPartitions", declared)
        if declared is not None and parts and len(parts) != int(declared):
            rep.add(
                "STATE_PARTITIONS",
                f"operator {op} has {len(parts)} partition folders, expected {declared}",
            )

    moving = set(partial)  # a cut-short batch 0's temp files move aside with its state
    temp = [p for p in lay.temp_files if p not in moving]
    if temp:
        rep.add("TEMP_FILES", f"{len(temp)} leftover temp file(s), e.g. {temp[0]}")
    for src, info in sorted(lay.source_logs.items()):
        # The newest compact file holds every file the source ever read: it is the bloat.
        size = max(info["compact_bytes"], info["bytes"])
        if size > SOURCE_LOG_BLOAT_BYTES:
            rep.add(
                "FILE_SOURCE_LOG_BLOAT",
                f"file source log sources/{src}: {size / 1e6:.1f} MB in its largest compact file "
                f"or in all ({info['files']} log files)",
            )


def _check_kafka(lay: Layout, rep: Report, spec: Any) -> None:
    """The newest offsets' sources against the spec's inputs: a Kafka offset line must name
    partitions and offsets, and the topics read must be the spec's (Spark cannot carry a
    checkpoint from a folder to a topic, or from one topic to another)."""
    from spark_jobs.contract.kafka import is_kafka, parse
    from spark_jobs.contract.lag import kafka_offsets

    last = lay.last_offset
    if last is None or last not in lay.offset_sources:
        return
    lines = [x for x in lay.offset_sources[last] if x is not None]
    kafka_lines = [x for x in lines if not (isinstance(x, dict) and "logOffset" in x)]
    bad = [x for x in kafka_lines if kafka_offsets(x) is None]
    if bad:
        rep.add(
            "KAFKA_OFFSETS_UNREADABLE",
            f"offsets/{last} has a source line that is neither a "
            f"file source's nor Kafka's {{topic: {{partition: offset}}}}: {str(bad[0])[:80]}",
        )
        return
    have = sorted(lay.kafka_offsets(last))
    want = sorted(parse(u).topic for u in spec.inputs.values() if is_kafka(u))
    files_have = len(lines) - len(kafka_lines)
    files_want = sum(1 for u in spec.inputs.values() if not is_kafka(u))
    # Folders are compared as "some or none": the offsets say nothing of which folder it was.
    if have != want or bool(files_have) != bool(files_want):

        def say(topics: list[str], files: int) -> str:
            parts = [f"topic(s) {', '.join(topics)}"] if topics else []
            return " and ".join(parts + ([f"{files} folder(s)"] if files else [])) or "nothing"

        rep.add(
            "SOURCE_CHANGED",
            f"the checkpoint read {say(have, files_have)}; the spec reads {say(want, files_want)}",
        )


def _check_spec(lay: Layout, rep: Report, spec: Any, snapshot_root: str | None) -> None:
    from spark_jobs.contract.spark_confs import spec_confs

    _check_kafka(lay, rep, spec)
    missed = unread(lay.uri, spec.inputs.values(), lay, spec.max_files_per_trigger)
    if missed:
        rep.add("LANDING_FILES_UNREAD", missed.describe())
    for uri in spec.inputs.values():  # a continuous run reads them before any run refuses them
        if any(names := landing_codecs.split_read_as_nothing(uri, lay)):
            rep.add("LANDING_FILES_READ_AS_NOTHING", landing_codecs.describe(uri, *names))

    pinned = lay.pinned_conf()
    for key, want in spec_confs(spec).items():
        have = pinned.get(key)
        if have is None or key in _NOT_PINNED or have == want:
            continue
        if key == SHUFFLE_CONF:
            rep.add(
                "CONF_SHUFFLE_PARTITIONS",
                f"the checkpoint pinned {key}={have}, the spec says {want}",
            )
        elif key == PROVIDER_CONF:
            rep.add(
                "CONF_STATE_STORE",
                f"the checkpoint pinned {_short(have)}, the spec says {_short(want)} (state_store: {spec.state_store})",
            )

    retain = int(spec.min_batches_to_retain)
    committed = len(lay.commits)
    # Spark purges once a query has run past the window; before that, fewer is normal.
    if lay.offsets and lay.offsets[0] > 0 and committed < retain:
        rep.add(
            "RETAINED_FEWER",
            f"{committed} committed batches on disk, the spec's min_batches_to_retain is {retain}",
        )
    if len(lay.offsets) > TOO_MANY_FACTOR * retain + TOO_MANY_SLACK:
        rep.add(
            "RETAINED_TOO_MANY",
            f"{len(lay.offsets)} batches on disk for min_batches_to_retain {retain}",
        )
    for s in lay.data_stores():
        if len(s.versions) > retain + STATE_VERSIONS_LIMIT:
            rep.add(
                "STATE_CLEANUP_LAGGING",
                f"state store {s.key} keeps {len(s.versions)} versions for min_batches_to_retain {retain}",
            )
            break

    check_recovery(lay, rep, spec, snapshot_root)


def _short(provider: str) -> str:
    return provider.rsplit(".", 1)[-1]


def _gaps(batches: list[int]) -> list[int]:
    if not batches:
        return []
    have = set(batches)
    return [b for b in range(batches[0], batches[-1] + 1) if b not in have]


def _ranges(batches: list[int]) -> str:
    out: list[str] = []
    start: int | None = None
    prev = -2
    for b in batches:
        if start is None:
            start = prev = b
        elif b == prev + 1:
            prev = b
        else:
            out.append(str(start) if start == prev else f"{start}-{prev}")
            start = prev = b
    if start is not None:
        out.append(str(start) if start == prev else f"{start}-{prev}")
    return ", ".join(out[:8]) + (" ..." if len(out) > 8 else "")
