"""Backfill planning: check the params, name the isolated checkpoint and staged table, and say
whether this exact backfill was published already. Files only; nothing is written here.

The plan's ``key`` is a hash of (job, input folder, its file names and sizes, mode, the job's
state fingerprint; for a ``kafka://`` input, the topic and its end offsets when planned): the same backfill gets the same key, its staged table and checkpoint are
reused, and ``publish`` records the key in the live table's ledger (read here through
``spark_jobs.contract.backfill``), so publishing twice is a no-op, also after Delta's log
retention removed the commit's file. A mode that cannot be correct for the job
(``spark_jobs.contract.backfill.REFUSED``) fails the plan, and so does an ``append`` of a file
the live job has read (``publish`` checks it again, under the job's lock).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from spark_jobs.contract.paths import LANDING_GLOB, hidden_name, landing_file, resolve


class BadBackfillParams(AirflowFailException):
    """Params that cannot work: the run stops before anything is submitted (no retries)."""


def _listing(folder: Path) -> list[tuple[str, int]]:
    return sorted(
        (str(p.relative_to(folder)), p.stat().st_size)
        for p in folder.rglob(LANDING_GLOB)
        if p.is_file()
        and landing_file(p.name)
        and not any(hidden_name(part) for part in p.relative_to(folder).parent.parts)
    )


def plan_backfill(params: dict[str, Any], data_dir: Path) -> dict[str, Any]:
    """The plan for ``params`` or a ``BadBackfillParams`` saying, in one line, what to fix."""
    from spark_jobs.contract.backfill import refusal
    from spark_jobs.contract.errors import UserError
    from spark_jobs.contract.spec import load_spec

    job = str(params.get("job") or "")
    try:
        # The live table: the output param (resolved by the spec, like every path) or the spec's.
        spec = load_spec(job).with_overrides(output=str(params.get("output") or "") or None)
    except UserError as exc:
        raise BadBackfillParams(f"job: {exc}") from None
    mode = str(params.get("mode") or "")
    reason = refusal(job, mode)
    if reason:
        raise BadBackfillParams(f"mode: {reason}")
    raw_input = str(params.get("input") or "").strip()
    if not raw_input:
        raise BadBackfillParams("input: give the folder of JSON-lines files to backfill from")
    if raw_input.startswith("kafka://"):
        return _plan_kafka(params, job, spec, mode, raw_input, data_dir)
    folder = Path(resolve(raw_input))
    if not folder.is_dir():
        raise BadBackfillParams(f"input folder {folder} does not exist or is not a folder")
    if len(spec.kinds) > 1:
        missing = [k for k in spec.kinds if not (folder / k).is_dir()]
        if missing:
            raise BadBackfillParams(
                f"job {job} reads {', '.join(spec.kinds)}: input {folder} needs one sub-folder per "
                f"kind; missing {', '.join(missing)}"
            )
    listing = _listing(folder)
    if not listing:
        raise BadBackfillParams(f"input folder {folder} holds no {LANDING_GLOB} files to backfill")
    if Path(spec.output).resolve() == folder.resolve():
        raise BadBackfillParams("output and input are the same folder")
    if mode == "append":
        _refuse_files_read(spec, folder, listing)
    return _plan(params, job, spec, mode, str(folder), listing, len(listing), data_dir)


def _refuse_files_read(spec: Any, folder: Path, listing: list[tuple[str, int]]) -> None:
    """append: a file the live job read, at its path or copied (a link, the same bytes, a restore
    from an archive: :func:`spark_jobs.checkpoints.source_files.read_before`), has its rows in
    the live table already; appending them again would count them twice."""
    from spark_jobs.checkpoints.source_files import file_key, read_before
    from spark_jobs.contract.binding import bound_inputs

    several = len(spec.kinds) > 1  # one sub-folder per kind
    files = {
        file_key(str(folder / name)): name.split("/", 1)[0] if several else spec.kinds[0]
        for name, _size in listing
    }
    both = read_before(spec.checkpoint, bound_inputs(spec.checkpoint) or dict(spec.inputs), files)
    if both:
        shown = ", ".join(Path(f).name for f in both[:3]) + (" ..." if len(both) > 3 else "")
        raise BadBackfillParams(
            f"mode: append would count twice the rows of {len(both)} file(s) of {folder} the live "
            f"job already read, there or as copies of what it read ({shown}); backfill only "
            "files it never read, or use mode=replace"
        )


def _kafka_ends(spec: Any, uri: str) -> dict[str, int]:
    """The topic's end offsets per partition now: what this backfill reads up to (records
    arriving later are read too, and do not change the key)."""
    from spark_jobs.contract.errors import UserError
    from spark_jobs.contract.kafka import check_cluster, end_offsets, parse

    try:
        target = parse(uri)
        # Before anything dials it: only the spec's own cluster (any topic on it).
        check_cluster(uri, spec.kafka_clusters, spec.name)
    except UserError as exc:
        raise BadBackfillParams(f"input: {exc}") from None
    if spec.kafka_options:
        raise BadBackfillParams(
            "input: a backfill from a Kafka cluster with kafka_options (security) is planned "
            "from the command line: python -m spark_jobs run JOB --input kafka://... "
            "--output STAGED --checkpoint NEW"
        )
    try:
        ends = end_offsets(target, timeout=10)
    except UserError as exc:
        raise BadBackfillParams(f"input: {exc}") from None
    if not ends:
        raise BadBackfillParams(f"input: topic {target} does not exist")
    return ends


def _plan_kafka(
    params: dict[str, Any], job: str, spec: Any, mode: str, uri: str, data_dir: Path
) -> dict[str, Any]:
    if len(spec.kinds) > 1:
        raise BadBackfillParams(
            f"job {job} reads {', '.join(spec.kinds)}: a Kafka backfill needs one topic per input; "
            "backfill it from a folder with one sub-folder per kind"
        )
    ends = _kafka_ends(spec, uri)
    if not any(ends.values()):
        raise BadBackfillParams(f"input: topic {uri} holds no records to backfill")
    listing = sorted(ends.items())
    return _plan(params, job, spec, mode, uri, listing, sum(ends.values()), data_dir)


def _plan(
    params: dict[str, Any],
    job: str,
    spec: Any,
    mode: str,
    source: str,
    listing: list[tuple[str, int]],
    count: int,
    data_dir: Path,
) -> dict[str, Any]:
    from spark_jobs.contract.backfill import published

    raw = json.dumps([job, source, listing, mode, spec.fingerprint_hash()], sort_keys=True)
    key = hashlib.sha256(raw.encode()).hexdigest()[:16]
    root = data_dir / "backfill" / job / key
    live = spec.output
    done = published(live, key)
    return {
        "job": job,
        "mode": mode,
        "dry_run": bool(params.get("dry_run")),
        "input": source,
        "files": count,  # files of a folder, records of a topic
        "key": key,
        "staged_table": str(root / "table"),
        "staged_checkpoint": str(root / "checkpoint"),
        "live_table": live,
        "published": done is not None,
        "published_in_version": None if done is None else done.get("version"),
    }


class BackfillPlanOperator(BaseOperator):
    """Validate a backfill's params and plan it; skip the rest when it is already published."""

    ui_color = "#fff3cd"

    def execute(self, context: Any) -> dict[str, Any]:
        from spark_jobs.contract import paths
        from statekeeper.params import check_path_params

        check_path_params(context)
        plan = plan_backfill(dict(context["params"]), paths.data_dir())
        self.log.info("backfill plan: %s", json.dumps(plan, indent=1))
        if plan["published"]:
            context["ti"].xcom_push(key="return_value", value=plan)
            raise AirflowSkipException(
                f"backfill {plan['key']} is already published in version "
                f"{plan['published_in_version']} of {plan['live_table']}; nothing to do"
            )
        return plan
