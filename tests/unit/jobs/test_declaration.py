"""Job declarations (no JVM): every spec has one and fits it, parameters are checked against it
with one-line errors, the registry finds jobs only where it should, and the generic executor
names no job."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import pytest
from fresh_imports import packages_after

from spark_jobs.contract.errors import UserError
from spark_jobs.contract.spec import load_all, load_spec
from spark_jobs.io.tables import column_names, ddl_fields
from spark_jobs.jobs import EXTRA_MODULES_ENV, definition, definitions
from spark_jobs.jobs.declaration import JobDef

pytestmark = pytest.mark.unit

JOBS_DIR = Path(__file__).resolve().parents[3] / "spark_jobs" / "jobs"


def test_every_spec_has_a_declaration_it_fits():
    specs = load_all()
    assert {s.name for s in specs} == set(definitions())
    for spec in specs:
        definition(spec.name).check_spec(spec)


def test_defaults_fill_what_a_spec_leaves_out():
    spec = load_spec("fraud_alerts")
    bare = replace(spec, params={"failure_gap": "10 minutes"})
    p = definition("fraud_alerts").parameters(bare)
    assert (p.failure_gap, p.threshold, p.buckets) == (600.0, 5, 256)


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"failure_gap": "10 minutes", "treshold": 4}, "params.treshold is not a parameter"),
        ({"failure_gap": "10 minutes", "threshold": 0}, "params.threshold input should be greater"),
        ({"failure_gap": "soon"}, "params.failure_gap value error, 'soon' is not a duration"),
        ({"failure_gap": -3}, "params.failure_gap input should be greater than 0"),
        ({"failure_gap": "0s"}, "params.failure_gap input should be greater than 0"),
        ({"failure_gap": "99999999999 days"}, "params.failure_gap input should be less than"),
        ({"threshold": 5}, "params.failure_gap is required"),
        ({"failure_gap": "1m", "buckets": "many"}, "params.buckets input should be a valid int"),
    ],
)
def test_a_bad_parameter_is_one_line_naming_the_spec_file_and_the_parameter(params, says):
    spec = replace(load_spec("fraud_alerts"), params=params)
    with pytest.raises(UserError) as exc:
        definition("fraud_alerts").check_spec(spec)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"job spec {spec.path}: ") and says in msg


def test_a_spec_reading_other_inputs_than_its_job_is_refused():
    spec = replace(load_spec("sessions"), inputs={"auth": "/tmp/x"})
    with pytest.raises(UserError, match="inputs must be clickstream"):
        definition("sessions").check_spec(spec)


def test_a_declaration_naming_a_column_its_schema_lacks_is_refused():
    def build(spark, spec, events):
        return None

    with pytest.raises(ValueError, match="event_time not in its schema"):
        JobDef("x", ("clickstream",), "a string", ("a",), "event_time", build)
    with pytest.raises(ValueError, match="additive ops"):
        JobDef(
            "x", ("clickstream",), "a string, n bigint", ("a",), "a", build, additive={"n": "avg"}
        )


def test_unknown_job_and_bad_extra_modules_are_one_line_errors(monkeypatch):
    with pytest.raises(UserError, match="has a spec but no implementation"):
        definition("nope")
    monkeypatch.setenv(EXTRA_MODULES_ENV, "no_such_module_here")
    with pytest.raises(UserError, match=f"{EXTRA_MODULES_ENV}: cannot import no_such_module_here"):
        definitions()
    monkeypatch.setenv(EXTRA_MODULES_ENV, "spark_jobs.jobs.pandas_io")
    with pytest.raises(UserError, match="defines no JOB"):
        definitions()


def test_the_generic_executor_names_no_job():
    """keyed.py is the batched executor for any job: no job's name, module or logic in it."""
    source = (JOBS_DIR / "keyed.py").read_text()
    imported = {
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    job_modules = {f"spark_jobs.jobs.{n}" for n in definitions()}
    assert not imported & job_modules
    assert not [n for n in definitions() if n in source]
    assert not [m for m in imported if m and m.startswith("spark_jobs.state.") and "_bulk" in m]


def test_ddl_fields_split_only_top_level_commas():
    ddl = "a decimal(18,2), b array<struct<x:int,y:string>>, c  map<string,bigint>"
    assert ddl_fields(ddl) == [
        ("a", "decimal(18,2)"),
        ("b", "array<struct<x:int,y:string>>"),
        ("c", "map<string,bigint>"),
    ]
    assert column_names("a string, b bigint") == ["a", "b"]
    with pytest.raises(ValueError, match="has no type"):
        ddl_fields("a string, b")


def test_publish_refuses_replace_for_a_job_without_a_scope_and_appends():
    from spark_jobs.contract.backfill import SCOPE, refusal

    assert "big_purchases" not in SCOPE
    assert "no SCOPE entry" in (refusal("big_purchases", "replace") or "")
    assert refusal("big_purchases", "append") is None
    assert refusal("sessions", "replace") is None


def test_one_job_is_read_from_its_own_module_alone():
    """A command naming one job imports that job's module, not every job's (nor pandas, which
    another job's logic imports): what ``upgrade plan`` and ``checkpoint validate`` run on."""
    import os

    env = {k: v for k, v in os.environ.items() if k != EXTRA_MODULES_ENV}
    loaded = packages_after(
        "from spark_jobs.jobs import definition\n"
        "assert definition('sessions').name == 'sessions'\n",
        env,
    )
    jobs = set(loaded["spark_jobs"])
    others = {f"spark_jobs.jobs.{n}" for n in definitions()} - {"spark_jobs.jobs.sessions"}
    assert "spark_jobs.jobs.sessions" in jobs and not others & jobs, sorted(others & jobs)
    assert "pandas" not in loaded


def test_a_deployed_module_still_replaces_a_packaged_job(tmp_path, monkeypatch):
    (tmp_path / "sessions_shipped.py").write_text(
        "from dataclasses import replace\n"
        "from spark_jobs.jobs.sessions import JOB as PACKAGED\n"
        "JOB = replace(PACKAGED)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(EXTRA_MODULES_ENV, "sessions_shipped")
    import sessions_shipped  # type: ignore[import-not-found]

    from spark_jobs.jobs.sessions import JOB as PACKAGED

    assert definition("sessions") is sessions_shipped.JOB is not PACKAGED
    monkeypatch.delenv(EXTRA_MODULES_ENV)
    assert definition("sessions") is PACKAGED
