"""A Redis server of the project's own, the Celery broker and result backend on this machine.

Debian's ``redis-server`` runs with its state in ``<root>``, bound to 127.0.0.1 at a port free
when it starts, nothing persisted to disk (a broker's queue lives as long as its runs), in
protected mode. ``url()`` gives the broker URL (``GYM_ASSETS_CELERY_BROKER``) while it runs.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from gym_assets.errors import UserError
from gym_assets.local_dagster import free_port
from gym_assets.local_services.roots import claim_root

URL_VARIABLE = "GYM_ASSETS_CELERY_BROKER"
START_TIMEOUT_S = 30.0
OURS = frozenset({"port", "redis.pid", "redis.log"})
"""What a server's root holds; a start refuses a root that holds anything else."""


@dataclass(frozen=True)
class LocalRedis:
    """The server whose pid, port and log live under ``root``."""

    root: Path

    @property
    def log(self) -> Path:
        return self.root / "redis.log"

    @property
    def _pid_file(self) -> Path:
        return self.root / "redis.pid"

    @property
    def _port_file(self) -> Path:
        return self.root / "port"

    def _pid(self) -> int | None:
        """The server's pid if it runs (a pid file left by a crash names no live process)."""
        try:
            pid = int(self._pid_file.read_text().strip())
            os.kill(pid, 0)
        except (FileNotFoundError, NotADirectoryError, ValueError, ProcessLookupError):
            return None
        return pid

    def running(self) -> bool:
        return self._pid() is not None

    def url(self) -> str:
        if not self.running():
            raise UserError(
                "no Redis server is running here; start it with scripts/redis.sh start",
                path=self.root,
            )
        return f"redis://127.0.0.1:{self._port_file.read_text().strip()}/0"

    def start(self) -> str:
        """Start the server (a running one is left as it is) and return its URL."""
        if self.running():
            return self.url()
        program = shutil.which("redis-server")
        if program is None:
            raise UserError(
                "redis-server is not installed; install Debian's redis-server package "
                "(apt-get install redis-server), see docs/scale-out.md"
            )
        claim_root(self.root, OURS)
        self.root.mkdir(parents=True, exist_ok=True)
        port = free_port()
        self._port_file.write_text(f"{port}\n")
        argv = [program, "--bind", "127.0.0.1", "--port", str(port), "--protected-mode", "yes"]
        argv += ["--dir", str(self.root), "--save", "", "--appendonly", "no"]
        argv += ["--daemonize", "yes", "--pidfile", str(self._pid_file)]
        argv += ["--logfile", str(self.log)]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise UserError(f"redis-server did not start: {done.stderr.strip()}", path=self.log)
        self._wait_ready(port)
        return self.url()

    def _wait_ready(self, port: int) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.1)
        raise UserError(f"redis-server did not answer on port {port}", path=self.log)

    def stop(self) -> bool:
        """SIGTERM to the server and wait for it to go; False if it was not running."""
        pid = self._pid()
        if pid is None:
            return False
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + START_TIMEOUT_S
        while self.running() and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.running():
            os.kill(pid, signal.SIGKILL)
        self._pid_file.unlink(missing_ok=True)
        return True
