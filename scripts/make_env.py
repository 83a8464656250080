"""``make env``: write ``.env`` for docker-compose with fresh random secrets (once).

Every secret docker-compose.yaml requires (``${NAME:?...}``) gets a random value; the Fernet key
is 32 random bytes, URL-safe base64, as Airflow wants it. An existing ``.env`` is never
overwritten (its secrets encrypt data already stored): it only gains the secrets it lacks;
delete it yourself to start over.
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
    """Write the secrets ``compose`` requires into ``target``; the names written. An existing
    file keeps every value it has (they guard data already stored) and gains only the names it
    lacks (a secret added by a newer compose file); with none lacking, nothing is done."""
    names = required(compose)
    if target.exists():
        have = {ln.split("=", 1)[0].strip() for ln in target.read_text().splitlines() if "=" in ln}
        missing = [n for n in names if n not in have]
        if not missing:
            raise SystemExit(
                f"make_env: {target} exists; keeping it (delete it to make new secrets)"
            )
        text = target.read_text()
        sep = "" if text.endswith("\n") or not text else "\n"
        target.write_text(text + sep + "".join(f"{n}={value(n)}\n" for n in missing))
        target.chmod(0o600)
        return missing
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
