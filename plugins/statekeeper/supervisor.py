"""Keep one processing-time query alive per continuous job, waiting in triggers.

One task run = one watch period. The task looks at the checkpoint: a driver that holds the job
lock (or one it launched that is still starting) is *attached to*, never duplicated; only when no
driver holds the checkpoint does it launch one (spark-submit started in its own session, so the
driver outlives the task). It then defers to ``DriverWatchTrigger``; a dead or stalled driver is
stopped and relaunched with exponential backoff, up to ``max_restarts`` per run.

Why two drivers cannot happen: the launch decision runs under an flock on
``_statekeeper/supervisor.lock`` and counts a launched pid that is still alive as a driver even
before it took the job lock; a retried, killed or timed-out task leaves the driver running and the
next try attaches to it; and the runner itself refuses a second writer (exit code 3).

Why a crash loop ends: every restart is recorded in ``supervisor.json`` beside the checkpoint, so
the count outlives task runs; more than ``max_restarts`` within ``restart_window`` seconds fails
the task without retries (``RestartBudgetSpent``: the failure alerts), and later runs keep failing
without launching until the window has moved past the restarts.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any, TypeVar

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from spark_jobs.contract import procs
from spark_jobs.contract.errors import LockHeld
from spark_jobs.contract.lock import FileLock, is_maintenance
from spark_jobs.contract.spec import JobSpec
from statekeeper import driver
from statekeeper.params import check_bound, check_path_params, rendered
from statekeeper.submit import resolve_job, run_arguments
from statekeeper.triggers import BackoffTrigger, DriverWatchTrigger

MAX_BACKOFF = 600.0


class RestartBudgetSpent(AirflowFailException):
    """The driver needed more restarts within the window than allowed: fail (and alert), no retry."""


@contextmanager
def launch_lock(checkpoint: str) -> Iterator[bool]:
    """Held while deciding to launch; False when another supervisor is deciding right now."""
    lock = FileLock(driver.statekeeper_dir(checkpoint) / "supervisor.lock")
    try:
        lock.acquire()
    except LockHeld:
        yield False
        return
    try:
        yield True
    finally:
        lock.release()


T = TypeVar("T")


def _given(value: Any, kind: Callable[[Any], T], default: T) -> T:
    """A templated operator argument as ``kind``, or the spec's ``default`` when it rendered empty."""
    text = rendered(value)
    return default if text is None else kind(text)


class StreamingSupervisorOperator(BaseOperator):
    """Supervise (or stop) the continuous driver of ``job``.

    :param action: ``supervise``, ``stop`` (kept until ``start``) or ``start`` (templated).
    :param trigger: the query's trigger, e.g. ``processing-time:30s``; empty = the spec's.
    :param overrides: ``{"input": ..., "output": ..., "checkpoint": ...}``, empty = the spec's.
    :param watch_seconds: how long one task run watches before it ends (the next run takes over).
    :param restart_backoff, max_restarts, restart_window: empty = the spec's ``supervise:`` block.
    """

    template_fields: Sequence[str] = (
        "action",
        "trigger",
        "overrides",
        "watch_seconds",
        "restart_backoff",
        "max_restarts",
        "restart_window",
        "poll_seconds",
    )
    ui_color = "#cce5ff"

    def __init__(
        self,
        *,
        job: str,
        action: str = "supervise",
        trigger: str = "",
        overrides: dict[str, str] | None = None,
        watch_seconds: Any = 600,
        restart_backoff: Any = None,
        max_restarts: Any = None,
        restart_window: Any = None,
        poll_seconds: Any = 5,
        conn_id: str = "spark_default",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.job = job
        self.action = action
        self.trigger = trigger
        self.overrides = overrides or {}
        self.watch_seconds = watch_seconds
        self.restart_backoff = restart_backoff
        self.max_restarts = max_restarts
        self.restart_window = restart_window
        self.poll_seconds = poll_seconds
        self.conn_id = conn_id

    # -- what the job looks like -------------------------------------------------------------
    def _spec(self) -> JobSpec:
        """The job's spec with this run's overrides and trigger: loaded once per step."""
        return resolve_job(self.job, self.overrides, self.trigger)

    def _thresholds(self, spec: JobSpec) -> dict[str, Any]:
        from statekeeper.health import Thresholds

        return asdict(Thresholds.from_spec(spec.supervise, spec.trigger.interval_seconds))

    # -- the steps ---------------------------------------------------------------------------
    def _settings(self, spec: JobSpec) -> dict[str, float]:
        """This run's supervisor settings (templated, else the spec's), each within its bounds."""
        return {
            "poll_seconds": check_bound("poll_seconds", float(self.poll_seconds)),
            "watch_seconds": check_bound("watch_seconds", float(self.watch_seconds)),
            "restart_backoff": check_bound(
                "restart_backoff",
                _given(self.restart_backoff, float, spec.supervise.restart_backoff),
            ),
            "max_restarts": check_bound(
                "max_restarts", _given(self.max_restarts, float, float(spec.supervise.max_restarts))
            ),
            "restart_window": check_bound(
                "restart_window",
                _given(self.restart_window, float, spec.supervise.restart_window),
            ),
        }

    def execute(self, context: Any) -> dict[str, Any]:
        check_path_params(context, rendered(self.job))
        spec = self._spec()
        settings = self._settings(spec)
        if str(self.action) == "stop":
            # Kept in supervisor.json before anything is signalled: every later run (a new task,
            # a restarted triggerer) reads it and launches nothing until action=start.
            state = driver.ask_stop(spec.checkpoint, self._who(context))
            if driver.holder(spec.checkpoint) is None and not driver.launched_pid_alive(state):
                return {"action": "stop", "result": "no driver was running"}
            return {"action": "stop", "result": driver.stop(spec.checkpoint, state)}
        if str(self.action) == "start":
            driver.lift_stop(spec.checkpoint)
        if spec.trigger.available_now:
            raise AirflowException(
                f"job {self.job}: a supervised query needs a processing-time trigger, not "
                f"{spec.trigger}; set the trigger param (e.g. processing-time:30s)"
            )
        run = {
            "watch_until": time.time() + settings["watch_seconds"],
            "restarts": 0,
            "launched": [],
            "events": [],
        }
        return self._step(context, run, spec)

    @staticmethod
    def _who(context: Any) -> str:
        try:
            return f"{context['dag'].dag_id}/{context['run_id']}/try{context['ti'].try_number}"
        except (KeyError, TypeError, AttributeError):
            return "a task run outside a DAG run"

    def _stopped(self, run: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
        stop = state["stop"]
        result = (
            f"stopped by action=stop ({stop.get('by')}, {stop.get('asked_at_utc')}); nothing "
            "launched. Trigger the DAG with action=start to supervise again"
        )
        self.log.info("job %s: %s", self.job, result)
        return {"job": self.job, "result": result, **run}

    def _budget_spent(
        self, spent: int, window: float, budget: int, ckpt: str
    ) -> RestartBudgetSpent:
        return RestartBudgetSpent(
            f"job {self.job}: driver restarted {spent} times in the last "
            f"{window / 60:.0f} min (max_restarts={budget}); not launching "
            f"again until the window passes; see {driver.DRIVER_LOG} under "
            f"{driver.statekeeper_dir(ckpt)}"
        )

    def _step(self, context: Any, run: dict[str, Any], spec: JobSpec) -> dict[str, Any]:
        ckpt = spec.checkpoint
        with launch_lock(ckpt) as mine:
            state = driver.read_state(ckpt)
            if state.get("stop"):
                return self._stopped(run, state)
            info = driver.holder(ckpt)
            starting = driver.launched_pid_alive(state)
            if info is not None or starting or not mine:
                who = info or {"pid": state.get("pid"), "purpose": "starting"}
                if is_maintenance(info):
                    self.log.info("maintenance holds the checkpoint (%s); waiting for it", who)
                else:
                    self.log.info("a driver is already there (%s); attaching, not launching", who)
                run["events"].append({"at": time.time(), "what": "attached", "pid": who.get("pid")})
                return self._watch(run, ckpt, spec, state.get("launched_at"), state.get("pid"))
            settings = self._settings(spec)
            window, budget = settings["restart_window"], int(settings["max_restarts"])
            spent = driver.restarts_in_window(state, window)
            if len(spent) > budget:
                raise self._budget_spent(len(spent), window, budget, ckpt)
            wait = run.get("not_before", 0) - time.time()
            if wait > 0:
                self.log.info("backing off %.0fs before relaunching", wait)
                self.defer(
                    trigger=BackoffTrigger(run["not_before"], echo={"run": run}),
                    method_name="resume_step",
                )
            pid = self._launch(spec)
            now = time.time()
            state = {
                "pid": pid,
                "pgid": pid,
                "start": procs.start_time(pid),  # who this pid is: see spark_jobs.contract.procs
                "host": socket.gethostname(),
                "launched_at": now,
                "launches": int(state.get("launches", 0)) + 1,
                "by": self._who(context),
                "restarts": spent,
            }
            driver.write_state(ckpt, state)
        run["launched"].append(pid)
        run["events"].append({"at": now, "what": "launched", "pid": pid})
        return self._watch(run, ckpt, spec, now, pid)

    def _launch(self, spec: JobSpec) -> int:
        from statekeeper.hooks import SparkJobsSubmitHook

        hook = SparkJobsSubmitHook(conn_id=self.conn_id, name=f"statekeeper-{spec.name}")
        log = driver.statekeeper_dir(spec.checkpoint) / driver.DRIVER_LOG
        return hook.launch(run_arguments(spec), log)

    def _watch(
        self, run: dict[str, Any], ckpt: str, spec: JobSpec, started_at: float | None, pid: Any
    ) -> Any:
        self.defer(
            trigger=DriverWatchTrigger(
                checkpoint=ckpt,
                thresholds=self._thresholds(spec),
                watch_until=run["watch_until"],
                started_at=started_at,
                pid=pid,
                poll_seconds=self._settings(spec)["poll_seconds"],
                echo={"run": run},
            ),
            method_name="resume_watch",
        )

    def resume_step(self, context: Any, event: dict[str, Any]) -> dict[str, Any]:
        return self._step(context, event["echo"]["run"], self._spec())

    def resume_watch(self, context: Any, event: dict[str, Any]) -> dict[str, Any]:
        run = event["echo"]["run"]
        health = event.get("health") or {}
        for w in health.get("warnings") or []:
            self.log.warning("job %s: %s", self.job, w)
        if event.get("status") == "watch_over":
            self.log.info(
                "job %s: %s after the watch (%s)",
                self.job,
                health.get("verdict"),
                health.get("reason"),
            )
            return {"job": self.job, "health": health, **run}
        spec = self._spec()
        state = driver.read_state(spec.checkpoint)
        if state.get("stop"):  # asked while this run watched: not a crash, nothing to relaunch
            return self._stopped(run, state)
        if event.get("status") == "maintenance_over":
            # The driver was stopped for the maintenance (or crashed before it): no restart is
            # counted and no backoff is due; launch (or attach to whoever holds it now).
            self.log.info("job %s: maintenance is over; launching again", self.job)
            run["events"].append({"at": time.time(), "what": "maintenance_over"})
            return self._step(context, run, spec)
        self.log.warning(
            "job %s is %s: %s; restarting", self.job, health.get("verdict"), health.get("reason")
        )
        if health.get("verdict") == "stalled":
            self.log.info(driver.stop(spec.checkpoint, state))
        run["restarts"] += 1
        settings = self._settings(spec)
        window, budget = settings["restart_window"], int(settings["max_restarts"])
        spent = driver.record_restart(spec.checkpoint, window)
        if spent > budget:  # checked as it is counted, whichever way the next step goes
            raise self._budget_spent(spent, window, budget, spec.checkpoint)
        run["events"].append(
            {"at": time.time(), "what": health.get("verdict"), "why": health.get("reason")}
        )
        first = self._settings(spec)["restart_backoff"]
        backoff = min(first * 2 ** (run["restarts"] - 1), MAX_BACKOFF)
        run["not_before"] = time.time() + backoff
        return self._step(context, run, spec)
