"""What a fresh interpreter has imported after running some code: the probe behind the tests
that hold a module (the contract, the path resolver, a plan's declared side) to importing
neither Spark, Airflow nor pandas."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def packages_after(code: str, env: Mapping[str, str] | None = None) -> dict[str, list[str]]:
    """Run ``code`` in a new interpreter at the project root (``env``: its whole environment,
    default this one's); every module it then holds, by top-level package."""
    probe = (
        f"{code}\n"
        "import json as _json, sys as _sys\n"
        "_out = {}\n"
        "for _m in sorted(_sys.modules):\n"
        "    _out.setdefault(_m.split('.')[0], []).append(_m)\n"
        "print(_json.dumps(_out))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env=None if env is None else dict(env),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])
