"""Run a job's expectation suite on its Delta output with Great Expectations 1.x.

One run: read the new versions (``incremental`` / ``local``, through the chosen engine), compute
the run-time parameters (``parameters``), validate each batch (the table, and its
``_quarantine``) through a GX checkpoint (``gx_run``), then append one row per expectation to
``<output>/_quality/results``.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any

from spark_jobs.contract import delta, paths
from spark_jobs.contract.errors import UserError
from spark_jobs.jobs import definition
from spark_jobs.quality import engines, gx_run, incremental, parameters, results
from spark_jobs.quality.incremental import Slice
from spark_jobs.quality.outcome import QualityResult
from spark_jobs.quality.suites import QUARANTINE, TABLE, Check, Suite, load_suite

__all__ = ["QualityResult", "run_quality"]


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
            f"no Delta table at {uri}; run `python -m spark_jobs run {spec.name}` first or pass --output URI"
        )
    run_time = datetime.now()
    run_id = gx_run.run_name(run_time)
    out = QualityResult(spec.name, uri, run_id, run_time, results_table=paths.results_uri(uri))
    history = results.History(out.results_table)
    quarantine_uri = paths.join(uri, paths.QUARANTINE_TABLE)
    last_main, last_quar = (
        _last_validated(out, history, u, name)
        for u, name in ((uri, suite.name), (quarantine_uri, suite.quarantine_name))
    )
    expired = None if full else _past_retention(((uri, last_main), (quarantine_uri, last_quar)))
    if expired:
        full = True
        out.add_note(f"{expired}: validated the whole table and its quarantine")
    out.engine = engines.choose(engine, spec, ((uri, last_main), (quarantine_uri, last_quar)), full)
    eng = engines.make(out.engine, spark, spec.name)
    keys, upsert = definition(spec.name).keys, spec.output_mode == "update"
    main = eng.read_slice(uri, last_main, keys, upsert, full)
    quar = engines.quarantine_slice(eng, quarantine_uri, last_quar, full)
    for sl in (main, quar) if expired else ():
        if sl is not None:
            sl.mode = incremental.PAST_RETENTION
    if quar is None:
        out.add_note(f"no quarantine table at {quarantine_uri}: quarantine checks skipped")
    if main is None and (quar is None or quar.mode == "nothing new"):
        out.note = f"nothing written since version {last_main}: nothing to validate"
        out.seconds = round(time.time() - started, 2)
        return out
    if quar is not None and quar.mode == "nothing new":
        out.add_note(f"nothing quarantined since version {quar.version_to}: quarantine rate 0")
    params = parameters.compute(spec, suite, history, uri, quarantine_uri, full)
    ctx = gx_run.context(uri)
    stamp = {"run_id": run_id, "run_time": run_time, "job": spec.name}
    docs_errors: list[str] = []
    for name, checks, sl in _batches(suite, main, quar):
        rows = gx_run.validate(
            ctx, eng, name, checks, sl, params["values"], stamp, suite.samples, docs_errors
        )
        _annotate(rows, params)
        out.rows.extend(rows)
        out.batches.append(
            {
                "suite": name,
                "uri": sl.uri,
                "versions": sl.versions,
                "mode": sl.mode,
                "rows": rows[0].rows if rows else None,
            }
        )
    out.docs = gx_run.docs_url(ctx)
    if docs_errors:  # the checks ran and their rows are kept; only a page is missing
        out.add_note(f"Data Docs incomplete, GX could not render: {'; '.join(docs_errors)}")
    results.append(uri, out.rows)
    out.seconds = round(time.time() - started, 2)
    return out


def _last_validated(
    out: QualityResult, history: results.History, uri: str, suite: str
) -> int | None:
    """The newest version of ``uri`` that ``suite`` validated; None (validate it whole, noted in
    ``out``) when the table was made anew since (:func:`incremental.made_anew`)."""
    if why := incremental.made_anew(uri, history.last_run_time(uri, suite)):
        out.add_note(why)
        return None
    return history.last_version(uri, suite)


def _past_retention(tables: tuple[tuple[str, int | None], ...]) -> str | None:
    """Why some table's versions since its last validated one cannot be read any more, or None."""
    for uri, last in tables:
        if (
            last is not None
            and delta.exists(uri)
            and (why := incremental.past_retention(uri, last))
        ):
            return why
    return None


def _batches(
    suite: Suite, main: Slice | None, quar: Slice | None
) -> list[tuple[str, list[Check], Slice]]:
    """(suite name, its checks, the slice) for each batch this run validates: the table's new
    rows, and the quarantine's unless nothing was quarantined since (its rate is then 0)."""
    batches = []
    if main is not None and suite.for_target(TABLE):
        batches.append((suite.name, suite.for_target(TABLE), main))
    if quar is not None and quar.mode != "nothing new" and suite.for_target(QUARANTINE):
        batches.append((suite.quarantine_name, suite.for_target(QUARANTINE), quar))
    return batches


def _annotate(rows: list[results.ResultRow], params: dict[str, Any]) -> None:
    """The batch's row count on each row, the parameters' notes in the details, and the
    quarantine rate's count put against the records read."""
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


def _batch_rows(rows: list[results.ResultRow]) -> int | None:
    """The batch's row count, from a row-count expectation or the column checks' element counts."""
    for r in rows:
        if r.expectation == "expect_table_row_count_to_be_between" and r.observed.isdigit():
            return int(r.observed)
    counts = [r.element_count for r in rows if r.element_count is not None]
    return max(counts) if counts else None
