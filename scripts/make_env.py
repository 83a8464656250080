"""``make env``: write ``.env`` for docker-compose with fresh random secrets (once).

Every secret docker-compose.yaml requires (``${NAME:?...}``) gets a random value; the Fernet key
is 32 random bytes, URL-safe base64, as Airflow wants it. An existing ``.env`` is never
overwritten (its secrets encrypt data already stored): delete it yourself to start over.
"""

from __future__ import annotations

import base64
import re
import secrets
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FERNET = "AIRFLOW_FERNET_KEY"


def required(compose: Path) -> list[str]:
    """The variables the compose file refuses to start without, in order of appearance."""
    return list(dict.fromkeys(re.findall(r"\$\{([A-Z0-9_]+):\?", compose.read_text())))


def value(name: str) -> str:
    if name == FERNET:
        return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()
    return secrets.token_hex(32)  # hex: safe inside the Postgres URL without quoting


def write_env(target: Path, compose: Path) -> list[str]:
    if target.exists():
        raise SystemExit(f"make_env: {target} exists; keeping it (delete it to make new secrets)")
    names = required(compose)
    lines = ["# Written by scripts/make_env.py: random secrets for docker-compose. Never commit."]
    lines += [f"{n}={value(n)}" for n in names]
    target.write_text("\n".join(lines) + "\n")
    target.chmod(0o600)
    return names


def main() -> int:
    names = write_env(ROOT / ".env", ROOT / "docker-compose.yaml")
    print(f"wrote {ROOT / '.env'} with {', '.join(names)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
