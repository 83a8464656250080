"""The jobs: every module of this package that defines ``JOB`` (a
:class:`~spark_jobs.jobs.declaration.JobDef`) is one job. Nothing lists them by hand.

Jobs kept outside this package join through ``STATEKEEPER_JOB_MODULES``: a comma-separated list
of dotted module names, imported from ``sys.path`` like any installed code. Such a module may
declare a job this package also declares: its ``JOB`` replaces the packaged one (a job's new
code shipped beside the package; ``upgrade plan`` says what it does to the live state), while two
of these modules declaring one name are refused. It is an environment
variable on purpose: whoever deploys the Spark side sets it (as they set ``PYTHONPATH``), while
specs and DAG params, which name data paths, can never make a run import code.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spark_jobs.contract.spec import JobSpec
    from spark_jobs.jobs.declaration import JobDef

EXTRA_MODULES_ENV = "STATEKEEPER_JOB_MODULES"


def definitions() -> dict[str, JobDef]:
    """Every job by name: this package's, then those ``STATEKEEPER_JOB_MODULES`` names."""
    extra = os.environ.get(EXTRA_MODULES_ENV, "")
    return _discover(tuple(n.strip() for n in extra.split(",") if n.strip()))


def definition(name: str) -> JobDef:
    """The declaration of job ``name``; a one-line UserError when no module declares it.

    A packaged job is read from its own module alone when no deployed module could replace it:
    importing every job costs a command about 0.7 s (one job's logic imports pandas), which
    ``upgrade plan`` and ``checkpoint validate`` pay for nothing, each DAG run."""
    from spark_jobs.contract.errors import UserError

    if not os.environ.get(EXTRA_MODULES_ENV, "").strip():
        job = _own(name)
        if job is not None:
            return job
    jobs = definitions()
    if name not in jobs:
        raise UserError(
            f"job {name!r} has a spec but no implementation (a module defining JOB in "
            f"spark_jobs/jobs or in {EXTRA_MODULES_ENV}); jobs: {', '.join(sorted(jobs))}"
        )
    return jobs[name]


def fingerprint(spec: JobSpec) -> dict[str, Any]:
    """What the checkpoint's binding records of ``spec``, run and ``upgrade plan`` alike. A
    parameter the job does not take, or of the wrong type, is refused here in one line: before,
    plan called it ``compatible`` and a job that never reads its params ran on with it. Here,
    not in the runner: ``upgrade plan`` reads it without importing Spark."""
    job = definition(spec.name)
    job.parameters(spec)
    return {**spec.state_fingerprint(), **job.fingerprint(spec)}


@cache
def _own(name: str) -> JobDef | None:
    """The JOB of this package's module named ``name``, when it declares job ``name``."""
    from spark_jobs.jobs.declaration import JobDef

    if name not in {m.name for m in pkgutil.iter_modules(__path__)}:
        return None
    job = getattr(importlib.import_module(f"{__name__}.{name}"), "JOB", None)
    return job if isinstance(job, JobDef) and job.name == name else None


@cache
def _discover(extra: tuple[str, ...]) -> dict[str, JobDef]:
    from spark_jobs.contract.errors import UserError
    from spark_jobs.jobs.declaration import JobDef

    found: dict[str, JobDef] = {}
    from_extra: set[str] = set()
    own = [f"{__name__}.{m.name}" for m in pkgutil.iter_modules(__path__)]
    for module_name in [*own, *extra]:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            if module_name in own:
                raise
            raise UserError(f"{EXTRA_MODULES_ENV}: cannot import {module_name}: {exc}") from exc
        job = getattr(module, "JOB", None)
        if not isinstance(job, JobDef):
            if module_name in extra:
                raise UserError(f"{EXTRA_MODULES_ENV}: module {module_name} defines no JOB")
            continue
        if job.name in found and (module_name in own or job.name in from_extra):
            raise UserError(f"job {job.name!r} is declared twice (again in {module_name})")
        if module_name in extra:  # a deployed module may replace a packaged job: its new code
            from_extra.add(job.name)
            _ship_by_value(module)
        found[job.name] = job
    return found


def _ship_by_value(module: object) -> None:
    """The module's functions travel to the Python workers with the job (pickled by value), so a
    job's state function runs there without the module being installed on every executor."""
    try:
        from pyspark import cloudpickle
    except ImportError:  # no Spark here (a tool reading declarations only)
        return
    cloudpickle.register_pickle_by_value(module)
