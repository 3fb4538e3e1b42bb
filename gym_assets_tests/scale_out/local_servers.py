"""What the scale-out tests share: why the project's own Postgres or Redis cannot start here (a
skip reason) and the scripts' commands."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gym_assets.errors import UserError
from gym_assets.local_services import postgres

REPO = Path(__file__).resolve().parents[2]


def postgres_missing() -> str | None:
    """Why the project's Postgres cannot run on this machine, None when it can."""
    try:
        postgres.bindir()
    except UserError as exc:
        return str(exc)
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(postgres.SERVER_USER)
        except KeyError:
            return f"running as root and no '{postgres.SERVER_USER}' user to run the server"
    return None


def redis_missing() -> str | None:
    """Why the project's Redis cannot run on this machine, None when it can."""
    if shutil.which("redis-server") is None:
        return "redis-server is not installed (make scale-tools)"
    return None


MISSING = {"postgres": postgres_missing, "redis": redis_missing}


def skip_unless_runs(server: str) -> None:
    reason = MISSING[server]()
    if reason is not None:
        pytest.skip(f"{server} cannot start here: {reason}")


def script(server: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """``scripts/<server>.sh args`` with this interpreter, as a user runs it."""
    return subprocess.run(
        [str(REPO / "scripts" / f"{server}.sh"), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env={**os.environ, "PYTHON": sys.executable},
    )
