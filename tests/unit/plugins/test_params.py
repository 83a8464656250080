"""The DAG guard holds a ``checkpoint`` param to the rule every command applies to
``--checkpoint``: a folder the commands refuse is refused before anything is submitted, with the
commands' own reason, and a folder they take (a spec's own checkpoint folder outside the data
roots) is taken. One rule, so a param that passes the guard is never refused by the run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]


def _guard(checkpoint: str) -> str | None:
    """The guard's refusal of a checkpoint param, or None when it lets it through."""
    from statekeeper.params import ParamOutsideRoots, check_path_params

    try:
        check_path_params({"params": {"checkpoint": checkpoint}})
    except ParamOutsideRoots as exc:
        return str(exc)
    return None


def _as_param(reason: str) -> str:
    """The commands' refusal as the guard words it: the param named, nothing submitted."""
    return reason.replace("checkpoint ", "param checkpoint: ", 1) + "; nothing was submitted"


def _command(checkpoint: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``checkpoint validate --checkpoint`` as a user types it: exit code and its stderr line."""
    from spark_jobs.cli import main

    code = main(["checkpoint", "validate", "--checkpoint", checkpoint])
    return code, capsys.readouterr().err.strip().removeprefix("statekeeper: ")


@pytest.fixture
def data(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("STATEKEEPER_DATA", str(tmp_path / "data"))
    monkeypatch.delenv("STATEKEEPER_CHECKPOINT_ROOTS", raising=False)
    monkeypatch.delenv("STATEKEEPER_SPECS", raising=False)
    return tmp_path / "data"


def test_a_checkpoint_inside_a_table_is_refused_with_the_commands_reason(data, capsys):
    table = data / "checkpoints" / "looks_like_a_checkpoint"
    (table / "_delta_log").mkdir(parents=True)
    ck = str(table / "ck")
    code, reason = _command(ck, capsys)
    assert code == 2 and reason.startswith(f"checkpoint {ck} is inside the Delta table {table}")
    assert _guard(ck) == _as_param(reason)


def test_a_folder_outside_every_root_is_refused_alike(data, tmp_path, capsys):
    ck = str(tmp_path / "elsewhere" / "ck")
    code, reason = _command(ck, capsys)
    assert code == 2 and "outside the checkpoints roots" in reason
    assert _guard(ck) == _as_param(reason)


def test_a_specs_own_checkpoint_folder_is_taken_by_both(data, tmp_path, monkeypatch, capsys):
    specs, own = tmp_path / "specs", tmp_path / "volume" / "checkpoints"
    shutil.copytree(ROOT / "include" / "jobs", specs)
    spec = specs / "sessions.yaml"
    spec.write_text(
        spec.read_text().replace(
            "checkpoint: .data/checkpoints/sessions", f"checkpoint: {own}/sessions"
        )
    )
    monkeypatch.setenv("STATEKEEPER_SPECS", str(specs))
    replay = str(own / "sessions-replay")
    assert _command(replay, capsys) == (0, "")
    assert _guard(replay) is None


ROOTS_VAR = {"tables": "STATEKEEPER_TABLE_ROOTS", "landing": "STATEKEEPER_LANDING_ROOTS"}


@pytest.mark.parametrize("name,kind", [("output", "tables"), ("input", "landing")])
def test_run_and_the_guard_hold_input_and_output_to_one_rule(
    data, tmp_path, monkeypatch, capsys, name, kind
):
    # run --input/--output and the DAG param of the same name: refused alike outside the roots,
    # taken alike once the operator adds the folder as a root.
    from spark_jobs.cli import main
    from statekeeper.params import ParamOutsideRoots, check_path_params

    for var in ROOTS_VAR.values():
        monkeypatch.delenv(var, raising=False)
    path = str(tmp_path / "elsewhere" / "x")
    code = main(["run", "sessions", f"--{name}", path])
    reason = capsys.readouterr().err.strip().removeprefix("statekeeper: ")
    assert code == 2 and reason.startswith(f"--{name} {path} is outside the {kind} roots")
    with pytest.raises(ParamOutsideRoots) as err:
        check_path_params({"params": {name: path}})
    assert (
        str(err.value)
        == f"param {name}: {reason.removeprefix(f'--{name} ')}; nothing was submitted"
    )

    monkeypatch.setenv(ROOTS_VAR[kind], str(tmp_path / "elsewhere"))
    check_path_params({"params": {name: path}})  # taken
    main(["run", "sessions", f"--{name}", path])
    assert "outside" not in capsys.readouterr().err  # past the rule (it stops later: no input)
