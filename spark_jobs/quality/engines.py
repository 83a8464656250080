"""The two engines a quality run can validate on, as small classes instead of ``if engine ==``
branches: each reads the rows to validate, hands GX its data source and frame, and says which
checks it answers itself.

- :class:`PandasEngine`: deltalake + GX's pandas engine, no JVM (the default for small
  increments). pandas dtypes are not Spark's types, so column type checks are answered from the
  Delta schema instead of by GX.
- :class:`SparkEngine`: a Spark session and GX's Spark engine (large increments, or tables
  deltalake cannot read).

:func:`choose` picks one for ``auto`` from the Delta log: pandas when the rows to validate are
few.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from spark_jobs.contract import delta
from spark_jobs.contract.errors import UserError
from spark_jobs.quality import incremental, local, results
from spark_jobs.quality.incremental import Slice
from spark_jobs.quality.suites import Check

DATASOURCE = "statekeeper"
DATASOURCE_PANDAS = "statekeeper_pandas"
# Checked against the Delta schema on the pandas engine: pandas dtypes are not Spark's types.
TYPE_CHECK = "expect_column_values_to_be_of_type"


class SparkEngine:
    name = "spark"

    def __init__(self, spark: Any) -> None:
        self.spark = spark

    def read_slice(
        self, uri: str, last: int | None, keys: tuple[str, ...], upsert: bool, full: bool
    ) -> Slice | None:
        return incremental.read_slice(self.spark, uri, last, keys, upsert=upsert, full=full)

    def empty_quarantine(self) -> Any:
        return incremental.empty_quarantine(self.spark)

    def data_source(self, ctx: Any) -> Any:
        # persist=False: the engine caches the batch itself and releases it after the run (GX's
        # own persist is never undone: cached tables pile up in a long-lived session).
        return ctx.data_sources.add_or_update_spark(name=DATASOURCE, persist=False)

    def own_rows(self, checks: list[Check], sl: Slice, row: Any) -> list[results.ResultRow]:
        """Rows for the checks this engine answers without GX: none."""
        return []

    def gx_checks(self, checks: list[Check]) -> list[Check]:
        return list(checks)

    @contextmanager
    def frame(self, sl: Slice) -> Iterator[Any]:
        """The slice's DataFrame, cached for the run's one scan and released after it."""
        from pyspark import StorageLevel

        df = sl.df.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            yield df
        finally:
            df.unpersist()


class PandasEngine:
    name = "pandas"

    def read_slice(
        self, uri: str, last: int | None, keys: tuple[str, ...], upsert: bool, full: bool
    ) -> Slice | None:
        return local.read_slice(uri, last, keys, upsert=upsert, full=full)

    def empty_quarantine(self) -> Any:
        return local.empty_quarantine()

    def data_source(self, ctx: Any) -> Any:
        return ctx.data_sources.add_or_update_pandas(name=DATASOURCE_PANDAS)

    def own_rows(self, checks: list[Check], sl: Slice, row: Any) -> list[results.ResultRow]:
        """Column type checks answered from the Delta schema, reported as Spark's engine reports
        them; ``row(check, success, observed)`` makes a result row."""
        types = local.column_types(sl.uri)
        out = []
        for c in checks:
            if c.expectation == TYPE_CHECK:
                observed = types.get(str(c.kwargs["column"]))
                out.append(row(c, observed == c.kwargs["type_"], observed))
        return out

    def gx_checks(self, checks: list[Check]) -> list[Check]:
        return [c for c in checks if c.expectation != TYPE_CHECK]

    @contextmanager
    def frame(self, sl: Slice) -> Iterator[Any]:
        # Array cells as tuples: GX fingerprints a hashable frame instead of pickling it whole.
        yield local.hashable_arrays(sl.df)


Engine = SparkEngine | PandasEngine


def choose(
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


def make(name: str, spark: Any, job: str) -> Engine:
    """The engine called ``name``; the Spark one starts a session when none is given."""
    if name == "pandas":
        return PandasEngine()
    if spark is None:
        from spark_jobs.runtime.session import build_session

        spark = build_session(f"statekeeper-quality-{job}")
    return SparkEngine(spark)


def quarantine_slice(engine: Engine, uri: str, last: int | None, full: bool) -> Slice | None:
    """The quarantine rows to validate; None when nothing was ever quarantined (the job writes
    the table on its first bad record)."""
    if not delta.exists(uri):
        return None
    sl = engine.read_slice(uri, last, (), False, full)
    if sl is None:  # nothing quarantined since: the rate is 0 for this run
        assert last is not None
        return Slice(engine.empty_quarantine(), uri, last, last, "nothing new")
    return sl
