"""After ``checkpoint repartition`` the checkpoint's partition count wins over the spec value it
was repartitioned from (no JVM): the unchanged spec runs on, any other change is still refused."""

from __future__ import annotations

import pytest

from spark_jobs.contract import binding
from spark_jobs.contract.errors import UserError

pytestmark = pytest.mark.unit


def test_a_repartitioned_checkpoint_runs_the_unchanged_spec_at_its_new_count(tmp_path):
    ck = str(tmp_path / "ckpt")
    (tmp_path / "ckpt" / "offsets").mkdir(parents=True)
    (tmp_path / "ckpt" / "offsets" / "0").write_text("v1\n{}\n")  # state exists: binding enforced
    binding.check_and_bind(ck, {"shuffle_partitions": 4, "job": "j"}, "spec")
    assert binding.checkpoint_partitions(ck, 4) == 4  # never repartitioned: the spec's

    binding.record_repartition(ck, {"from": 4, "to": 8, "batch": 3})
    assert binding.checkpoint_partitions(ck, 4) == 8  # the spec it was repartitioned from
    assert binding.checkpoint_partitions(ck, 8) == 8  # or a spec already saying 8
    assert binding.checkpoint_partitions(ck, 16) == 16  # another value: left to the refusal
    binding.check_and_bind(ck, {"shuffle_partitions": 8, "job": "j"}, "spec")
    with pytest.raises(UserError, match="shuffle_partitions=8"):
        binding.check_and_bind(ck, {"shuffle_partitions": 16, "job": "j"}, "spec")

    binding.record_repartition(ck, {"from": 8, "to": 2, "batch": 5})
    assert [binding.checkpoint_partitions(ck, n) for n in (4, 8, 2)] == [2, 2, 2]
    assert [r["to"] for r in binding.read_binding(ck)["repartitions"]] == [8, 2]
