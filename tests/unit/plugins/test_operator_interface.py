"""One operator interface on the Airflow side: every operator that runs a ``python -m spark_jobs``
command takes the job and its overrides (option -> value), never a command line, and the command
line is built in one place (``statekeeper.submit.cli_arguments``). An override or flag that
renders empty is left out, so the spec's own value holds."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from pathlib import Path

import pytest

PLUGINS = Path(__file__).resolve().parents[3] / "plugins"
sys.path.insert(0, str(PLUGINS))

pytestmark = pytest.mark.unit


def _operators() -> list[type]:
    from airflow.sdk import BaseOperator

    import statekeeper

    found = {}
    for info in pkgutil.iter_modules(statekeeper.__path__):
        module = importlib.import_module(f"statekeeper.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseOperator) and cls.__module__.startswith("statekeeper."):
                found[cls.__qualname__] = cls
    return list(found.values())


def test_no_operator_takes_a_command_line_and_every_command_operator_takes_a_job():
    ops = _operators()
    assert len(ops) >= 8, [o.__name__ for o in ops]  # the walk found the operators
    for cls in ops:
        params = inspect.signature(cls.__init__).parameters
        assert "arguments" not in params and "argv" not in params, cls.__name__
    from statekeeper.operators import SparkJobsCliOperator
    from statekeeper.submit import SparkJobsSubmitOperator

    for cls in ops:
        if issubclass(cls, SparkJobsCliOperator | SparkJobsSubmitOperator):
            params = inspect.signature(cls.__init__).parameters
            assert {"job", "overrides"} <= set(params), cls.__name__


def test_the_command_line_leaves_out_what_rendered_empty_and_names_every_table_output():
    from statekeeper.operators import (
        CheckpointValidateOperator,
        QualityCheckOperator,
        SparkJobsCliOperator,
    )

    quality = QualityCheckOperator(task_id="q", job="sessions", overrides={"output": "/t/x"})
    assert quality.arguments() == ["quality", "sessions", "--output", "/t/x"]
    unset = CheckpointValidateOperator(
        task_id="v", job="sessions", overrides={"checkpoint": "None"}
    )
    assert unset.arguments() == ["checkpoint", "validate", "sessions"]
    # A flag that rendered empty after another flag: the one before it stays (--json was dropped
    # with it when the command line was a list of words).
    maintain = SparkJobsCliOperator(
        task_id="m", command=["table", "maintain"], job="sessions", flags=["--json", ""]
    )
    assert maintain.arguments() == ["table", "maintain", "sessions", "--json"]
    with pytest.raises(ValueError, match="needs a command"):
        SparkJobsCliOperator(task_id="x", job="sessions")


def test_a_submitted_command_is_built_the_same_way():
    from statekeeper.submit import cli_arguments

    got = cli_arguments(
        ["publish"], "sessions", {"staged_checkpoint": "/c", "mode": "append", "key": " "}
    )
    assert got == ["publish", "sessions", "--staged-checkpoint", "/c", "--mode", "append"]
