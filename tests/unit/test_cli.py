"""The command line's last word on an error: a Spark error under any command is one line and
exit 1 (``run`` words its own, tests/unit/jobs); an error of ours keeps its traceback."""

from __future__ import annotations

import pytest
from pyspark.errors import AnalysisException

from spark_jobs import cli

pytestmark = pytest.mark.unit


def _generate_raising(monkeypatch, exc: Exception) -> None:
    def boom(args):
        raise exc

    monkeypatch.setattr(cli, "cmd_generate", boom)


def test_a_spark_error_under_a_command_is_one_line_and_exit_1(monkeypatch, capsys):
    _generate_raising(
        monkeypatch,
        AnalysisException(message="[DELTA_TABLE_NOT_FOUND] Delta table x doesn't exist.\n  at y"),
    )
    code = cli.main(["generate", "clickstream", "--out", "x", "--events", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert err == [
        "statekeeper: generate failed: [DELTA_TABLE_NOT_FOUND] Delta table x doesn't exist."
    ]


def test_an_error_of_ours_keeps_its_traceback(monkeypatch):
    _generate_raising(monkeypatch, ValueError("a bug"))
    with pytest.raises(ValueError, match="a bug"):
        cli.main(["generate", "clickstream", "--out", "x", "--events", "1"])
