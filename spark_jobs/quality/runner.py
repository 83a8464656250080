"""Run a job's expectation suite on its Delta output with Great Expectations 1.x.

One run: read the new versions (``incremental``), compute the run-time parameters (freshness
floor, volume bounds, quarantine allowance), validate through a GX checkpoint per batch (the table,
and its ``_quarantine``) whose action updates the Data Docs under ``<output>/_quality/docs``, then
append one row per expectation to ``<output>/_quality/results``.

The GX file context lives under ``<output>/_quality/gx`` (a temporary folder for remote outputs),
never in the repository; suites are rebuilt from ``include/expectations`` on every run, so the
YAML files are the only source of truth.
"""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from spark_jobs.contract import delta, paths
from spark_jobs.contract.durations import describe
from spark_jobs.contract.errors import ExitCode, UserError
from spark_jobs.jobs import definition
from spark_jobs.quality import incremental, local, results
from spark_jobs.quality.suites import (
    P_FRESHNESS_FLOOR,
    P_QUARANTINE_MAX,
    P_VOLUME_MAX,
    P_VOLUME_MIN,
    QUARANTINE,
    TABLE,
    Check,
    Suite,
    load_suite,
)
from spark_jobs.runtime import progress

DATASOURCE = "statekeeper"
DATASOURCE_PANDAS = "statekeeper_pandas"
# Checked against the Delta schema on the pandas engine: pandas dtypes are not Spark's types.
TYPE_CHECK = "expect_column_values_to_be_of_type"
BATCH_DEFINITION = "new_rows"
DOCS_SITE = "local_site"
# GX's Data Docs keep (and their index lists) the last this many runs of each suite; the results
# table keeps every run. Without a bound each run read every stored result to build the index:
# +1.4 s per 1,000 earlier runs, and ~60 KB of files per run, for ever.
DOCS_RUNS = 100
LABEL_KEY = "statekeeper_check"


@dataclass
class QualityResult:
    """What a quality run found. ``exit_code``: 0 pass (warnings allowed), 1 a ``fail`` finding."""

    job: str
    table: str
    run_id: str
    run_time: datetime
    rows: list[results.ResultRow] = field(default_factory=list)
    batches: list[dict[str, Any]] = field(default_factory=list)
    docs: str | None = None
    results_table: str = ""
    note: str = ""
    seconds: float = 0.0
    engine: str = ""

    @property
    def failures(self) -> list[results.ResultRow]:
        return [r for r in self.rows if r.status == "fail"]

    @property
    def warnings(self) -> list[results.ResultRow]:
        return [r for r in self.rows if r.status == "warn"]

    @property
    def status(self) -> str:
        if not self.rows:
            return "up to date"
        return "fail" if self.failures else "warn" if self.warnings else "pass"

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.QUALITY_FAILED if self.failures else ExitCode.OK

    def to_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "table": self.table,
            "run_id": self.run_id,
            "run_time": self.run_time.isoformat(),
            "status": self.status,
            "exit_code": self.exit_code,
            "batches": self.batches,
            "docs": self.docs,
            "results_table": self.results_table,
            "note": self.note,
            "seconds": self.seconds,
            "engine": self.engine,
            "results": [r.to_dict() for r in self.rows],
        }

    def summary(self) -> str:
        """The CLI's short table."""
        lines = [f"quality {self.job}  {self.table}"]
        for b in self.batches:
            lines.append(
                f"  {b['suite']:<26} versions {b['versions']:<9} {b['mode']:<15} rows {b['rows']}"
            )
        if self.rows:
            lines.append(
                f"  {'SEVERITY':<8} {'STATUS':<6} {'CHECK':<46} {'OBSERVED':<28} UNEXPECTED"
            )
            for r in self.rows:
                unexpected = "" if r.unexpected_count is None else str(r.unexpected_count)
                lines.append(f"  {r.severity:<8} {r.status.upper() if r.status != 'pass' else 'pass':<6} "
                             f"{r.check[:46]:<46} {r.observed[:28]:<28} {unexpected}")  # fmt: skip
        counts = f"{len(self.failures)} fail, {len(self.warnings)} warn, {len(self.rows)} checks"
        engine = f" on {self.engine}" if self.engine else ""
        lines.append(f"result: {self.status.upper()} ({counts}) in {self.seconds:.1f}s{engine}")
        if self.note:
            lines.append(f"note: {self.note}")
        if self.rows:
            lines.append(f"results: {self.results_table}")
            lines.append(f"docs: {self.docs}")
        return "\n".join(lines)


def run_quality(
    spec: Any,
    table: str | None = None,
    full: bool = False,
    spark: Any = None,
    engine: str = "auto",
) -> QualityResult:
    """Validate the versions of ``spec``'s output written since the last validated one.

    ``table`` overrides the spec's output URI; ``full`` validates the whole table (backfills).
    ``engine``: ``pandas`` (deltalake + GX's pandas engine, no JVM), ``spark``, or ``auto``:
    pandas up to ``local.max_rows(spec)`` rows to validate, Spark above.
    Raises UserError (exit code 2) when the checks cannot run: no table, no suite, a bad suite.
    """
    started = time.time()
    suite = load_suite(spec)
    uri = table.rstrip("/") if table else spec.output
    if not delta.exists(uri):
        raise UserError(
            f"no Delta table at {uri}; run `python -m spark_jobs run {spec.name}` first or pass --table URI"
        )
    run_time = datetime.now()
    run_id = f"{run_time:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"
    out = QualityResult(spec.name, uri, run_id, run_time, results_table=results.results_uri(uri))
    history = results.History(out.results_table)
    quarantine_uri = paths.join(uri, paths.QUARANTINE_TABLE)
    last_main = history.last_version(uri, suite.name)
    last_quar = history.last_version(quarantine_uri, suite.quarantine_name)
    out.engine = _engine(engine, spec, ((uri, last_main), (quarantine_uri, last_quar)), full)
    if out.engine == "spark" and spark is None:
        from spark_jobs.runtime.session import build_session

        spark = build_session(f"statekeeper-quality-{spec.name}")
    keys, upsert = definition(spec.name).keys, spec.output_mode == "update"
    if out.engine == "pandas":
        main = local.read_slice(uri, last_main, keys, upsert=upsert, full=full)
    else:
        main = incremental.read_slice(spark, uri, last_main, keys, upsert=upsert, full=full)
    quar = _quarantine_slice(
        spark if out.engine == "spark" else None, quarantine_uri, last_quar, full
    )
    if quar is None:
        out.note = f"no quarantine table at {quarantine_uri}: quarantine checks skipped"
    if main is None and (quar is None or quar.mode == "nothing new"):
        last = history.last_version(uri, suite.name)
        out.note = f"nothing written since version {last}: nothing to validate"
        out.seconds = round(time.time() - started, 2)
        return out

    params = _parameters(spec, suite, history, uri, quarantine_uri, full)
    ctx = _context(uri)
    batches: list[tuple[str, list[Check], incremental.Slice]] = []
    if main is not None:
        batches.append((suite.name, suite.for_target(TABLE), main))
    if quar is not None and quar.mode == "nothing new":
        out.note = f"nothing quarantined since version {quar.version_to}: quarantine rate 0"
    elif quar is not None and suite.for_target(QUARANTINE):
        batches.append((suite.quarantine_name, suite.for_target(QUARANTINE), quar))
    for name, checks, sl in batches:
        if not checks:
            continue
        rows = _validate(
            ctx, name, checks, sl, params["values"], spec, run_id, run_time, suite.samples,
            out.engine,
        )  # fmt: skip
        batch_rows = _batch_rows(rows)
        read = params["read"]
        for r in rows:
            r.rows = batch_rows
            if r.check in params["notes"]:
                r.details = json.dumps(
                    {**json.loads(r.details or "{}"), "note": params["notes"][r.check]}
                )
            if r.check.startswith("quarantine: rate") and read and r.observed.isdigit():
                r.observed = f"{r.observed} of {read} read ({int(r.observed) / read:.1%})"
        out.rows.extend(rows)
        out.batches.append(
            {
                "suite": name,
                "uri": sl.uri,
                "versions": sl.versions,
                "mode": sl.mode,
                "rows": batch_rows,
            }
        )
    out.docs = _docs_url(ctx)
    results.append(uri, out.rows)
    out.seconds = round(time.time() - started, 2)
    return out


def _engine(
    engine: str, spec: Any, tables_and_last: tuple[tuple[str, int | None], ...], full: bool
) -> str:
    """``engine`` unless ``auto``: then pandas when the log says the rows to validate are few."""
    if engine not in local.ENGINES:
        raise UserError(f"engine must be one of {', '.join(local.ENGINES)}, not {engine!r}")
    if engine == "spark":
        return engine
    total = 0
    for uri, last in tables_and_last:
        if delta.exists(uri):
            why = local.unreadable(uri)
            if why and engine == "pandas":
                raise UserError(f"engine pandas cannot read {uri} ({why}); use --engine spark")
            if why:
                return "spark"
            if engine == "pandas":
                continue
            n = local.added_rows(uri, last, full)
            if n is None:
                return "spark"
            total += n
    return "pandas" if engine == "pandas" or total <= local.max_rows(spec) else "spark"


def _quarantine_slice(
    spark: Any, uri: str, last: int | None, full: bool
) -> incremental.Slice | None:
    """The quarantine rows to validate; ``spark`` None: read with deltalake (pandas engine)."""
    if not delta.exists(uri):
        return (
            None  # nothing was ever quarantined (the job writes the table on its first bad record)
        )
    if spark is None:
        sl = local.read_slice(uri, last, (), upsert=False, full=full)
    else:
        sl = incremental.read_slice(spark, uri, last, (), upsert=False, full=full)
    if sl is None:  # nothing quarantined since: the rate is 0 for this run
        assert last is not None
        empty = local.empty_quarantine() if spark is None else incremental.empty_quarantine(spark)
        return incremental.Slice(empty, uri, last, last, "nothing new")
    return sl


def _parameters(
    spec, suite: Suite, history, uri: str, quarantine_uri: str, full: bool
) -> dict[str, Any]:
    """The run-time values of the suite's $PARAMETERs, and notes saying where they came from."""
    values: dict[str, Any] = {}
    notes: dict[str, str] = {}
    last = progress.last_progress(spec.checkpoint) if _readable(spec.checkpoint) else None
    watermark = _watermark_epoch(last)
    sla = spec.quality.freshness_sla
    if sla is not None:
        ref = watermark if watermark is not None else time.time()
        # Spark hands timestamps to Python as naive local datetimes; compare like with like.
        values[P_FRESHNESS_FLOOR] = datetime.fromtimestamp(ref - sla)
        source = "the job's watermark" if watermark is not None else "the run time"
        for c in suite.checks:
            if c.macro == "freshness":
                notes[c.label] = (
                    f"floor {values[P_FRESHNESS_FLOOR]:%Y-%m-%d %H:%M:%S} = {source} - {describe(sla)}"
                )
    trailing = history.trailing_rows(uri, suite.name, int(suite.volume["trailing_runs"]))
    lo, hi = results.volume_bounds(trailing, suite.volume)
    values[P_VOLUME_MIN], values[P_VOLUME_MAX] = lo, hi
    for c in suite.checks:
        if c.macro == "volume":
            notes[c.label] = (
                f"trailing runs {trailing}; bounds {lo}..{hi if hi is not None else 'none yet'}"
            )
    rate = spec.quality.max_quarantine_rate
    values[P_QUARANTINE_MAX] = None
    read = None
    if rate is not None:
        # Records read since this table's last quality run (either suite), i.e. since the
        # quarantine rows already validated.
        times = [
            history.last_run_time(u, n)
            for u, n in ((uri, suite.name), (quarantine_uri, suite.quarantine_name))
        ]
        since = None if full else max((t for t in times if t is not None), default=None)
        read = _records_read(spec.checkpoint, since)
        if read is None:
            note = (
                f"records read unknown: no progress log under {spec.checkpoint}; rate not bounded"
            )
        else:
            values[P_QUARANTINE_MAX] = int(math.floor(float(rate) * read))
            note = f"allowed {values[P_QUARANTINE_MAX]} = {float(rate):g} x {read} records read (progress.jsonl)"
        for c in suite.checks:
            if c.macro == "quarantine_rate" and c.label.startswith("quarantine: rate"):
                notes[c.label] = note
    return {"values": values, "notes": notes, "read": read}


def _readable(checkpoint: str) -> bool:
    local = paths.local_path(checkpoint)
    return local is None or local.exists()


def _watermark_epoch(record: dict[str, Any] | None) -> float | None:
    wm = ((record or {}).get("eventTime") or {}).get("watermark")
    if not wm:
        return None
    epoch = datetime.fromisoformat(wm.replace("Z", "+00:00")).timestamp()
    return epoch if epoch > 0 else None


def _records_read(checkpoint: str, since: datetime | None) -> int | None:
    """Records the job's query read (numInputRows) since ``since`` (None: ever); None if unknown."""
    if not _readable(checkpoint):
        return None
    records = progress.read_progress(checkpoint)
    if not records:
        return None
    cutoff = since.timestamp() if since is not None else None
    total = 0
    for rec in records:
        logged = float((rec.get("statekeeper") or {}).get("logged_at") or 0)
        if cutoff is None or logged > cutoff:
            total += int(rec.get("numInputRows") or 0)
    return total


def _context(uri: str) -> Any:
    """A GX file context under ``<output>/_quality/gx``, Data Docs under ``<output>/_quality/docs``."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    for name in ("great_expectations", "py4j"):
        logging.getLogger(name).setLevel(logging.ERROR)
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    local = paths.local_path(results.quality_dir(uri))
    root = local if local is not None else Path(tempfile.mkdtemp(prefix="statekeeper-gx-"))
    root.mkdir(parents=True, exist_ok=True)
    ctx = gx.get_context(mode="file", project_root_dir=str(root))
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    docs = root / "docs"
    site = {
        "class_name": "SiteBuilder",
        "show_how_to_buttons": False,
        "store_backend": {
            "class_name": "TupleFilesystemStoreBackend",
            "base_directory": f"{docs}/",
        },
        "site_index_builder": {
            "class_name": "DefaultSiteIndexBuilder",
            "validation_results_limit": DOCS_RUNS,
        },
    }
    # GX's DataDocsSiteConfigTypedDict (incomplete, says its own note) lacks show_how_to_buttons,
    # which SiteBuilder takes: hence the two ignores.
    if (ctx.config.data_docs_sites or {}).get(DOCS_SITE) != site:
        if DOCS_SITE in (ctx.config.data_docs_sites or {}):
            ctx.update_data_docs_site(DOCS_SITE, site)  # type: ignore[arg-type]
        else:
            ctx.add_data_docs_site(DOCS_SITE, site)  # type: ignore[arg-type]
    ctx.variables.save()
    return ctx


def _docs_url(ctx: Any) -> str | None:
    urls = ctx.get_docs_sites_urls(site_name=DOCS_SITE)
    return urls[0]["site_url"] if urls else None


def _expectation(check: Check) -> Any:
    import great_expectations.expectations as gxe
    from great_expectations.compatibility import pydantic

    cls_name = "".join(part.capitalize() for part in check.expectation.split("_"))
    cls = getattr(gxe, cls_name, None)
    if cls is None:
        raise UserError(f"check {check.label!r}: Great Expectations has no {check.expectation}")
    try:
        return cls(
            **check.kwargs,
            severity=check.gx_severity,
            notes=check.why or None,
            meta={LABEL_KEY: check.label, "severity": check.severity},
        )
    except (pydantic.ValidationError, TypeError, ValueError) as exc:
        first = str(exc).splitlines()
        raise UserError(
            f"check {check.label!r}: bad arguments for {check.expectation}: {' '.join(first[:3])}"
        ) from exc


def _validate(
    ctx, name, checks, sl, values, spec, run_id, run_time, samples: int = 0, engine: str = "spark"
) -> list[results.ResultRow]:
    """One GX checkpoint run of ``checks`` on the slice's DataFrame (Spark: cached, one scan;
    pandas: type checks read from the Delta schema, the rest by GX's pandas engine)."""
    import great_expectations as gx
    from great_expectations.core.run_identifier import RunIdentifier

    all_checks, typed = list(checks), []
    if engine == "pandas":
        typed = _type_rows(checks, sl, spec, run_id, run_time, name)
        checks = [c for c in checks if c.expectation != TYPE_CHECK]
        source = ctx.data_sources.add_or_update_pandas(name=DATASOURCE_PANDAS)
    else:
        # persist=False: this module caches the batch itself and releases it after the run
        # (GX's own persist is never undone: cached tables pile up in a long-lived session).
        source = ctx.data_sources.add_or_update_spark(name=DATASOURCE, persist=False)
    try:
        asset = source.get_asset(name)
    except LookupError:
        asset = source.add_dataframe_asset(name=name)
    try:
        batch_def = asset.get_batch_definition(BATCH_DEFINITION)
    except KeyError:
        batch_def = asset.add_batch_definition_whole_dataframe(BATCH_DEFINITION)
    suite = gx.ExpectationSuite(name=name, expectations=[_expectation(c) for c in checks])
    suite = ctx.suites.add_or_update(suite)
    vd = ctx.validation_definitions.add_or_update(
        gx.ValidationDefinition(name=name, data=batch_def, suite=suite)
    )
    checkpoint = ctx.checkpoints.add_or_update(
        gx.Checkpoint(
            name=name,
            validation_definitions=[vd],
            actions=[
                gx.checkpoint.UpdateDataDocsAction(name="update_data_docs", site_names=[DOCS_SITE])
            ],
            # BASIC: unexpected counts, computed in bundled aggregates. A sample of unexpected
            # values costs one more Spark job per check, so it is opt-in (suite key `samples`).
            result_format={"result_format": "BASIC", "partial_unexpected_count": samples},
        )
    )
    # Before the run, so the docs it builds already drop the pages of the results let go.
    gone = _prune_results(ctx, name, DOCS_RUNS - 1)
    if engine == "pandas":
        from spark_jobs.quality.local import hashable_arrays

        df = hashable_arrays(sl.df)
    else:
        from pyspark import StorageLevel

        df = sl.df.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        result = checkpoint.run(
            batch_parameters={"dataframe": df},
            expectation_parameters=dict(values),  # None: no bound (yet)
            run_id=RunIdentifier(run_name=run_id, run_time=run_time),
        )
    finally:
        if engine != "pandas":
            df.unpersist()
    _drop_folders(ctx, gone)  # after the run: its Data Docs build removed their pages
    by_label = {c.label: c for c in checks}
    rows: list[results.ResultRow] = list(typed)
    for vr in result.run_results.values():
        for r in vr.results:
            cfg = r.expectation_config
            label = (cfg.meta or {}).get(LABEL_KEY, cfg.type)
            check = by_label.get(label)
            severity = check.severity if check else "fail"
            res = r.result or {}
            raised = bool((r.exception_info or {}).get("raised_exception"))
            observed = res.get("observed_value")
            details: dict[str, Any] = {}
            if raised:
                msg = str(
                    (r.exception_info or {}).get("exception_message") or "error"
                ).splitlines()[0]
                observed, details["error"] = f"error: {msg}", msg
            if res.get("partial_unexpected_list"):
                details["sample_unexpected"] = [str(x) for x in res["partial_unexpected_list"][:5]]
            rows.append(
                results.ResultRow(
                    run_id=run_id, run_time=run_time, job=spec.name, table_uri=sl.uri, suite=name,
                    version_from=sl.version_from, version_to=sl.version_to, mode=sl.mode,
                    check=label, expectation=cfg.type, column_name=check.column if check else None,
                    severity=severity, success=bool(r.success),
                    status=results.status_of(bool(r.success), severity),
                    observed=results.format_observed(observed),
                    unexpected_count=_int(res.get("unexpected_count")),
                    element_count=_int(res.get("element_count")),
                    rows=None, details=json.dumps(details, default=str) if details else "",
                )
            )  # fmt: skip
    order = {c.label: i for i, c in enumerate(all_checks)}
    rows.sort(key=lambda x: order.get(x.check, len(order)))
    return rows


def _prune_results(ctx: Any, suite: str, keep: int) -> list[Any]:
    """Keep the newest ``keep`` of ``suite``'s validation results in GX's store; the keys let go.
    GX removes the Data Docs page of a result that is gone at its next build
    (``skip_and_clean_missing``)."""
    store = ctx.validation_results_store
    # A key's run time as stored ("%Y%m%dT%H%M%S.%fZ", UTC) sorts as time does.
    keys = sorted(
        (k for k in store.list_keys() if k.expectation_suite_identifier.name == suite),
        key=lambda k: k.run_id.to_tuple()[::-1],
    )
    gone = keys[: max(len(keys) - keep, 0)]
    for key in gone:
        try:
            store.remove_key(key)
        except FileNotFoundError:
            pass  # another run on this table let it go first
    return gone


def _drop_folders(ctx: Any, keys: list[Any]) -> None:
    """The run folders of ``keys`` (``<suite>/<run name>/<run time>/``) in the results store and
    the Data Docs, once empty. GX's file stores leave them behind (their ``rrmdir`` tests a
    generator's truth, so it never removes one). Only old runs' folders: never one a concurrent
    run is writing into."""
    # The context is always on local disk (a temporary folder for remote outputs).
    site = (ctx.config.data_docs_sites or {}).get(DOCS_SITE) or {}
    roots = [Path(ctx.validation_results_store.store_backend.full_base_directory)]
    if docs := site.get("store_backend", {}).get("base_directory"):
        roots.append(Path(docs) / "validations")
    for root in roots:
        for key in keys:
            parts = key.to_tuple()[:-1]  # (*suite, run name, run time): the batch is the file
            for depth in (len(parts), len(parts) - 1):
                try:
                    root.joinpath(*parts[:depth]).rmdir()
                except OSError:
                    break  # not empty (or gone): leave it and its parent


def _type_rows(checks, sl, spec, run_id, run_time, name) -> list[results.ResultRow]:
    """Column type checks against the Delta schema, reported as Spark's engine reports them."""
    types = local.column_types(sl.uri)
    rows = []
    for c in checks:
        if c.expectation != TYPE_CHECK:
            continue
        observed = types.get(str(c.kwargs["column"]))
        ok = observed == c.kwargs["type_"]
        rows.append(results.ResultRow(
            run_id=run_id, run_time=run_time, job=spec.name, table_uri=sl.uri, suite=name,
            version_from=sl.version_from, version_to=sl.version_to, mode=sl.mode, check=c.label,
            expectation=c.expectation, column_name=c.column, severity=c.severity, success=ok,
            status=results.status_of(ok, c.severity), observed=results.format_observed(observed),
            unexpected_count=None, element_count=None, rows=None, details="",
        ))  # fmt: skip
    return rows


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _batch_rows(rows: list[results.ResultRow]) -> int | None:
    """The batch's row count, from a row-count expectation or the column checks' element counts."""
    for r in rows:
        if r.expectation == "expect_table_row_count_to_be_between" and r.observed.isdigit():
            return int(r.observed)
    counts = [r.element_count for r in rows if r.element_count is not None]
    return max(counts) if counts else None
