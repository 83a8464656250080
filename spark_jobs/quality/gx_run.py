"""One Great Expectations 1.x checkpoint run per suite and batch, and its results as rows.

The GX file context lives under ``<output>/_quality/gx`` (a temporary folder for remote outputs),
never in the repository; suites are rebuilt from ``include/expectations`` on every run, so the
YAML files are the only source of truth. Each checkpoint's action updates the Data Docs under
``<output>/_quality/docs``, which keep the last :data:`DOCS_RUNS` runs of each suite.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from spark_jobs.contract import paths
from spark_jobs.contract.errors import UserError
from spark_jobs.quality import results
from spark_jobs.quality.engines import Engine
from spark_jobs.quality.incremental import Slice
from spark_jobs.quality.suites import Check

BATCH_DEFINITION = "new_rows"
DOCS_SITE = "local_site"
# GX's Data Docs keep (and their index lists) the last this many runs of each suite; the results
# table keeps every run. Without a bound each run read every stored result to build the index:
# +1.4 s per 1,000 earlier runs, and ~60 KB of files per run, for ever.
DOCS_RUNS = 100
LABEL_KEY = "statekeeper_check"


def context(uri: str) -> Any:
    """A GX file context under ``<output>/_quality/gx``, Data Docs under ``<output>/_quality/docs``."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    for name in ("great_expectations", "py4j"):
        logging.getLogger(name).setLevel(logging.ERROR)
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    local = paths.local_path(paths.quality_dir(uri))
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


def run_name(run_time: datetime, suffix: str | None = None) -> str:
    """A run's id, which is also its GX run name: ``20261126T162147_7754ad``.

    An underscore, not a hyphen, before the random suffix: GX's Data Docs page renderer parses
    the run name as a date, and dateutil reads ``...T162147-7754ad`` as a UTC offset of -77:54
    (``ad`` the era), which fails as it is compared; GX logs it and leaves the run without a
    page (``test_gx_run_names``)."""
    return f"{run_time:%Y%m%dT%H%M%S}_{suffix or uuid.uuid4().hex[:6]}"


def docs_url(ctx: Any) -> str | None:
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


def validate(
    ctx: Any,
    engine: Engine,
    name: str,
    checks: list[Check],
    sl: Slice,
    values: dict[str, Any],
    stamp: dict[str, Any],
    samples: int = 0,
    docs_errors: list[str] | None = None,
) -> list[results.ResultRow]:
    """One GX checkpoint run of ``checks`` on the slice; ``stamp`` holds the run's id, time and
    job, written on every row. The engine answers the checks it owns (pandas: column types from
    the Delta schema) and hands GX the rest. GX logs a Data Docs page it failed to render and
    goes on: each such error's first line is added to ``docs_errors``."""
    from great_expectations.core.run_identifier import RunIdentifier

    def row(check: Check, success: bool, observed: Any, **extra: Any) -> results.ResultRow:
        return results.ResultRow(
            **stamp,
            table_uri=sl.uri,
            suite=name,
            version_from=sl.version_from,
            version_to=sl.version_to,
            mode=sl.mode,
            check=check.label,
            expectation=extra.pop("expectation", check.expectation),
            column_name=check.column,
            severity=check.severity,
            success=success,
            status=results.status_of(success, check.severity),
            observed=results.format_observed(observed),
            rows=None,
            **{"unexpected_count": None, "element_count": None, "details": "", **extra},
        )

    gx_checks = engine.gx_checks(checks)
    checkpoint = _checkpoint(ctx, engine, name, gx_checks, samples)
    # Before the run, so the docs it builds already drop the pages of the results let go.
    gone = _prune_results(ctx, name, DOCS_RUNS - 1)
    with engine.frame(sl) as df, _logged_errors("great_expectations.render", docs_errors):
        result = checkpoint.run(
            batch_parameters={"dataframe": df},
            expectation_parameters=dict(values),  # None: no bound (yet)
            run_id=RunIdentifier(run_name=stamp["run_id"], run_time=stamp["run_time"]),
        )
    _drop_folders(ctx, gone)  # after the run: its Data Docs build removed their pages
    rows = engine.own_rows(checks, sl, row) + _rows(result, gx_checks, row)
    order = {c.label: i for i, c in enumerate(checks)}
    rows.sort(key=lambda x: order.get(x.check, len(order)))
    return rows


@contextmanager
def _logged_errors(logger: str, into: list[str] | None) -> Iterator[None]:
    """The first line of each error ``logger`` (and its children) logs meanwhile, into ``into``."""
    if into is None:
        yield
        return
    kept: list[str] = into

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            text = " ".join(record.getMessage().split())
            # GX's message is a paragraph of advice, then the exception: keep the exception.
            cause = re.search(r'(\w+(?:Error|Exception)): "?(.{1,200}?)"?\.? +Traceback', text)
            kept.append(f"{cause.group(1)}: {cause.group(2)}" if cause else text[:200])

    handler = Keep(level=logging.ERROR)
    log = logging.getLogger(logger)
    log.addHandler(handler)
    try:
        yield
    finally:
        log.removeHandler(handler)


def _checkpoint(ctx: Any, engine: Engine, name: str, checks: list[Check], samples: int) -> Any:
    """The GX checkpoint of suite ``name`` on a whole-dataframe batch of ``engine``'s source."""
    import great_expectations as gx

    source = engine.data_source(ctx)
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
    return ctx.checkpoints.add_or_update(
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


def _rows(result: Any, checks: list[Check], row: Any) -> list[results.ResultRow]:
    """One row per expectation GX ran; an expectation that raised is a failed check with the
    error's first line as its observed value."""
    by_label = {c.label: c for c in checks}
    rows = []
    for vr in result.run_results.values():
        for r in vr.results:
            cfg = r.expectation_config
            label = (cfg.meta or {}).get(LABEL_KEY, cfg.type)
            check = by_label.get(label) or Check(label, cfg.type, {}, "fail")  # not in the suite
            res = r.result or {}
            observed = res.get("observed_value")
            details: dict[str, Any] = {}
            if (r.exception_info or {}).get("raised_exception"):
                msg = str((r.exception_info or {}).get("exception_message") or "error")
                msg = msg.splitlines()[0]
                observed, details["error"] = f"error: {msg}", msg
            if res.get("partial_unexpected_list"):
                details["sample_unexpected"] = [str(x) for x in res["partial_unexpected_list"][:5]]
            rows.append(
                row(
                    check,
                    bool(r.success),
                    observed,
                    expectation=cfg.type,
                    unexpected_count=_int(res.get("unexpected_count")),
                    element_count=_int(res.get("element_count")),
                    details=json.dumps(details, default=str) if details else "",
                )
            )
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


def _int(value: Any) -> int | None:
    return None if value is None else int(value)
