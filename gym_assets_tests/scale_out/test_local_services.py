"""``scripts/postgres.sh`` and ``scripts/redis.sh`` on throwaway roots: the real servers start,
answer, are reused while they run and leave no process when stopped; what they refuse, they
refuse in one line before creating anything."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import psutil
import pytest

from gym_assets.local_dagster import INSTANCE_DIR
from gym_assets.local_services.roots import scratch_root
from gym_assets_tests.scale_out.local_servers import REPO, script, skip_unless_runs

SERVERS = ("postgres", "redis")
VARIABLES = {"postgres": "DAGSTER_PG_URL", "redis": "GYM_ASSETS_CELERY_BROKER"}
PID_FILES = {"postgres": "data/postmaster.pid", "redis": "redis.pid"}

# Reads the instance of $DAGSTER_HOME: which storage it has, and a partition written and read back.
INSTANCE_PROBE = """
import dagster as dg
instance = dg.DagsterInstance.get()
instance.add_dynamic_partitions("probe", ["a", "b"])
print(type(instance.run_storage).__name__, type(instance.event_log_storage).__name__,
      ",".join(instance.get_dynamic_partitions("probe")), instance.get_runs_count())
"""


def exported(start: subprocess.CompletedProcess[str], server: str) -> str:
    """The value of the one variable line ``start`` printed (as a shell would read it)."""
    assert start.returncode == 0, start.stderr
    (line,) = start.stdout.splitlines()
    (assignment,) = shlex.split(line)
    name, value = assignment.split("=", 1)
    assert name == VARIABLES[server]
    return value


def server_pid(root: Path, server: str) -> int:
    return int((root / PID_FILES[server]).read_text().split()[0])


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie that this container's init has not reaped does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def processes_under(root: Path) -> list[str]:
    """Command lines of live processes that name ``root``."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if str(root) in cmdline:
            found.append(cmdline)
    return found


def postgres_answers(url: str, home: Path) -> str:
    """The probe's output on an instance of dagster.postgres.yaml whose storage is ``url``."""
    home.mkdir()
    (home / "dagster.yaml").write_bytes(
        (REPO / INSTANCE_DIR / "dagster.postgres.yaml").read_bytes()
    )
    env = {**os.environ, "DAGSTER_HOME": str(home), "DAGSTER_PG_URL": url}
    done = subprocess.run(
        [sys.executable, "-c", INSTANCE_PROBE], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def redis_answers(url: str) -> bytes:
    address = urlsplit(url)
    assert address.hostname == "127.0.0.1"
    with socket.create_connection((address.hostname, address.port or 0), timeout=5) as conn:
        conn.sendall(b"PING\r\n")
        return conn.recv(16)


@pytest.mark.slow
@pytest.mark.parametrize("server", SERVERS)
def test_a_server_starts_answers_is_reused_and_stops_without_a_trace(server: str) -> None:
    skip_unless_runs(server)
    with scratch_root("gym-so-") as scratch:
        root = scratch / server
        assert script(server, "status", "--root", root).returncode == 1
        url = exported(script(server, "start", "--root", root), server)
        pid = server_pid(root, server)
        try:
            status = script(server, "status", "--root", root)
            assert (status.returncode, status.stdout) == (0, f"{server}: running ({root})\n")
            assert exported(script(server, "start", "--root", root), server) == url
            assert server_pid(root, server) == pid  # the running server, not a second one
            assert exported(script(server, "url", "--root", root), server) == url
            if server == "postgres":
                assert url.startswith("postgresql+psycopg2://")
                answer = postgres_answers(url, scratch / "home")
                assert answer == "PostgresRunStorage PostgresEventLogStorage a,b 0"
            else:
                assert redis_answers(url) == b"+PONG\r\n"
        finally:
            stop = script(server, "stop", "--root", root)
        assert (stop.returncode, stop.stdout) == (0, f"{server}: stopped\n")
        assert not alive(pid)
        assert processes_under(root) == []
        status = script(server, "status", "--root", root)
        assert (status.returncode, status.stdout) == (1, f"{server}: not running ({root})\n")
        assert script(server, "url", "--root", root).returncode == 1
        again = script(server, "stop", "--root", root)
        assert (again.returncode, again.stdout) == (0, f"{server}: was not running\n")


def refused(done: subprocess.CompletedProcess[str]) -> str:
    """The one-line refusal of a start that exits 1 and prints nothing to export."""
    assert (done.returncode, done.stdout) == (1, ""), done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: ")
    return line


@pytest.mark.parametrize("server", SERVERS)
def test_a_root_holding_files_of_someone_else_is_refused_and_left_as_it_was(server: str) -> None:
    skip_unless_runs(server)
    with scratch_root("gym-so-") as scratch:
        root = scratch / "theirs"
        root.mkdir()
        (root / "notes.txt").write_text("mine\n")
        line = refused(script(server, "start", "--root", root))
        assert line == (
            f"error: {root}: holds files the server did not create (notes.txt); "
            "choose an empty or new --root"
        )
        assert [p.name for p in root.iterdir()] == ["notes.txt"]
        assert (root / "notes.txt").read_text() == "mine\n"


@pytest.mark.parametrize("server", SERVERS)
def test_a_root_that_cannot_be_made_is_refused(server: str) -> None:
    skip_unless_runs(server)
    with scratch_root("gym-so-") as scratch:
        (scratch / "a_file").write_text("")
        root = scratch / "a_file" / server
        assert "is not a directory" in refused(script(server, "start", "--root", root)).lower()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root hands the server to another user")
def test_postgres_refuses_a_root_its_user_cannot_reach_before_creating_anything() -> None:
    skip_unless_runs("postgres")
    with scratch_root("gym-so-") as scratch:
        private = scratch / "private"
        private.mkdir(mode=0o700)
        line = refused(script("postgres", "start", "--root", private / "pg"))
        assert "the server runs as the 'postgres' user, which cannot reach" in line
        assert list(private.iterdir()) == []


@pytest.mark.parametrize("server", SERVERS)
@pytest.mark.parametrize("args", [["start", "--port", "5"], ["restart"], []])
def test_a_bad_flag_is_a_usage_error(server: str, args: list[str]) -> None:
    with scratch_root("gym-so-") as scratch:
        done = script(server, *args, "--root", scratch / server)
        assert done.returncode == 2
        assert done.stdout == ""
        assert "usage:" in done.stderr
        assert not (scratch / server).exists()
