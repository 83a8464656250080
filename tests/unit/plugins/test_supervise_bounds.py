"""The supervisor's settings are bounded: the DAG's Trigger form refuses a poll of ~0 s (a busy
loop in the shared triggerer), a negative backoff or an unbounded ``max_restarts``, and the
operator refuses the same values when they arrive otherwise (a template, a spec, a DAG built by
hand), with one line naming the setting and why, before anything runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "plugins"))

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("param", "bad", "good"),
    [
        ("poll_seconds", 0.001, 5),
        ("restart_backoff_seconds", -5, 30),
        ("max_restarts", 10**9, 5),
        ("watch_minutes", 10**7, 10),
    ],
)
def test_the_trigger_form_refuses_unbounded_settings(param, bad, good):
    from airflow.sdk.definitions.param import ParamValidationError

    from statekeeper.factory import supervisor_dag

    p = supervisor_dag("service_health").params.get_param(param)
    assert p.resolve(value=good) == good
    with pytest.raises(ParamValidationError):
        p.resolve(value=bad)
    assert "(" in p.description  # the reason is given beside the bound


@pytest.mark.parametrize(
    ("kwargs", "line"),
    [
        ({"poll_seconds": "0"}, "poll_seconds=0 is outside 1..600: below 1 s"),
        ({"restart_backoff": "-5"}, "restart_backoff=-5 is outside 1..600"),
        ({"max_restarts": "1000000"}, "max_restarts=1e+06 is outside 0..100"),
    ],
)
def test_the_operator_refuses_out_of_bounds_values_before_launching(
    tmp_path, monkeypatch, kwargs, line
):
    from airflow.sdk.exceptions import AirflowFailException

    from statekeeper.supervisor import StreamingSupervisorOperator

    specs = tmp_path / "specs"
    specs.mkdir()
    # available-now: the unchanged operator stops here with another error, never launching
    (specs / "svc.yaml").write_text(
        f"name: svc\nmode: continuous\ninputs: {{service-logs: {tmp_path}/landing}}\n"
        f"output: {tmp_path}/tables/svc\ncheckpoint: {tmp_path}/checkpoints/svc\n"
        "watermark: 10 minutes\ntrigger: available-now\n"
    )
    monkeypatch.setenv("STATEKEEPER_SPECS", str(specs))
    op = StreamingSupervisorOperator(task_id="supervise", job="svc", **kwargs)
    with pytest.raises(AirflowFailException) as err:
        op.execute({"params": {}})
    assert line in str(err.value)
    assert "\n" not in str(err.value)


def test_the_trigger_never_polls_faster_than_the_bound():
    from statekeeper.triggers import DriverWatchTrigger

    t = DriverWatchTrigger(checkpoint="/x", thresholds={}, watch_until=0.0, poll_seconds=0.0)
    assert t.poll_seconds == 1
