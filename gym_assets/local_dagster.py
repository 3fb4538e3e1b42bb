"""A throwaway Dagster instance on this machine, and the processes that serve it.

The benches and ``make ui-check`` run Dagster's own programs (a code server, the webserver, the
daemon) against a private ``DAGSTER_HOME`` holding the repo's instance settings
(``deploy/instance/dagster.yaml``, or its Postgres twin), a copy of the
configs and an empty data root, so that nothing they do touches the user's instance or products.

Dagster's programs map SIGTERM onto their SIGINT handler, and a program started from a
non-interactive shell inherits SIGINT ignored: such a tree can then only be killed
(docs/operations.md). So each program starts in a session of its own with SIGINT restored, and
is stopped by SIGINT to its whole process group. No Dagster import: this only starts programs.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gym_assets.workspace import CONFIGS_ENV, DATA_ROOT_ENV, Workspace

STOP_TIMEOUT_S = 30.0
INSTANCE_DIR = Path("deploy") / "instance"
"""Where the repo keeps its instance settings (``dagster.yaml``, ``dagster.postgres.yaml``): not
at its root, where Dagster would take a ``dagster.yaml`` for a misplaced home and warn."""


@dataclass(frozen=True)
class LocalHome:
    """Where a throwaway instance keeps its state, configs and products (all under one root)."""

    home: Path  # DAGSTER_HOME
    workspace: Workspace  # its own configs and data root

    @classmethod
    def create(cls, root: Path, repo: Path, instance: str = "dagster.yaml") -> LocalHome:
        """The repo's instance settings (``instance`` in ``INSTANCE_DIR``, e.g.
        ``dagster.postgres.yaml``) as the home's ``dagster.yaml`` and a copy of its ``configs/``
        under ``root``; the data root is left to be created by the first product."""
        local = cls(root / "dagster_home", Workspace(root / "configs", root / "data"))
        local.home.mkdir(parents=True)
        shutil.copy(repo / INSTANCE_DIR / instance, local.home / "dagster.yaml")
        shutil.copytree(repo / "configs", local.workspace.configs)
        return local

    def environ(self) -> dict[str, str]:
        """The variables that point Dagster and gym-assets at this instance."""
        return {
            "DAGSTER_HOME": str(self.home),
            CONFIGS_ENV: str(self.workspace.configs),
            DATA_ROOT_ENV: str(self.workspace.data),
        }


def free_port() -> int:
    """A loopback port nothing listens on now (another program could still take it first)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _restore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_program(
    argv: Sequence[str],
    log: Path,
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    stderr: Path | None = None,
) -> subprocess.Popen[bytes]:
    """``argv`` in a new session with SIGINT restored, its output in ``log`` (its errors too,
    unless ``stderr`` names another file)."""
    with log.open("wb") as out, (stderr or Path(os.devnull)).open("wb") as err:
        return subprocess.Popen(
            list(argv),
            stdout=out,
            stderr=subprocess.STDOUT if stderr is None else err,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            env=None if env is None else dict(env),
            start_new_session=True,
            preexec_fn=_restore_sigint,
        )


def stop_program(process: subprocess.Popen[bytes], timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGINT to the program's process group (what Ctrl-C sends), SIGKILL if it is still there
    after ``timeout``; then the group's stragglers are killed too."""
    try:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        os.killpg(process.pid, signal.SIGKILL)  # a child that outlived its leader
    except ProcessLookupError:
        pass  # the group is gone
