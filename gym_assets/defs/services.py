"""Dagster's own services on this machine, for as long as a program needs them.

``make demo`` launches its runs the way the UI, a sensor or a schedule does: submitted to the
instance's run queue against a code location, dequeued by the daemon, started by the run
launcher in a process of their own. That is what puts them in each job's run history (a run is
listed under its job only when it was launched from a code location) and what makes the demo
cost what a run launched from the UI costs.

One code server loads the definitions once; the daemon and every ``dagster job backfill`` talk
to it through a workspace file naming its port. Each program is started and stopped as
``gym_assets.local_dagster`` says (a session of its own, SIGINT to its group), however the
program that needs them ends; ``make ui-check`` and the benches start theirs the same way.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from gym_assets.local_dagster import free_port, start_program, stop_program

BIN = Path(sys.executable).parent
LOCATION = "gym_assets"
"""The code location's name, as ``workspace.yaml`` names it: the UI lists runs under it."""
START_TIMEOUT_S = 120.0


class ServiceError(RuntimeError):
    """A service did not start, or a run could not be queued; the message says which."""


@contextmanager
def _program(args: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A Dagster program for the duration of the block (``gym_assets.local_dagster`` says how
    it is started and stopped)."""
    proc = start_program(args, log, cwd=Path.cwd())
    try:
        yield proc
    finally:
        stop_program(proc)


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-2000:] if log.is_file() else "(no output)"


def _wait_listening(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServiceError(f"the code server exited; its output ({log}):\n{_tail(log)}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise ServiceError(f"the code server did not listen on port {port}; see {log}")


@dataclass(frozen=True)
class Services:
    """A running code server, the workspace file that names it, and where services log."""

    workspace: Path
    logs: Path
    stack: ExitStack

    def backfill(self, job: str, partitions: list[str], tags: Mapping[str, str]) -> None:
        """Queue one run of ``job`` per partition, as one backfill (one command for them all,
        listed as a backfill in the UI); a refusal is a ServiceError with the command's output."""
        args = [str(BIN / "dagster"), "job", "backfill", "-w", str(self.workspace), "-j", job]
        args += ["--partitions", ",".join(partitions), "--tags", json.dumps(dict(tags))]
        done = subprocess.run([*args, "--noprompt"], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            output = (done.stdout + done.stderr)[-2000:]
            raise ServiceError(f"could not queue {job} for {', '.join(partitions)}:\n{output}")

    def launch(
        self, job: str, tags: Mapping[str, str], run_config: Mapping[str, object] | None = None
    ) -> None:
        """Queue one run of ``job`` (a partition's run: its ``dagster/partition`` tags), as the
        UI's Launch does. Unlike a backfill's runs, whose backfill the command marks finished as
        soon as they are queued, such a run is re-executed by the instance's run retries."""
        args = [str(BIN / "dagster"), "job", "launch", "-w", str(self.workspace), "-j", job]
        args += ["--tags", json.dumps(dict(tags)), "--config-json", json.dumps(run_config or {})]
        done = subprocess.run(args, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            output = (done.stdout + done.stderr)[-2000:]
            raise ServiceError(f"could not queue {job} with tags {dict(tags)}:\n{output}")

    def stop_sensors(self, names: Sequence[str]) -> None:
        """Stop these sensors on the instance, for a bench or test that alone decides what
        runs; a refusal is a ServiceError with the command's output."""
        for name in names:
            args = [str(BIN / "dagster"), "sensor", "stop", name, "-w", str(self.workspace)]
            done = subprocess.run(args, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                output = (done.stdout + done.stderr)[-2000:]
                raise ServiceError(f"could not stop the sensor {name}:\n{output}")

    def start_daemon(self) -> subprocess.Popen[bytes]:
        """The daemon (run queue, sensors, schedules) until the code server stops. Start it
        once the first runs are queued: its sensors' first tick then sees them in flight. Its
        process is returned for those who watch it (``bench/fanout.py`` samples its memory)."""
        daemon = [str(BIN / "dagster-daemon"), "run", "-w", str(self.workspace)]
        return self.stack.enter_context(_program(daemon, self.logs / "daemon.log"))


@contextmanager
def dagster_services(target: Sequence[str], logs: Path | None = None) -> Iterator[Services]:
    """A code server on the instance of ``$DAGSTER_HOME`` for ``target`` (its arguments that
    name the code: ``("-m", module)``, or ``("-f", file, "-a", attribute)``), and the daemon
    once started, all stopped on the way out; their output goes under ``logs``."""
    with ExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gym-dagster-")))
        logs = logs or scratch
        logs.mkdir(parents=True, exist_ok=True)
        port = free_port()
        workspace = scratch / "workspace.yaml"
        grpc = {"host": "127.0.0.1", "port": port, "location_name": LOCATION}
        workspace.write_text(json.dumps({"load_from": [{"grpc_server": grpc}]}))
        server_log = logs / "code_server.log"
        address = ["-h", "127.0.0.1", "-p", str(port)]
        code_server = [str(BIN / "dagster"), "api", "grpc", *address, *target]
        code_server += ["--location-name", LOCATION]
        server = stack.enter_context(_program(code_server, server_log))
        _wait_listening(port, server, server_log)
        yield Services(workspace, logs, stack)


def wait_for_runs(
    instance: dg.DagsterInstance, tags: Mapping[str, str], count: int, timeout_s: float
) -> Iterator[dg.DagsterRun]:
    """The ``count`` runs carrying ``tags``, each as soon as it has finished."""
    seen: set[str] = set()
    deadline = time.monotonic() + timeout_s
    while len(seen) < count:
        if time.monotonic() > deadline:
            raise ServiceError(f"{count - len(seen)} run(s) did not finish in {timeout_s:.0f} s")
        for record in instance.get_run_records(dg.RunsFilter(tags=dict(tags))):
            run = record.dagster_run
            if run.is_finished and run.run_id not in seen:
                seen.add(run.run_id)
                yield run
        time.sleep(0.2)
