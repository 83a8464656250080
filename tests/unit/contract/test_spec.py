"""Job specs, durations, the CLI's one-line errors and the generator (no JVM)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from spark_jobs.cli import main
from spark_jobs.contract.durations import parse_seconds, spark_interval
from spark_jobs.contract.errors import UserError
from spark_jobs.contract.spec import (
    DEFAULT_MAX_FILES_PER_TRIGGER,
    DEFAULT_MAX_OFFSETS_PER_TRIGGER,
    Trigger,
    list_jobs,
    load_spec,
    parse_spec,
)
from spark_jobs.generate import generate
from spark_jobs.jobs import definition

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
JOBS = [
    "dedup_events",
    "fraud_alerts",
    "order_payments",
    "service_health",
    "sessions",
    "user_counts",
    "windowed_counts",
]


def test_every_contract_job_has_a_spec_that_loads():
    assert list_jobs() == JOBS
    s = load_spec("sessions")
    assert s.watermark_seconds == 600 and definition("sessions").params.of(s).gap == 1800
    assert s.state_store == "rocksdb" and s.trigger.available_now
    assert s.output.endswith(".data/tables/sessions")
    assert load_spec("order_payments").kinds == ["orders", "payments"]


def test_overrides_and_two_input_roots(tmp_path):
    s = load_spec("order_payments").with_overrides(input=str(tmp_path), output="x/out")
    assert s.inputs == {"orders": f"{tmp_path}/orders", "payments": f"{tmp_path}/payments"}
    assert s.output == str(ROOT / "x/out")
    s = load_spec("order_payments").with_overrides(input=[f"payments={tmp_path}/p"])
    assert s.inputs["payments"] == f"{tmp_path}/p"
    with pytest.raises(UserError, match="has no input 'refunds'"):
        load_spec("order_payments").with_overrides(input=["refunds=/x"])


@pytest.mark.parametrize(
    "text,secs", [("30s", 30), ("10 minutes", 600), ("1 hour", 3600), ("2h", 7200), (45, 45)]
)
def test_durations(text, secs):
    assert parse_seconds(text) == secs


def test_bad_duration_and_trigger_are_one_line_errors():
    with pytest.raises(UserError, match="not a duration"):
        parse_seconds("soon")
    with pytest.raises(UserError, match="unknown trigger"):
        Trigger.parse("sometimes")
    assert Trigger.parse("processing-time:30s").interval_seconds == 30
    assert spark_interval(600) == "10 minutes" and spark_interval(3600) == "1 hours"


def test_bad_spec_keys_and_values_are_named():
    raw = {
        "inputs": {"clickstream": "x"},
        "output": "o",
        "checkpoint": "c",
        "watermark": "1 minute",
    }
    with pytest.raises(UserError, match="unknown key"):
        parse_spec({**raw, "colour": "red"}, "x.yaml")
    with pytest.raises(UserError, match="state_store must be one of"):
        parse_spec({**raw, "state_store": "memory"}, "x.yaml")
    with pytest.raises(UserError, match="missing required key 'output'"):
        parse_spec({k: v for k, v in raw.items() if k != "output"}, "x.yaml")


def test_the_spec_file_is_one_typed_model_with_one_line_errors():
    """Every key of a spec file is a field of one model (types, defaults, limits): no second
    parser beside it. A quoted boolean means what it says (``bool("false")`` was True), an empty
    block is its default, and each bad value is one line naming the file and the key."""
    from spark_jobs.contract.spec import SpecFile

    raw = {"inputs": {"clickstream": "x"}, "output": "o", "checkpoint": "c", "watermark": "1m"}
    spec = parse_spec(
        {**raw, "changelog_checkpointing": "false", "params": None, "tags": None},
        "x.yaml",
        default_name="x",
    )
    assert spec.changelog_checkpointing is False and spec.params == {} and spec.tags == ()
    assert spec.watermark_seconds == 60 and spec.name == "x"
    assert set(SpecFile.model_fields) >= {"inputs", "quality", "freshness", "completeness"}
    for bad, needle in [
        ({"shuffle_partitions": "four"}, "shuffle_partitions "),
        ({"min_batches_to_retain": 0}, "min_batches_to_retain "),
        ({"watermark": "soon"}, "watermark must be a duration"),
        ({"inputs": {}}, "inputs must map an input kind to a folder"),
        ({"kafka_options": ["a"]}, "kafka_options must map consumer properties"),
        ({"executor": "threads"}, "executor must be one of per-key, batched, not 'threads'"),
        ({"colour": "red", "size": 3}, "unknown key(s) colour, size"),
        ({"quality": {"freshnes_sla": "1h"}}, "unknown key quality.freshnes_sla"),
        ({"snapshots": "daily"}, "snapshots must be a mapping"),
    ]:
        with pytest.raises(UserError) as err:
            parse_spec({**raw, **bad}, "x.yaml")
        msg = str(err.value)
        assert msg.startswith("job spec x.yaml: ") and needle in msg and "\n" not in msg, msg


def test_fingerprint_changes_with_what_state_depends_on():
    s = load_spec("sessions")
    assert s.fingerprint_hash() == load_spec("sessions").fingerprint_hash()
    from dataclasses import replace

    assert replace(s, shuffle_partitions=8).fingerprint_hash() != s.fingerprint_hash()


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["run", "nope"], "unknown job 'nope'"),
        (["run", "sessions", "--bogus"], "unrecognized arguments"),
        (["run", "sessions", "--trigger", "never"], "unknown trigger"),
        (["run", "sessions", "--input", ".data/landing/not-here"], "does not exist"),
        (["run", "sessions", "--conf", "novalue"], "must be key=value"),
        # run's paths are held to the roots the DAG guard holds the same params to
        (["run", "sessions", "--input", "/etc"], "--input /etc is outside the landing roots"),
        (["run", "sessions", "--output", "/etc/x"], "--output /etc/x is outside the tables roots"),
        (["run", "sessions", "--output", ".data/tables"], "is a tables root itself"),  # a root
        (["run", "sessions", "--output", "s3a://b/../../x"], "--output s3a://b/../../x climbs"),
        (["publish", "sessions", "--staged", "s", "--key", "k", "--output", "/x"], "tables roots"),
        (
            ["checkpoint", "rollback", "sessions", "--to-batch", "0", "--output", "/x"],
            "tables roots",
        ),
        (
            [
                "generate",
                "clickstream",
                "--out",
                ".data/landing/x",
                "--events",
                "5",
                "--bad-rate",
                "2",
            ],
            "between 0 and 1",
        ),
        (
            ["checkpoint", "repartition", "sessions", "--partitions", "99999999999"],
            "--partitions must be at most 2147483647",
        ),
        # every command's path options are held to the one rule run's are (contract.confine)
        (
            ["generate", "clickstream", "--out", "/tmp/x", "--events", "5"],
            "--out /tmp/x is outside",
        ),
        (
            ["quality", "sessions", "--table", "/etc/x"],
            "--table /etc/x is outside the tables roots",
        ),
        # quality's table is --output, as every command's; --table (its first name) still works
        (
            ["quality", "sessions", "--output", "/etc/x"],
            "--output /etc/x is outside the tables roots",
        ),
        (["quality", "sessions", "--checkpoint", "/etc/x"], "--checkpoint /etc/x is outside"),
        (
            ["publish", "sessions", "--staged", "/etc/x", "--key", "k"],
            "--staged /etc/x is outside the tables roots",
        ),
        # upgrade's table option is held to the tables roots, as every command's is
        (["upgrade", "plan", "sessions", "--output", "/etc/x"], "outside the tables roots"),
        (["upgrade", "migrate", "sessions", "--output", "/etc/x"], "outside the tables roots"),
    ],
)
def test_user_errors_are_one_line_and_non_zero(argv, needle, capsys):
    code = main(argv)
    err = capsys.readouterr().err
    assert code != 0
    assert needle in err
    assert err.count("\n") == 1 and err.startswith("statekeeper: ")


def test_list_prints_every_job_once():
    out = subprocess.run(
        [sys.executable, "-m", "spark_jobs", "list"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout
    assert [line.split()[0] for line in out.splitlines()] == JOBS


def test_generate_is_deterministic_appends_and_counts_bad_lines(tmp_path):
    a = generate("clickstream", str(tmp_path / "a"), 500, seed=7, bad_rate=0.1)
    b = generate("clickstream", str(tmp_path / "b"), 500, seed=7, bad_rate=0.1)
    fa, fb = Path(a.files[0]), Path(b.files[0])
    assert fa.read_text() == fb.read_text()
    assert a.bad == 50 and a.events == 450
    lines = fa.read_text().splitlines()
    good = 0
    for line in lines:
        try:
            e = json.loads(line)
            good += (
                isinstance(e, dict)
                and {"event_id", "user_id", "event_time"} <= set(e)
                and isinstance(e["event_id"], str)
                and e["event_time"].endswith("Z")
            )
        except ValueError:
            pass
    assert good == 450
    again = generate("clickstream", str(tmp_path / "a"), 500, seed=7)
    assert (
        again.files[0] != a.files[0] and fa.read_text() == fb.read_text()
    )  # new file, old untouched
    assert again.first_event_time >= a.last_event_time[:13]  # the folder's clock moved on


def test_payments_follow_generated_orders(tmp_path):
    generate("orders", str(tmp_path / "orders"), 300, seed=2)
    p = generate("payments", str(tmp_path / "payments"), 1000, seed=2)
    files = [f for f in (tmp_path / "orders").glob("*.json") if not f.name.startswith(".")]
    orders = {json.loads(line)["order_id"] for f in files for line in f.read_text().splitlines()}
    pays = [json.loads(x) for f in p.files for x in Path(f).read_text().splitlines()]
    assert 200 < len(pays) < 300 and {x["order_id"] for x in pays} <= orders
    again = generate("payments", str(tmp_path / "payments"), 1000, seed=2)
    assert again.events == 0  # every order already has its payment (or none)


def test_every_spec_limits_its_batches_by_default():
    """A backlog is read in batches that end: without a per-batch limit, one batch of the whole
    backlog could outlast the task's timeout and be planned again the same after every kill."""
    raw = {
        "name": "x",
        "inputs": {"clickstream": "/in"},
        "output": "/o",
        "checkpoint": "/c",
        "watermark": "10 minutes",
    }
    spec = parse_spec(raw, "x.yaml")
    assert spec.max_files_per_trigger == DEFAULT_MAX_FILES_PER_TRIGGER > 0
    assert spec.max_offsets_per_trigger == DEFAULT_MAX_OFFSETS_PER_TRIGGER > 0
    assert parse_spec({**raw, "max_files_per_trigger": 7}, "x.yaml").max_files_per_trigger == 7
    with pytest.raises(UserError, match="max_files_per_trigger"):
        parse_spec({**raw, "max_files_per_trigger": 0}, "x.yaml")


@pytest.mark.parametrize("value", ["0s", "100000000 days"])
def test_max_future_out_of_range_is_a_one_line_error(value):
    """A max_future of 100,000,000 days overflowed the batch clock's interval sum (its seconds do
    not fit decimal(18,6)) in every batch: a spec error said before Spark starts."""
    raw = {
        "name": "x",
        "inputs": {"clickstream": "/in"},
        "output": "/o",
        "checkpoint": "/c",
        "watermark": "10 minutes",
        "max_future": value,
    }
    with pytest.raises(UserError, match="max_future must be positive and at most 100 years"):
        parse_spec(raw, "x.yaml")
