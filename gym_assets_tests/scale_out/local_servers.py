"""What the scale-out tests share: why the project's own Postgres or Redis cannot start here (a
skip reason), the scripts' commands, and for the Celery tests the servers, the Dagster home, the
workers' steps and the processes a test left behind."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import psutil
import pytest

from gym_assets.defs.partitions import PARTITION_TAG
from gym_assets.errors import UserError
from gym_assets.local_dagster import INSTANCE_DIR, LocalHome
from gym_assets.local_services import postgres
from gym_assets.local_services.redis import LocalRedis

REPO = Path(__file__).resolve().parents[2]
WORKERS = ("alpha", "beta")
SESSION_TAG = "gym_assets/test_session"


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


def partition_tags(keys: dict[str, str]) -> dict[str, str]:
    """The partition tags Dagster gives a run of the multi-partition ``keys``."""
    tags = {PARTITION_TAG: str(dg.MultiPartitionKey(keys))}
    return tags | {f"{PARTITION_TAG}/{dimension}": key for dimension, key in keys.items()}


def _mentions(process: psutil.Process, root: str) -> bool:
    """The process was started for this test: its command line or environment names ``root``."""
    with contextlib.suppress(psutil.Error):
        if any(root in part for part in process.cmdline()):
            return True
        return any(root in value for value in process.environ().values())
    return False


def leftovers(root: Path, redis: LocalRedis) -> list[str]:
    """The processes started for a test under ``root`` that still run, and Redis if it does."""
    ours = [p for p in psutil.process_iter() if p.pid != os.getpid() and _mentions(p, str(root))]
    names = [f"{p.pid} {' '.join(p.cmdline())[:120]}" for p in ours if p.is_running()]
    return names + (["redis-server"] if redis.running() else [])


@contextlib.contextmanager
def servers(root: Path) -> Iterator[tuple[str, str, LocalRedis]]:
    """Postgres and Redis for the block (the test skips, saying why, when either cannot start)."""
    pg, redis = postgres.LocalPostgres(root / "pg"), LocalRedis(root / "redis")
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (make scale-tools installs it as root)")
    try:
        try:
            database = pg.start()
        except UserError as exc:
            pytest.skip(f"Postgres cannot start here: {exc}")
        try:
            broker = redis.start()
        except UserError as exc:
            pytest.skip(f"Redis cannot start here: {exc}")
        yield database, broker, redis
    finally:
        redis.stop()
        pg.stop()


def home(root: Path) -> LocalHome:
    """The repo's Postgres instance config, a copy of the configs and of the example harness
    program they name (``minimal_agent``), and an empty data root."""
    local = LocalHome.create(root, REPO)
    shutil.copy(REPO / INSTANCE_DIR / "dagster.postgres.yaml", local.home / "dagster.yaml")
    shutil.copytree(REPO / "examples" / "harnesses", root / "examples" / "harnesses")
    return local


def celery_steps(instance: dg.DagsterInstance, run_id: str) -> list[tuple[str, str]]:
    """(worker hostname, step key) for each step a Celery worker executed in the run."""
    found = []
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        metadata = entry.get_dagster_event().engine_event_data.metadata
        if "Celery worker" in metadata:
            found.append((str(metadata["Celery worker"].value), entry.step_key or ""))
    return found
