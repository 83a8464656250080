"""``upgrade plan``'s verdicts on synthetic checkpoints (files in Spark 4.2's layout, no JVM):
each kind of change gets its verdict and names the field; a key change names the input a replay
would read and what of it is gone; ``run`` refuses a changed spec naming the plan; ``migrate``
refuses a change that needs the state rewritten and leaves the binding as it was."""

from __future__ import annotations

import json
import struct
from dataclasses import replace
from pathlib import Path

import pytest
from fresh_imports import packages_after

from spark_jobs.checkpoints.roots import Target
from spark_jobs.checkpoints.synthetic import make_checkpoint
from spark_jobs.contract import binding
from spark_jobs.contract.errors import ExitCode, UserError
from spark_jobs.contract.spec import load_spec
from spark_jobs.jobs import definition, fingerprint
from spark_jobs.upgrade import verdicts
from spark_jobs.upgrade.declared import read_declared
from spark_jobs.upgrade.plan import make_plan
from spark_jobs.upgrade.recorded import read_recorded

pytestmark = pytest.mark.unit

FRAUD = definition("fraud_alerts")

OUTPUT = (
    "user_id string, alert_time timestamp, first_failure_time timestamp, failed_attempts bigint, "
    "distinct_ips bigint, ips array<string>"
)


def struct_json(fields: list[tuple[str, object]]) -> dict:
    return {
        "type": "struct",
        "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields],
    }


def utf(obj: dict) -> bytes:
    b = json.dumps(obj, separators=(",", ":")).encode()
    return struct.pack(">H", len(b)) + b


def _split(text: str) -> list[str]:
    """``text`` split at the commas outside any ``<...>``."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if ch == "," and not depth:
            parts, cur = [*parts, cur], ""
        else:
            cur += ch
    return [*parts, cur]


def json_of(ddl_type: str) -> object:
    """A DDL type as Spark's JSON schema spells it (what its state schema file holds)."""
    t = ddl_type.strip()
    if t.startswith("array<"):
        return {"type": "array", "elementType": json_of(t[6:-1]), "containsNull": True}
    if t.startswith("struct<"):
        fields = [f.split(":", 1) for f in _split(t[7:-1])]
        return struct_json([(n.strip(), json_of(ft)) for n, ft in fields])
    return {"bigint": "long", "int": "integer"}.get(t, t)


def write_state_schema(ck: Path, key: list[str]) -> None:
    """The schema file Spark 4.2 writes for applyInPandasWithState (partition 0): version,
    then key and value schemas as length-prefixed JSON; the value is the state row fraud_alerts
    declares for the executor (per key, or per bucket of keys)."""
    from spark_jobs.io.tables import ddl_fields

    ddl = FRAUD.bucket_state_schema if key == ["_bucket"] else FRAUD.state_schema
    assert isinstance(ddl, str)
    row = [(n, json_of(t)) for n, t in ddl_fields(ddl)]
    value = struct_json([("groupState", struct_json(row)), ("timeoutTimestamp", "long")])
    folder = ck / "state" / "0" / "0" / "_metadata"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "schema").write_bytes(
        b"\x00\x02v2\x00\x00\x00\x01" + utf(struct_json([(k, "string") for k in key])) + utf(value)
    )


def write_table(table: Path, ddl_fields: list[tuple[str, object]]) -> None:
    log = table / "_delta_log"
    log.mkdir(parents=True)
    meta = {"metaData": {"id": "t", "schemaString": json.dumps(struct_json(ddl_fields))}}
    (log / f"{0:020d}.json").write_text(json.dumps({"commitInfo": {}}) + "\n" + json.dumps(meta))


def table_fields() -> list[tuple[str, object]]:
    types = {"string": "string", "timestamp": "timestamp", "bigint": "long"}
    out: list[tuple[str, object]] = []
    for part in OUTPUT.split(", "):
        name, t = part.split(" ", 1)
        out.append(
            (name, {"type": "array", "elementType": "string", "containsNull": True})
            if t.startswith("array")
            else (name, types[t])
        )
    return out


@pytest.fixture
def live(tmp_path, monkeypatch):
    """A fraud_alerts checkpoint (per-key executor, 3 batches, each read one landing file, of
    which the second is gone), bound to the spec it was written with, and its table."""
    monkeypatch.setenv("STATEKEEPER_CHECKPOINT_ROOTS", str(tmp_path))
    monkeypatch.setenv("STATEKEEPER_SNAPSHOT_ROOTS", str(tmp_path))
    land = tmp_path / "land" / "auth"
    land.mkdir(parents=True)
    spec = load_spec("fraud_alerts").with_overrides(
        input=str(land), output=str(tmp_path / "out"), checkpoint=str(tmp_path / "ckpt")
    )
    spec = replace(spec, executor="per-key", shuffle_partitions=4, state_store="rocksdb")
    spec = replace(spec, params={**spec.params, "threshold": 5})

    def checkpoint(
        store: str = "rocksdb", key: tuple[str, ...] = ("user_id",), **recorded: object
    ) -> Path:
        ck = make_checkpoint(tmp_path / "ckpt", batches=3, partitions=4, store=store)
        write_state_schema(ck, list(key))
        for b in range(3):
            f = land / f"f{b}.json"
            if b != 1:
                f.write_text("{}\n")
            entry = {"path": f.as_uri(), "timestamp": 0, "batchId": b}
            (ck / "sources" / "0" / str(b)).write_text("v1\n" + json.dumps(entry))
        executor = "batched" if key == ("_bucket",) else "per-key"
        record = {"fingerprint": fingerprint(replace(spec, state_store=store, executor=executor))}
        binding.write_binding(str(ck), {**record, **recorded})
        return ck

    write_table(tmp_path / "out", table_fields())
    return spec, checkpoint, tmp_path


def plan_of(spec, tmp_path, **declared):
    rec = read_recorded(spec.checkpoint, str(tmp_path / "out"), spec.inputs)
    now = replace(read_declared(spec), **declared)
    return verdicts.compare(rec, now, spec.name)


def test_nothing_changed_is_nothing_to_do(live):
    spec, checkpoint, tmp = live
    checkpoint()
    target = Target(spec.checkpoint, str(tmp / "snaps"), spec.name, spec)
    p = make_plan(target, str(tmp / "out"))
    assert p["changes"] == [] and p["exit_code"] == 0


def test_a_parameter_is_compatible_and_named(live):
    spec, checkpoint, tmp = live
    checkpoint()
    changed = replace(spec, params={**spec.params, "threshold": 3})
    p = make_plan(Target(spec.checkpoint, str(tmp / "snaps"), spec.name, changed))
    assert [(c["field"], c["before"], c["after"], c["verdict"]) for c in p["changes"]] == [
        ("params.threshold", 5, 3, "compatible")
    ]
    assert p["exit_code"] == ExitCode.UPGRADE_COMPATIBLE == 30


@pytest.mark.parametrize(
    "params, why",
    [
        ({"thresold": 3}, "params.thresold is not a parameter of job fraud_alerts"),
        ({"failure_gap": "soon"}, "params.failure_gap value error, 'soon' is not a duration"),
    ],
)
def test_a_parameter_the_job_does_not_take_is_refused_as_run_refuses_it(live, params, why):
    """Before, plan called a typo'd or ill-typed parameter compatible (exit 30), so the DAG's
    plan gate let through a change the run then refused."""
    spec, checkpoint, tmp = live
    checkpoint()
    changed = replace(spec, params={**spec.params, **params})
    with pytest.raises(UserError, match=why) as refused:
        make_plan(Target(spec.checkpoint, str(tmp / "snaps"), spec.name, changed))
    assert refused.value.exit_code == ExitCode.USER_ERROR and "\n" not in str(refused.value)


def test_a_key_change_is_incompatible_and_names_what_to_replay(live):
    spec, checkpoint, tmp = live
    checkpoint()
    changes = plan_of(spec, tmp, state_key=["user_id", "device"])
    assert [(c.field, c.verdict) for c in changes] == [("state.key", "incompatible")]
    c = changes[0]
    assert c.before == ["user_id"] and c.after == ["user_id", "device"]
    assert "3 file(s)" in c.means and "1 gone" in c.means and "f1.json" in c.means
    assert c.replay and c.replay[0]["files_read"] == 3 and c.replay[0]["still_there"] == 2
    assert c.replay[0]["complete"] is False
    assert verdicts.exit_code(changes) == ExitCode.UPGRADE_INCOMPATIBLE


def test_a_key_change_on_the_batched_executor_is_seen_in_the_binding(live):
    """Spark stores the bucket as the key there; the binding records the key's columns."""
    spec, checkpoint, tmp = live
    checkpoint(key=("_bucket",), declaration={"state_key": ["user_id"]})
    batched = replace(spec, executor="batched")
    assert plan_of(batched, tmp) == []
    changes = plan_of(batched, tmp, state_key=["user_id", "device"])
    assert [(c.field, c.before, c.verdict) for c in changes] == [
        ("state.key", ["user_id"], "incompatible")
    ]


def test_hdfs_to_rocksdb_is_a_migration(live):
    spec, checkpoint, tmp = live
    checkpoint(store="hdfs")  # the offset log pins Spark's HDFS-backed provider
    changes = plan_of(spec, tmp)
    assert [(c.field, c.before, c.after, c.verdict) for c in changes] == [
        ("state_store", "hdfs", "rocksdb", "migrate")
    ]
    assert verdicts.exit_code(changes) == ExitCode.UPGRADE_MIGRATE


def test_shuffle_partitions_point_at_repartition(live):
    spec, checkpoint, tmp = live
    checkpoint()
    changes = plan_of(replace(spec, shuffle_partitions=8), tmp)
    assert [(c.field, c.before, c.after, c.verdict) for c in changes] == [
        ("shuffle_partitions", 4, 8, "repartition")
    ]
    assert "checkpoint repartition fraud_alerts --partitions 8" in changes[0].means
    assert verdicts.exit_code(changes) == ExitCode.UPGRADE_REPARTITION


def test_a_watermark_change_is_a_migration(live):
    spec, checkpoint, tmp = live
    checkpoint()
    changes = plan_of(replace(spec, watermark_seconds=1200.0), tmp)
    assert [(c.field, c.before, c.after, c.verdict) for c in changes] == [
        ("watermark_seconds", 600.0, 1200.0, "migrate")
    ]


def test_output_schema_changes(live):
    spec, checkpoint, tmp = live
    checkpoint()
    now = read_declared(spec).output
    assert now is not None
    added = [*now, ("country", "string")]
    removed = [f for f in now if f[0] != "ips"]
    retyped = [(n, "int" if n == "failed_attempts" else t) for n, t in now]
    got = {
        name: [(c.field, c.verdict) for c in plan_of(spec, tmp, output=out)]
        for name, out in (("added", added), ("removed", removed), ("retyped", retyped))
    }
    assert got == {
        "added": [("output.country", "migrate")],
        "removed": [("output.ips", "compatible")],
        "retyped": [("output.failed_attempts", "incompatible")],
    }


def test_run_refuses_a_changed_spec_naming_the_plan(tmp_path):
    ck = tmp_path / "ckpt"
    binding.check_and_bind(str(ck), {"job": "fraud_alerts", "params": {"threshold": 5}}, "spec")
    (ck / "offsets").mkdir(parents=True)
    (ck / "offsets" / "0").write_text("v1\n{}\n")
    with pytest.raises(UserError) as refused:
        binding.check_and_bind(
            str(ck), {"job": "fraud_alerts", "params": {"threshold": 3}}, "spec f.yaml"
        )
    line = str(refused.value)
    assert "params.threshold=5" in line and "params.threshold=3" in line
    assert "python -m spark_jobs upgrade plan fraud_alerts" in line
    assert refused.value.exit_code == ExitCode.USER_ERROR and len(line.splitlines()) == 1


def test_a_parameter_respelled_or_left_to_its_default_is_no_change(live):
    """10 minutes written 600s, the default bucket count left out: the job reads the same
    configuration, so plan finds no change and run is not refused. Before, plan called the
    dropped ``buckets: 256`` a migration to None buckets, and run refused both."""
    spec, checkpoint, tmp = live
    ck = checkpoint()
    params = {k: v for k, v in spec.params.items() if k != "buckets"}
    changed = replace(spec, params={**params, "failure_gap": "600s"})
    assert changed.params != spec.params
    p = make_plan(Target(spec.checkpoint, str(tmp / "snaps"), spec.name, changed))
    assert p["changes"] == [] and p["exit_code"] == 0
    same = definition(spec.name).comparable_params
    binding.check_and_bind(str(ck), fingerprint(changed), "spec", comparable=same)
    # a real change still counts, shown as written
    moved = replace(changed, params={**changed.params, "failure_gap": "15 minutes"})
    with pytest.raises(UserError, match="params.failure_gap='10 minutes'.*'15 minutes'"):
        binding.check_and_bind(str(ck), fingerprint(moved), "spec", comparable=same)


def test_run_refuses_a_changed_state_key_and_records_it_where_missing(tmp_path):
    old, new = {"state_key": ["user_id"]}, {"state_key": ["user_id", "device"]}
    fp = {"job": "fraud_alerts"}
    older = tmp_path / "older"  # bound before the declaration was recorded
    binding.check_and_bind(str(older), fp, "spec")
    (older / "offsets").mkdir(parents=True)
    (older / "offsets" / "0").write_text("v1\n{}\n")
    binding.check_and_bind(str(older), fp, "spec", old)  # not refused: recorded
    assert binding.read_binding(str(older))[binding.DECLARATION] == old
    with pytest.raises(UserError) as refused:
        binding.check_and_bind(str(older), fp, "spec", new)
    assert "state_key=['user_id']" in str(refused.value)
    assert "upgrade plan fraud_alerts" in str(refused.value)


def test_migrate_refuses_a_state_rewrite_and_changes_nothing(live):
    from spark_jobs.upgrade.migrate import migrate

    spec, checkpoint, tmp = live
    ck = checkpoint()
    before = (ck / "_statekeeper" / "job.json").read_bytes()
    # compatible (threshold) beside a migrate this release has no rewrite for (buckets)
    changed = replace(spec, params={**spec.params, "threshold": 3, "buckets": 128})
    with pytest.raises(UserError) as refused:
        migrate(Target(spec.checkpoint, str(tmp / "snaps"), spec.name, changed))
    assert refused.value.exit_code == ExitCode.UPGRADE_MIGRATE
    assert "params.buckets 256 -> 128 needs a state rewrite this release does not have" in str(
        refused.value
    )
    assert (ck / "_statekeeper" / "job.json").read_bytes() == before
    assert not (tmp / "snaps").exists()  # refused before the snapshot


def test_preview_refuses_a_change_migrate_refuses_before_running_it(live):
    """A shadow of such a checkpoint would meet the new code with old state: refused with the
    change's line and verdict, the shadow's binding left as the snapshot had it."""
    from spark_jobs.upgrade.preview import _bind_shadow

    spec, checkpoint, tmp = live
    ck = checkpoint(store="hdfs")
    before = (ck / "_statekeeper" / "job.json").read_bytes()
    with pytest.raises(UserError) as refused:
        _bind_shadow(Target(str(ck), str(tmp / "snaps"), spec.name, spec), str(ck), "/x/table", {})
    assert refused.value.exit_code == ExitCode.UPGRADE_MIGRATE
    assert "state_store 'hdfs' -> 'rocksdb' needs the state rewritten" in str(refused.value)
    assert (ck / "_statekeeper" / "job.json").read_bytes() == before


def test_a_kafka_replay_names_its_offsets_and_says_when_the_broker_cannot_tell(tmp_path):
    """The offsets a replay needs: from the initial offsets Spark logged for the source to the
    last committed batch's; whether the topic still holds them is the broker's to say, and an
    unreachable broker makes it unknown, said so, never assumed."""
    from spark_jobs.kafka.broker import free_port
    from spark_jobs.upgrade.replay import replay_inputs

    ck = make_checkpoint(tmp_path / "ckpt", batches=2)
    (ck / "sources" / "0" / "0").write_bytes(b'\x00v1\n{"auth":{"0":5,"1":0}}')
    for b, (p0, p1) in enumerate([(10, 4), (12, 9)]):
        text = (ck / "offsets" / str(b)).read_text().splitlines()
        text[-1] = json.dumps({"auth": {"0": p0, "1": p1}})
        (ck / "offsets" / str(b)).write_text("\n".join(text))
    from spark_jobs.checkpoints.layout import read_layout

    uri = f"kafka://127.0.0.1:{free_port()}/auth"
    (got,) = replay_inputs(read_layout(str(ck)), {"auth": uri})
    assert got["start"] == {"0": 5, "1": 0} and got["end"] == {"0": 12, "1": 9}
    assert got["complete"] is None and "did not answer" in got["unknown_because"]
    from spark_jobs.upgrade.facts import Recorded

    rec = Recorded(state_key=["user_id"], inputs=[got])
    (c,) = verdicts.compare(rec, replace(rec, state_key=["user_id", "device"]), "fraud_alerts")
    assert "offsets {'0': 5, '1': 0} to {'0': 12, '1': 9} (not known: Kafka at" in c.means


def test_a_dropped_output_column_once_migrated_is_no_change(live, monkeypatch):
    """The table keeps a column the job no longer writes (older rows hold values): after
    ``migrate`` accepted dropping it, the plan finds nothing to do, not the same change again."""
    from spark_jobs.upgrade import plan as plan_module
    from spark_jobs.upgrade.migrate import migrate

    spec, checkpoint, tmp = live
    checkpoint()
    declared = read_declared(spec)
    assert declared.output is not None
    without_ips = replace(declared, output=[f for f in declared.output if f[0] != "ips"])
    monkeypatch.setattr(plan_module, "read_declared", lambda s: without_ips)
    target = Target(spec.checkpoint, str(tmp / "snaps"), spec.name, spec)
    before = make_plan(target, str(tmp / "out"))
    assert [(c["field"], c["verdict"]) for c in before["changes"]] == [("output.ips", "compatible")]
    done = migrate(target, str(tmp / "out"))
    assert done["snapshot"] and binding.read_binding(spec.checkpoint)["upgrades"]
    after = make_plan(target, str(tmp / "out"))
    assert after["changes"] == [] and after["exit_code"] == 0


def test_one_line_refusals(live, tmp_path):
    """No checkpoint, none committed, none bound: one line each, exit 2."""
    spec, checkpoint, tmp = live
    lines = []
    for case in ("missing", "uncommitted", "unbound"):
        ck = tmp / case
        if case != "missing":
            make_checkpoint(ck, batches=1)
        if case == "uncommitted":
            (ck / "commits" / "0").unlink()
        with pytest.raises(UserError) as refused:
            read_recorded(str(ck), None, spec.inputs)
        assert refused.value.exit_code == ExitCode.USER_ERROR
        lines.append(str(refused.value))
    assert "no checkpoint at" in lines[0]
    assert "no committed batch" in lines[1]
    assert "job.json" in lines[2] and "not known" in lines[2]
    assert all(len(line.splitlines()) == 1 for line in lines)


def test_the_declared_state_is_compared_where_the_binding_recorded_it(live):
    """On the batched executor Spark stores a blob per bucket; the binding's declaration says
    what the job keeps in it, so a field added there is seen (and one per state variable for
    transformWithState)."""
    spec, checkpoint, tmp = live
    checkpoint(
        key=("_bucket",),
        declaration={"state_key": ["user_id"], "state_schema": FRAUD.state_schema},
    )
    batched = replace(spec, executor="batched")
    assert plan_of(batched, tmp) == []
    changes = plan_of(batched, tmp, state_schema=f"{FRAUD.state_schema}, devices array<string>")
    assert [(c.field, c.after, c.verdict) for c in changes] == [
        ("state.devices", "array<string>", "migrate")
    ]
    from spark_jobs.upgrade.facts import Recorded

    old = {"health": "last_seen long, status string", "held": "t long"}
    new = {"health": "last_seen long, status int", "seen": "n long"}
    rec = Recorded(state_schema=old)
    got = verdicts.compare(rec, replace(rec, state_schema=new), "service_health")
    assert [(c.field, c.verdict) for c in got] == [
        ("state.health.status", "migrate"),
        ("state.held", "migrate"),
        ("state.seen", "migrate"),
    ]


def test_run_refuses_a_changed_state_schema(tmp_path):
    fp = {"job": "fraud_alerts"}
    ck = tmp_path / "ckpt"
    binding.check_and_bind(str(ck), fp, "spec", {"state_schema": "failures binary"})
    (ck / "offsets").mkdir(parents=True)
    (ck / "offsets" / "0").write_text("v1\n{}\n")
    with pytest.raises(UserError) as refused:
        binding.check_and_bind(str(ck), fp, "spec", {"state_schema": "failures binary, d int"})
    assert "state_schema='failures binary'" in str(refused.value)
    assert "upgrade plan fraud_alerts" in str(refused.value)


def test_an_output_moved_in_the_spec_is_refused_as_run_refuses_it(live, monkeypatch):
    """The spec's ``output`` now names another table than the committed checkpoint writes: run
    refuses it (exit 4), so plan, which the DAGs run before it, refuses it in the same line
    instead of finding nothing changed. Planned against its bound table, it plans."""
    import yaml

    from spark_jobs.contract import paths

    spec, checkpoint, tmp = live
    out, moved = str(tmp / "out"), str(tmp / "moved")
    checkpoint(tables={"output": out, "quarantine": paths.quarantine_table(out)})
    specs = tmp / "specs"
    specs.mkdir()
    raw = yaml.safe_load((paths.specs_dir() / "fraud_alerts.yaml").read_text())
    raw.update(checkpoint=spec.checkpoint, output=moved)
    (specs / "fraud_alerts.yaml").write_text(yaml.safe_dump(raw))
    monkeypatch.setenv("STATEKEEPER_SPECS", str(specs))
    monkeypatch.setenv("STATEKEEPER_TABLE_ROOTS", str(tmp))
    target = Target(spec.checkpoint, str(tmp / "snaps"), spec.name, spec)
    refusals = []
    for output in (None, moved):
        with pytest.raises(UserError) as refused:
            make_plan(target, output)
        refusals.append(refused.value)
    with pytest.raises(UserError) as run_refused:
        tables = {"output": moved, "quarantine": paths.quarantine_table(moved)}
        binding.bind_tables(spec.checkpoint, tables)
    for r in refusals:
        assert r.exit_code == ExitCode.UNSAFE and str(r) == str(run_refused.value)
    assert f"bound to table {out}" in str(run_refused.value)
    assert make_plan(target, out)["exit_code"] == 0


def test_the_declared_side_of_a_plan_imports_no_spark():
    """``upgrade plan`` reads files only: the job's declaration and fingerprint come without
    PySpark (the DAGs' plan gate runs it before every run)."""
    loaded = packages_after(
        "from spark_jobs.contract.spec import load_spec\n"
        "from spark_jobs.upgrade.declared import read_declared\n"
        "facts = read_declared(load_spec('fraud_alerts'))\n"
        "assert facts.fingerprint['params']\n"
    )
    assert not {"pyspark", "pandas"} & set(loaded), sorted(loaded)
