"""The supervisor's ``stop`` on real processes: it signals only the process it recorded (start
time and command line from /proc, so a reused pid or a restored ``supervisor.json`` is left
alone), never a lock holder doing a rollback or restore, and a driver gets SIGTERM first (it stops
between batches), SIGKILL only after the grace period."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "plugins"))

from spark_jobs.contract import procs  # noqa: E402
from statekeeper import driver  # noqa: E402

pytestmark = pytest.mark.unit

# A stand-in driver: holds the checkpoint lock like the runner (same lock code, same "spark_jobs"
# in its command line), and on SIGTERM leaves a mark and exits 0 (or ignores it, when told).
HOLDER = """
import pathlib, signal, sys, time
from spark_jobs.contract.lock import JobLock
ck, purpose, on_term = sys.argv[1], sys.argv[2], sys.argv[3]
def term(*_):
    pathlib.Path(ck + ".sigterm").write_text("x")
    if on_term == "exit":
        sys.exit(0)
    if on_term == "exec":  # the pid becomes another program (as a reused pid would be)
        import os
        os.execv("/bin/sleep", ["sleep", "60"])
signal.signal(signal.SIGTERM, term)
with JobLock(ck, job="service_health", purpose=purpose):
    print("locked", flush=True)
    time.sleep(120)
"""


def _start(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        cwd=os.environ["STATEKEEPER_HOME"],
    )


def _holder(ck: Path, purpose: str, on_term: str = "exit") -> subprocess.Popen:
    proc = _start([sys.executable, "-c", HOLDER, str(ck), purpose, on_term])
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def _end(*ps: subprocess.Popen) -> None:
    for p in ps:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=10)


def test_stop_never_signals_a_pid_that_is_not_the_recorded_driver(tmp_path):
    ck = str(tmp_path / "ckpt")
    stranger = _start(["sleep", "300"])  # any process that got the pid since
    try:
        host, pid = socket.gethostname(), stranger.pid
        reused = {"pid": pid, "pgid": pid, "host": host, "start": procs.start_time(pid) - 7}
        unrecorded = {"pid": pid, "pgid": pid, "host": host}  # an old file, no start time
        not_a_driver = {**reused, "start": procs.start_time(pid)}  # right process, not a driver
        for state in (reused, unrecorded, not_a_driver):
            said = driver.stop(ck, state, grace=1)
            assert said.startswith("nothing stopped") and f"pid {pid}" in said, said
            assert not driver.launched_pid_alive(state)
        assert "is now another process" in driver.stop(ck, reused, grace=1)
        assert "not a Statekeeper driver" in driver.stop(ck, not_a_driver, grace=1)
        time.sleep(0.3)
        assert stranger.poll() is None  # never signalled
    finally:
        _end(stranger)


def test_stop_leaves_a_rollback_alone_and_stops_a_run_with_sigterm_first(tmp_path):
    ck = tmp_path / "ckpt"
    rollback = _holder(ck, "rollback")
    try:
        said = driver.stop(str(ck), {}, grace=1)
        assert said.startswith("not stopping") and "rollback" in said, said
        time.sleep(0.3)
        assert rollback.poll() is None and not Path(f"{ck}.sigterm").exists()
    finally:
        _end(rollback)

    run = _holder(ck, "run")  # a driver that stops cleanly on SIGTERM
    try:
        said = driver.stop(str(ck), {}, grace=20)
        assert said == f"stopped driver {run.pid} (SIGTERM)", said
        assert run.wait(timeout=10) == 0 and Path(f"{ck}.sigterm").exists()
    finally:
        _end(run)

    Path(f"{ck}.sigterm").unlink()
    stuck = _holder(ck, "run", on_term="ignore")  # SIGKILL only after the grace period
    try:
        started = time.time()
        said = driver.stop(str(ck), {}, grace=2)
        assert said.startswith(f"killed driver {stuck.pid} after 2s"), said
        assert time.time() - started >= 2 and Path(f"{ck}.sigterm").exists()
        assert stuck.wait(timeout=10) == -signal.SIGKILL
    finally:
        _end(stuck)


def test_sigkill_after_the_grace_rechecks_who_the_pid_is(tmp_path):
    ck = tmp_path / "ckpt"
    # On SIGTERM the driver's pid turns into `sleep 60`: past the grace period that pid is no
    # longer the driver (not spark_jobs), so it is not killed.
    turned = _holder(ck, "run", on_term="exec")
    try:
        said = driver.stop(str(ck), {}, grace=2)
        assert said.startswith("nothing killed after 2s"), said
        assert "not a Statekeeper driver" in said, said
        assert turned.poll() is None  # the process the pid now names was left alone
        assert procs.cmdline(turned.pid).startswith("sleep")
    finally:
        _end(turned)
