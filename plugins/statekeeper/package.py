"""The ``spark_jobs`` package as one zip for ``spark-submit --py-files``.

Built from the sources on demand, named by a hash of their content, so every submit ships exactly
the code that is checked out and a rebuild happens only when a file changed.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

from spark_jobs.contract.paths import project_root

_FIXED_TIME = (2020, 1, 1, 0, 0, 0)  # the same sources give the same zip, byte for byte


def _sources(pkg: Path) -> list[Path]:
    return sorted(
        p
        for p in pkg.rglob("*")
        if p.is_file()
        and p.suffix in (".py", ".yaml", ".json", ".sql")
        and "__pycache__" not in p.parts
    )


def spark_jobs_zip(out_dir: Path | None = None) -> str:
    """The path of ``spark_jobs-<hash>.zip`` (made if missing) under ``.cache/pyfiles``."""
    root = project_root()
    pkg = root / "spark_jobs"
    files = _sources(pkg)
    digest = hashlib.sha256()
    for f in files:
        digest.update(str(f.relative_to(root)).encode())
        digest.update(f.read_bytes())
    out_dir = out_dir or root / ".cache" / "pyfiles"
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"spark_jobs-{digest.hexdigest()[:12]}.zip"
    if target.is_file():
        return str(target)
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in files:
            info = zipfile.ZipInfo(str(f.relative_to(root)), _FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, f.read_bytes())
    os.replace(tmp, target)  # concurrent builders race harmlessly: same bytes, atomic rename
    return str(target)
