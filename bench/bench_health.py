"""The Streaming health API's response time on 50 jobs x 10,000 batches of progress.

Builds the synthetic data once (50 job specs, each checkpoint with a 10,000-batch progress log of
Spark-shaped records, ~25 MB each, its offsets/commits, a quarantine log and Delta commits), starts
a real ``airflow api-server`` with the plugin (simple auth manager, a real JWT), and times HTTP
requests to it: the headline. Then the same routes in-process (ASGI, no auth) for comparison.

    python -m bench --only health-api      # or: python -m bench.bench_health [--jobs 50]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

LIMIT_MS = 200.0
USER, PASSWORD = "bench", "statekeeper-bench"
DISTINCT = 5  # distinct histories generated; the other jobs get copies (same size, same cost)


def build(work: Path, jobs: int, batches: int) -> Path:
    """Specs and data for ``jobs`` jobs under ``work``; reused when already built."""
    from bench.synthetic_progress import iso, write_history

    marker = work / "built.json"
    want = {"jobs": jobs, "batches": batches}
    if marker.exists() and json.loads(marker.read_text()) == want:
        return work
    shutil.rmtree(work, ignore_errors=True)
    specs, data = work / "specs", work / "data"
    specs.mkdir(parents=True)
    end = time.time()
    for i in range(jobs):
        job = f"job{i:02d}"
        mode = "continuous" if i % 5 == 4 else "catch-up"
        (specs / f"{job}.yaml").write_text(
            f"name: {job}\nmode: {mode}\ninputs: {{clickstream: {data}/landing/{job}}}\n"
            f"output: {data}/tables/{job}\ncheckpoint: {data}/checkpoints/{job}\n"
            "watermark: 10 minutes\ntrigger: processing-time:30s\n"
        )
        ckpt = data / "checkpoints" / job
        if i < DISTINCT:
            write_history(ckpt, job, batches, end, seed=i, keys=i % 2 == 0)
        else:
            shutil.copytree(data / "checkpoints" / f"job{i % DISTINCT:02d}", ckpt)
        qckpt = ckpt / "_statekeeper" / "quarantine"
        shutil.rmtree(qckpt, ignore_errors=True)
        qtail = write_history(qckpt, f"{job}__quarantine", 20, end, seed=100 + i, keys=False)
        log = data / "tables" / job / "_quarantine" / "_delta_log"
        log.mkdir(parents=True)
        for rec in qtail:
            info = {
                "timestamp": int(end * 1000),
                "operation": "STREAMING UPDATE",
                "operationParameters": {"queryId": rec["id"], "epochId": str(rec["batchId"])},
                "operationMetrics": {"numOutputRows": str(rec["batchId"] % 4)},
            }
            (log / f"{rec['batchId']:020d}.json").write_text(json.dumps({"commitInfo": info}))
    marker.write_text(json.dumps({**want, "built_at": iso(end)}))
    return work


def timed(call: Callable[[], Any], n: int) -> dict[str, float]:
    """Milliseconds of ``n`` calls after one untimed warm-up: median, p95, max, and the cold one."""
    t = time.perf_counter()
    call()
    cold = (time.perf_counter() - t) * 1000
    times = []
    for _ in range(n):
        t = time.perf_counter()
        call()
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return {
        "cold_ms": round(cold, 1),
        "median_ms": round(statistics.median(times), 1),
        "p95_ms": round(times[max(0, int(len(times) * 0.95) - 1)], 1),
        "max_ms": round(times[-1], 1),
        "n": n,
    }


ROUTES = {  # name -> path under /statekeeper
    "health (all jobs)": "/api/health",
    "progress limit=100": "/api/jobs/job00/progress?limit=100",
    "series last 100": "/api/jobs/job00/series",
    "series all (10k -> 300 points)": "/api/jobs/job00/series?range=all",
    "overview page": "/",
    "job page": "/jobs/job00",
}


def over_http(work: Path, n: int) -> dict[str, Any]:
    import httpx

    from scripts.local_airflow import airflow_env, api_server, simple_auth_env, token

    home = work / "airflow"
    home.mkdir(exist_ok=True)
    env = airflow_env(
        home,
        data=work / "data",
        STATEKEEPER_SPECS=str(work / "specs"),
        **simple_auth_env(home, USER, PASSWORD),
    )
    exe = str(Path(sys.executable).parent / "airflow")
    done = subprocess.run([exe, "db", "migrate"], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"airflow db migrate: {done.stderr[-1500:]}")
    out: dict[str, Any] = {}
    with api_server(home, env) as base:
        headers = {"Authorization": f"Bearer {token(base, USER, PASSWORD)}"}
        with httpx.Client(base_url=f"{base}/statekeeper", headers=headers, timeout=60) as client:
            assert client.get("/api/health", headers={"Authorization": ""}).status_code == 401
            for name, path in ROUTES.items():

                def call(path: str = path) -> None:
                    r = client.get(path)
                    r.raise_for_status()

                out[name] = timed(call, n)
            out["health_bytes"] = len(client.get("/api/health").content)
    return out


def in_process(work: Path, n: int) -> dict[str, Any]:
    from fastapi.testclient import TestClient

    from statekeeper import health_memo
    from statekeeper.health_app import create_app

    os.environ["STATEKEEPER_SPECS"] = str(work / "specs")
    health_memo._memo.clear()
    client = TestClient(create_app(auth=False))
    out = {}
    for name, path in ROUTES.items():

        def call(path: str = path) -> None:
            client.get(path).raise_for_status()

        out[name] = timed(call, n)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_health", description=__doc__)
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--batches", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=30, help="timed requests per route")
    parser.add_argument("--smoke", action="store_true", help="5 jobs x 500 batches")
    parser.add_argument("--work", help="where the data goes (default .data/bench-health)")
    args = parser.parse_args(argv)
    from spark_jobs.contract import paths

    if args.smoke:
        args.jobs, args.batches, args.requests = 5, 500, 5
    work = Path(
        args.work or paths.data_dir() / ("bench-health-smoke" if args.smoke else "bench-health")
    )
    t = time.perf_counter()
    build(work, args.jobs, args.batches)
    size = sum(f.stat().st_size for f in work.rglob("progress.jsonl"))
    print(
        f"health-api: {args.jobs} jobs x {args.batches:,} batches, {size / 1e9:.2f} GB of progress "
        f"logs ready in {time.perf_counter() - t:.0f} s ({work})",
        flush=True,
    )
    results = {"jobs": args.jobs, "batches": args.batches, "progress_bytes": size}
    results["http"] = over_http(work, args.requests)
    results["in_process"] = in_process(work, args.requests)
    print(f"{'route':<32}{'real server (HTTP, JWT)':>34}{'in-process ASGI':>30}")
    print(f"{'':<32}{'median / p95 / cold ms':>34}{'median / p95 / cold ms':>30}")
    for name in ROUTES:
        h, p = results["http"][name], results["in_process"][name]
        print(
            f"{name:<32}{h['median_ms']:>18} / {h['p95_ms']:>6} / {h['cold_ms']:>6}"
            f"{p['median_ms']:>14} / {p['p95_ms']:>6} / {p['cold_ms']:>6}"
        )
    headline = results["http"]["health (all jobs)"]
    ok = headline["p95_ms"] < LIMIT_MS
    print(
        f"GET /statekeeper/api/health over HTTP: median {headline['median_ms']} ms, p95 "
        f"{headline['p95_ms']} ms for {args.jobs} jobs -> {'PASS' if ok else 'FAIL'} (< {LIMIT_MS:.0f} ms)"
    )
    out = (
        paths.project_root()
        / "bench"
        / "results"
        / ("health_api_smoke.json" if args.smoke else "health_api.json")
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"results: {out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
