"""Celery workers that run Dagster steps (``dagster-celery``), on this machine.

Each worker is ``dagster-celery worker start`` (Dagster's own worker command) with the
executor's config file, a name of its own and one execution slot, listening to the ``dagster``
queue; it sees the same instance as the runs (``DAGSTER_HOME`` in ``env``, on Postgres when
workers span machines) and loads the code the runs name. Workers are started and stopped as
``gym_assets.local_dagster`` says (a session of their own, SIGINT to the group).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from gym_assets.local_dagster import start_program, stop_program

BIN = Path(sys.executable).parent
QUEUE = "dagster"


def worker_argv(name: str, config_yaml: Path, slots: int = 1) -> list[str]:
    """The command that starts one worker named ``name`` with ``slots`` task processes."""
    argv = [str(BIN / "dagster-celery"), "worker", "start", "-A", "dagster_celery.app"]
    argv += ["-y", str(config_yaml), "-n", name, "-q", QUEUE, "--"]
    return [*argv, f"--concurrency={slots}", "--pool=prefork"]


@contextmanager
def celery_workers(
    names: Sequence[str], config_yaml: Path, *, env: Mapping[str, str], logs: Path, cwd: Path
) -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    """One worker per name for the duration of the block, each logging to ``logs/<name>.log``;
    all stopped on the way out, whatever was left running."""
    logs.mkdir(parents=True, exist_ok=True)
    # `dagster-celery worker start` runs the `celery` program found on PATH: this venv's
    env = {**env, "PATH": os.pathsep.join([str(BIN), env.get("PATH", os.defpath)])}
    with ExitStack() as stack:
        workers: dict[str, subprocess.Popen[bytes]] = {}
        for name in names:
            argv = worker_argv(name, config_yaml)
            proc = start_program(argv, logs / f"{name}.log", cwd=cwd, env=env)
            stack.callback(stop_program, proc)
            workers[name] = proc
        yield workers
