"""A checkpoint's binding records its tables (no JVM): recorded at the first run, a committed
checkpoint refuses another table unless rebound, an older binding adopts the tables it is next
run with, and an interrupted write leaves the previous binding whole."""

from __future__ import annotations

import json

import pytest

from spark_jobs.contract import binding
from spark_jobs.contract.errors import ExitCode, UserError

pytestmark = pytest.mark.unit


def tables(name: str) -> dict[str, str]:
    return {"output": f"/t/{name}", "quarantine": f"/t/{name}/_quarantine"}


def commit_a_batch(ck) -> None:
    (ck / "offsets").mkdir(parents=True, exist_ok=True)
    (ck / "offsets" / "0").write_text("v1\n{}\n")


def test_a_committed_checkpoint_refuses_another_table_unless_rebound(tmp_path):
    ck = tmp_path / "ckpt"
    binding.check_and_bind(str(ck), {"job": "j"}, "spec")
    binding.bind_tables(str(ck), tables("a"))
    binding.bind_tables(str(ck), tables("b"))  # nothing run yet: the new table is just recorded
    assert binding.bound_tables(str(ck)) == tables("b")

    commit_a_batch(ck)
    binding.bind_tables(str(ck), tables("b"))  # the same table: fine
    with pytest.raises(UserError) as refused:
        binding.bind_tables(str(ck), tables("c"))
    line = str(refused.value)
    assert "/t/b" in line and "/t/c" in line and "--checkpoint" in line
    assert binding.REBIND_FLAG in line and len(line.splitlines()) == 1
    assert refused.value.exit_code == ExitCode.UNSAFE
    assert binding.bound_tables(str(ck)) == tables("b")  # refused: nothing recorded

    binding.bind_tables(str(ck), tables("c"), rebind=True)
    record = binding.read_binding(str(ck))
    assert binding.bound_tables(str(ck)) == tables("c")
    assert record["rebinds"][0]["from"] == tables("b") and record["fingerprint"] == {"job": "j"}


def test_a_binding_without_tables_adopts_the_next_runs_and_keeps_other_fields(tmp_path):
    ck = tmp_path / "ckpt"
    commit_a_batch(ck)
    older = {"fingerprint": {"job": "j"}, "bound_at": "2026-01-01T00:00:00Z", "kafka": {"x": 1}}
    (ck / "_statekeeper").mkdir()
    (ck / "_statekeeper" / "job.json").write_text(json.dumps(older))
    assert binding.bound_tables(str(ck)) is None
    binding.bind_tables(str(ck), tables("a"))
    assert binding.bound_tables(str(ck)) == tables("a")
    assert binding.read_binding(str(ck))["kafka"] == {"x": 1}  # a field of another feature stays
    binding.record_repartition(str(ck), {"from": 4, "to": 8, "batch": 0})
    assert binding.bound_tables(str(ck)) == tables("a")  # repartition keeps the tables


def test_a_binding_naming_only_its_output_gets_that_outputs_quarantine(tmp_path):
    """A record edited by hand to name the output alone: the quarantine is the one a run of that
    output writes, never the output again (table maintain would compact it twice)."""
    ck = tmp_path / "ckpt"
    (ck / "_statekeeper").mkdir(parents=True)
    record = {"fingerprint": {"job": "j"}, binding.TABLES: {"output": "/t/a"}}
    (ck / "_statekeeper" / "job.json").write_text(json.dumps(record))
    assert binding.bound_tables(str(ck)) == tables("a")


class Unprintable:
    """A value whose text cannot be made: the write fails half-way through."""

    def __str__(self) -> str:
        raise RuntimeError("cut short")


def test_a_write_cut_short_leaves_the_previous_binding_whole(tmp_path):
    ck = tmp_path / "ckpt"
    commit_a_batch(ck)
    binding.check_and_bind(str(ck), {"job": "j", "shuffle_partitions": 4}, "spec")
    before = (ck / "_statekeeper" / "job.json").read_text()
    with pytest.raises(RuntimeError, match="cut short"):
        binding.record_repartition(str(ck), {"from": 4, "to": 8, "at": Unprintable()})
    assert (ck / "_statekeeper" / "job.json").read_text() == before
    assert binding.read_binding(str(ck))["fingerprint"]["shuffle_partitions"] == 4
    assert [p.name for p in (ck / "_statekeeper").iterdir()] == ["job.json"]  # no temp left


def commit(ck, batch: int) -> None:
    (ck / "commits").mkdir(parents=True, exist_ok=True)
    (ck / "commits" / str(batch)).write_text("v1\n{}\n")


def test_an_output_table_gone_after_a_committed_batch_is_refused_unless_rebound(tmp_path):
    """The bound output holds what batches committed after the binding wrote: when its folder is
    gone, a run would start a table without those rows. Gone before any such batch (a run cut
    short before its first commit) is no loss; a rebind starts a new table there."""
    ck, out = tmp_path / "ckpt", tmp_path / "out"
    mine = {"output": str(out), "quarantine": str(out / "_quarantine")}
    binding.bind_tables(str(ck), mine)
    assert binding.read_binding(str(ck))[binding.TABLES_SINCE] == -1
    binding.bind_tables(str(ck), mine)  # nothing committed: no table is owed

    commit_a_batch(ck)
    commit(ck, 0)
    (out / "_delta_log").mkdir(parents=True)
    binding.bind_tables(str(ck), mine)  # there: fine
    assert binding.owed_batches(str(ck)) is None
    (out / "_delta_log").rmdir()
    assert binding.owed_batches(str(ck)) == (str(out), -1, 0)  # what validate's TABLE_GONE says
    with pytest.raises(UserError) as refused:
        binding.bind_tables(str(ck), mine)
    line = str(refused.value)
    assert refused.value.exit_code == ExitCode.UNSAFE and len(line.splitlines()) == 1
    assert f"output table {out} is gone" in line and "batches 0..0" in line
    assert binding.REBIND_FLAG in line and "--checkpoint" in line

    binding.bind_tables(str(ck), mine, rebind=True)
    record = binding.read_binding(str(ck))
    assert record[binding.TABLES_SINCE] == 0 and record["rebinds"][0]["to"] == mine
    binding.bind_tables(str(ck), mine)  # no batch since the rebind yet
    assert binding.owed_batches(str(ck)) is None


def test_a_binding_of_an_earlier_release_learns_when_its_table_is_there(tmp_path):
    ck, out = tmp_path / "ckpt", tmp_path / "out"
    mine = {"output": str(out), "quarantine": str(out / "_quarantine")}
    commit_a_batch(ck)
    commit(ck, 3)
    (ck / "_statekeeper").mkdir()
    (ck / "_statekeeper" / "job.json").write_text(json.dumps({binding.TABLES: mine}))
    binding.bind_tables(str(ck), mine)  # when the table went is unknown: no claim
    assert binding.TABLES_SINCE not in binding.read_binding(str(ck))  # not there: still unknown

    (out / "_delta_log").mkdir(parents=True)
    binding.bind_tables(str(ck), mine)
    assert binding.read_binding(str(ck))[binding.TABLES_SINCE] == 3
    commit(ck, 4)
    (out / "_delta_log").rmdir()
    with pytest.raises(UserError, match="batches 4..4"):
        binding.bind_tables(str(ck), mine)
