"""The "Streaming health" app, mounted by Airflow's api-server under ``/statekeeper``.

Airflow does not authenticate plugin apps: every route here, the OpenAPI schema included,
depends on Airflow's own ``get_user``, which reads the JWT from the ``Authorization: Bearer``
header or the UI's ``_token`` cookie (so the page works inside the UI's iframe); no token: 401.
What a user sees is then asked of the configured auth manager per job, against the job's own DAGs
(``dag_ids.of_job``): the list and the page show only the jobs whose DAGs the user may read, and
a job's routes answer 403 for any other. (Airflow's ``requires_access_dag`` would take the DAG
from the query string, so read access to one DAG would show every job.)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from spark_jobs.contract.errors import UserError
from spark_jobs.contract.progress_log import BatchProgress, Heartbeat, IdleEvent, ProgressLog
from spark_jobs.contract.spec import JobSpec
from statekeeper import dag_ids, health_history, health_page, health_report

STATIC = Path(__file__).resolve().parent / "static"
STATIC_FILES = {"health.css": "text/css", "icon.svg": "image/svg+xml"}
MAX_RECORDS = 1000  # raw records per progress request: a record is 2-3 KB
RANGES: dict[str, tuple[str, float | None, int | None]] = {  # key -> (label, seconds, batches)
    "last100": ("last 100 batches", None, 100),
    "1h": ("1 hour", 3600.0, None),
    "6h": ("6 hours", 6 * 3600.0, None),
    "24h": ("24 hours", 24 * 3600.0, None),
    "7d": ("7 days", 7 * 86400.0, None),
    "all": ("all", None, None),
}
DEFAULT_RANGE = "last100"


class Access:
    """The jobs a request may see: those whose own DAGs its user may read (``user`` None: the
    app runs without auth, for tools that call it in-process)."""

    def __init__(self, user: Any = None) -> None:
        self.user = user

    def visible(self, specs: Sequence[JobSpec]) -> list[JobSpec]:
        if self.user is None:
            return list(specs)
        # Imported here, not at module level: Airflow's plugin loader imports this module in
        # every process (scheduler, workers), and the api-server's app pulls in the API and ORM.
        from airflow.api_fastapi.app import get_auth_manager

        wanted = {d for s in specs for d in dag_ids.of_job(s)}
        # One call for every job: auth managers answer a batch in one go where they can.
        readable = get_auth_manager().filter_authorized_dag_ids(
            dag_ids=wanted, user=self.user, method="GET"
        )
        return [s for s in specs if readable.intersection(dag_ids.of_job(s))]

    def job(self, job: str) -> JobSpec:
        """The spec of ``job`` when this user may read one of its DAGs: 404 unknown, 403 not."""
        try:
            spec = health_report.spec_of(job)
        except UserError as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from exc
        if not self.visible([spec]):
            raise HTTPException(
                status_code=403,
                detail=f"no access to job {job!r}: it needs read access to one of its DAGs "
                f"({', '.join(dag_ids.of_job(spec))})",
            )
        return spec


async def current_access(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(HTTPBearer(auto_error=False))],
) -> Access:
    """The request's :class:`Access`: Airflow's ``get_user`` resolves the user (401 without a
    token, 403 with an invalid one); everyone when the app was created without auth."""
    if not request.app.state.statekeeper_auth:
        return Access()
    from airflow.api_fastapi.core_api import security

    return Access(await security.get_user(request, None, bearer))


Allowed = Annotated[Access, Depends(current_access)]


def _time(value: str | None, name: str) -> float | None:
    """An ISO-8601 time (``2026-11-23T09:00:00Z``) or epoch seconds, one a calendar holds."""
    if value is None or value == "":
        return None
    try:
        seconds = float(value)
        # 1e20, inf or nan parse as floats but name no instant: every reader of the range
        # turns it into a date, so it is refused here rather than a 500 there.
        datetime.fromtimestamp(seconds, UTC)
        return seconds
    except (ValueError, OverflowError, OSError):
        pass
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise HTTPException(
            status_code=400,
            detail=f"{name}={value!r} is not a time; use ISO-8601 (2026-11-23T09:00:00Z) or "
            "epoch seconds between 1970 and 9999",
        ) from None
    return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp()  # naive times are UTC


def _range(key: str, now: float) -> tuple[float | None, int | None]:
    if key not in RANGES:
        raise HTTPException(
            status_code=400, detail=f"range={key!r} is unknown; use one of {', '.join(RANGES)}"
        )
    _, seconds, batches = RANGES[key]
    return (now - seconds if seconds else None), batches


# The API's and the page's routes; every one depends on ``Allowed`` (auth and per-job access).
router = APIRouter()


@router.get("/api/openapi.json", include_in_schema=False)
def openapi(request: Request, access: Allowed) -> dict[str, Any]:
    return request.app.openapi()


@router.get("/api/health")
def api_health(access: Allowed) -> list[dict[str, Any]]:
    """One object per job the user may read (a spec in include/jobs)."""
    return health_report.health(jobs=access.visible(health_report.specs()))


@router.get("/api/jobs/{job}/progress")
def api_progress(
    job: str,
    access: Allowed,
    limit: Annotated[int, Query(ge=1, le=MAX_RECORDS)] = 100,
    since: str | None = None,
    until: str | None = None,
    idle: bool = False,
) -> list[dict[str, Any]]:
    """The job's newest ``limit`` progress records in [since, until], oldest first."""
    spec = access.job(job)
    kinds = (BatchProgress, Heartbeat, IdleEvent) if idle else (BatchProgress, Heartbeat)
    since_t, until_t = _time(since, "since"), _time(until, "until")
    records = ProgressLog(spec.checkpoint).tail(limit, since=since_t, until=until_t, kinds=kinds)
    raw = [r.raw for r in records]  # exactly as logged
    return health_history.with_older(spec, raw, limit, since_t, until_t)  # rotated-away history


@router.get("/api/jobs/{job}/series")
def api_series(
    job: str,
    access: Allowed,
    range: str = DEFAULT_RANGE,  # noqa: A002 - the query parameter's name
    since: str | None = None,
    until: str | None = None,
    points: Annotated[int, Query(ge=2, le=2000)] = 300,
) -> dict[str, Any]:
    """Chart points (downsampled) over a range: last100, 1h, 6h, 24h, 7d, all, or since/until."""
    spec = access.job(job)
    start, last = _range(range, time.time())
    if since is not None:
        start, last = _time(since, "since"), None
    return health_history.series(spec, start, _time(until, "until"), last, points)


@router.get("/", response_class=HTMLResponse)
def page(request: Request, access: Allowed) -> str:
    rows = health_report.health(jobs=access.visible(health_report.specs()))
    return health_page.overview(rows, base=request.scope.get("root_path", ""))


@router.get("/jobs/{job}", response_class=HTMLResponse)
def job_page(
    request: Request,
    job: str,
    access: Allowed,
    range: str = DEFAULT_RANGE,  # noqa: A002
) -> str:
    spec = access.job(job)
    now = time.time()
    start, last = _range(range, now)
    data = health_history.series(spec, start, None, last, 300)
    row = health_report.job_row(spec, now)
    ranges = {k: v[0] for k, v in RANGES.items()}
    return health_page.job(row, data, range, ranges, base=request.scope.get("root_path", ""))


@router.get("/static/{name}")
def static(name: str, access: Allowed) -> FileResponse:
    if name not in STATIC_FILES:
        raise HTTPException(status_code=404, detail=f"no static file {name!r}")
    return FileResponse(STATIC / name, media_type=STATIC_FILES[name])


def create_app(auth: bool = True) -> FastAPI:
    """The app; ``auth=False`` only for tools that call the report functions in-process."""
    app = FastAPI(
        title="Statekeeper streaming health",
        description="Health of the streaming jobs, read from their progress logs and checkpoints.",
        # FastAPI serves these outside every dependency: off, and the schema served by a route.
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.statekeeper_auth = auth
    app.include_router(router)
    return app
