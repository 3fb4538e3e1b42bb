"""Celery workers that run Dagster steps (``dagster-celery``), on this machine.

Each worker is ``dagster-celery worker start`` (Dagster's own worker command) with the
executor's config file, a name of its own and one execution slot, listening to the ``dagster``
queue; it sees the same instance as the runs (``DAGSTER_HOME`` in ``env``, on Postgres when
workers span machines) and loads the code the runs name. Workers are started and stopped as
``gym_assets.local_dagster`` says (a session of their own, SIGINT to the group).

``dagster-celery worker start`` runs ``celery`` from ``PATH``: the interpreter's own scripts
directory goes first there, so a worker started from an unactivated venv finds its Celery.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from gym_assets.errors import UserError
from gym_assets.local_dagster import start_program, stop_program

BIN = Path(sys.executable).parent
QUEUE = "dagster"
READY_TIMEOUT_S = 120.0


def worker_argv(name: str, config_yaml: Path, slots: int = 1) -> list[str]:
    """The command that starts one worker named ``name`` with ``slots`` task processes."""
    argv = [str(BIN / "dagster-celery"), "worker", "start", "-A", "dagster_celery.app"]
    argv += ["-y", str(config_yaml), "-n", name, "-q", QUEUE, "--"]
    return [*argv, f"--concurrency={slots}", "--pool=prefork"]


@contextmanager
def celery_workers(
    names: Sequence[str], config_yaml: Path, *, env: Mapping[str, str], logs: Path, cwd: Path
) -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    """One worker per name for the duration of the block, each logging to ``logs/<name>.log``
    and consuming from the broker when the block starts; all stopped on the way out, whatever
    was left running."""
    logs.mkdir(parents=True, exist_ok=True)
    path = os.pathsep.join([str(BIN), env.get("PATH", os.defpath)])
    with ExitStack() as stack:
        workers: dict[str, subprocess.Popen[bytes]] = {}
        for name in names:
            argv = worker_argv(name, config_yaml)
            log = logs / f"{name}.log"
            proc = start_program(argv, log, cwd=cwd, env={**env, "PATH": path})
            stack.callback(stop_program, proc)
            workers[name] = proc
        for name, proc in workers.items():
            _wait_ready(name, proc, logs / f"{name}.log")
        yield workers


def _wait_ready(name: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    """Until Celery logs ``<name>@<host> ready.``; a worker that exits first is an error."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.is_file() else ""
        if f"{name}@" in text and " ready." in text:
            return
        if proc.poll() is not None:
            raise UserError(
                f"Celery worker {name} exited (code {proc.returncode}):\n{text[-2000:]}"
            )
        time.sleep(0.2)
    raise UserError(f"Celery worker {name} was not ready in {READY_TIMEOUT_S:.0f} s", path=log)
