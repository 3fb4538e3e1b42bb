"""Launching a command harness: the one place that builds its argv, environment and cwd, and
the supervision of the process tree it starts.

A command harness executes shell commands a model chose, so it gets nothing it does not need:
an environment built from scratch (the contract's variables, ``PATH``, a private ``HOME``, XDG
and temp directories; no variable of the parent, so no key or token), stdin closed, stdout and
stderr in the episode's log, its own session and process group. ``launch_of`` builds it and
``run_isolated`` runs it in the run's sandbox (``gym_assets.sandbox.harness_sandbox``: its own
namespaces, only the activation directory writable, a network route to the gateway only);
nothing else starts one.

Supervision records every descendant (``gym_assets.process_tree``) while the program
runs, because a CLI may start its own sessions and leave its group; when the program exits,
or its caller is cancelled (a deadline, a close), the group and every recorded descendant
still alive get SIGTERM, then SIGKILL after a grace period.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gym_assets.process_tree import Tracked, signal_all
from gym_assets.sandbox import Isolation
from gym_assets.sandbox.harness_sandbox import HarnessSandbox
from gym_assets.untrusted_files import glob_beneath, open_beneath, read_beneath

# The contract's variables (docs/harnesses.md); the names are part of the stable interface.
BASE_URL = "GYM_BASE_URL"
MODEL = "GYM_MODEL"
MODEL_SERVER = "GYM_MODEL_SERVER"
API_KEY = "GYM_API_KEY"
PROMPT = "GYM_PROMPT"
REQUEST_PATH = "GYM_REQUEST_PATH"
WORKDIR = "GYM_WORKDIR"
OBSERVATIONS_PATH = "GYM_OBSERVATIONS_PATH"
RESPONSE_PATH = "GYM_RESPONSE_PATH"
INVOCATION_ID = "GYM_INVOCATION_ID"
DUMMY_API_KEY = "gym-assets-local"  # the gateway needs no key; real keys stay upstream

POLL_SECONDS = 0.1
# The most the run reads of one file a harness wrote (its bundle, response, session log): the
# harness may write up to 1 GiB per file, and whatever is read goes into the records.
MAX_HARNESS_FILE_BYTES = 64 * 1024 * 1024
# The most directory entries the run looks through to find a harness's session file.
MAX_HARNESS_ENTRIES = 10_000
TERMINATE_GRACE_SECONDS = 2.0


@dataclass(frozen=True)
class EpisodeFiles:
    """One activation's directory: the program's cwd, its private home, its log, and the
    files it reads (the request) and writes (observations, optional final response)."""

    root: Path

    @property
    def workdir(self) -> Path:
        return self.root / "workspace"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def log(self) -> Path:
        return self.root / "episode.log"

    @property
    def request(self) -> Path:
        return self.root / "request.json"

    @property
    def observations(self) -> Path:
        return self.root / "observations.json"

    @property
    def response(self) -> Path:
        return self.root / "response.json"

    def read(self, path: Path) -> bytes:
        """The bytes of a file the harness wrote under the activation directory, read without
        following links or blocking (``gym_assets.untrusted_files``): ``FileNotFoundError``
        when it is missing, ``RefusedFile`` when it is not a regular file of at most
        ``MAX_HARNESS_FILE_BYTES``."""
        return read_beneath(self.root, self._inside(path), MAX_HARNESS_FILE_BYTES)

    def glob(self, directory: Path, pattern: str) -> list[Path]:
        """The paths under ``directory`` (in the activation directory) matching ``pattern``,
        found without following a link to a directory and looking through at most
        ``MAX_HARNESS_ENTRIES`` entries; raises as ``read`` does."""
        found = glob_beneath(self.root, self._inside(directory), pattern, MAX_HARNESS_ENTRIES)
        return [directory / name for name in found]

    def check(self, path: Path) -> None:
        """That ``path`` is a regular file under the activation directory, reached without a
        link (for a store another library opens by name); raises as ``read`` does."""
        os.close(open_beneath(self.root, self._inside(path)))

    def _inside(self, path: Path) -> Path:
        """``path`` relative to the activation directory (either may be given relative)."""
        return path.absolute().relative_to(self.root.absolute())

    def create(self) -> EpisodeFiles:
        """Make the directories; an existing activation directory is refused (stale files
        must never pass for this activation's output)."""
        self.root.mkdir(parents=True, exist_ok=False)
        for directory in (self.workdir, self.home / "tmp"):
            directory.mkdir(parents=True)
        return self


def base_environment(home: Path) -> dict[str, str]:
    """What any program needs and nothing else: ``PATH``, a UTF-8 locale, a private home."""
    return {
        "PATH": os.environ.get("PATH") or os.defpath,
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "TMPDIR": str(home / "tmp"),
    }


@dataclass(frozen=True)
class Launch:
    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path
    log: Path
    pass_fds: tuple[int, ...] = ()  # descriptors the program inherits besides stdio
    errors: Path | None = None  # where stderr goes when not into ``log``


def launch_of(
    command: Sequence[str],
    files: EpisodeFiles,
    *,
    base_url: str,
    model: str,
    model_server: str,
    prompt: str,
    invocation_id: str,
    extra_env: Mapping[str, str] = {},
) -> Launch:
    """The argv, environment and cwd of one activation (the contract of docs/harnesses.md);
    ``extra_env`` (a cli harness's adapter and offline profile) is laid over it."""
    env = {
        **base_environment(files.home),
        BASE_URL: base_url,
        MODEL: model,
        MODEL_SERVER: model_server,
        API_KEY: DUMMY_API_KEY,
        PROMPT: prompt,
        REQUEST_PATH: str(files.request),
        WORKDIR: str(files.workdir),
        OBSERVATIONS_PATH: str(files.observations),
        RESPONSE_PATH: str(files.response),
        INVOCATION_ID: invocation_id,
        # The names off-the-shelf OpenAI clients read, pointing at the same gateway.
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": DUMMY_API_KEY,
        **extra_env,
    }
    return Launch(tuple(command), env, files.workdir, files.log)


async def supervise(launch: Launch) -> int:
    """Run the launch to its exit and return its exit code; the process tree never outlives
    this call (cancelling it stops the program)."""
    with contextlib.ExitStack() as opened:
        log = opened.enter_context(open(launch.log, "ab"))
        errors = (
            subprocess.STDOUT
            if launch.errors is None
            else opened.enter_context(open(launch.errors, "ab"))
        )
        process = await asyncio.create_subprocess_exec(
            *launch.argv,
            env=dict(launch.env),
            cwd=launch.cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=errors,
            start_new_session=True,
            pass_fds=launch.pass_fds,
        )
    tracked = Tracked(process.pid)
    exited = asyncio.ensure_future(process.wait())
    try:
        while not exited.done():
            tracked.record()
            await asyncio.wait([exited], timeout=POLL_SECONDS)
        return exited.result()
    finally:
        await asyncio.shield(_stop_tree(process, tracked))


async def run_isolated(
    launch: Launch,
    isolation: Isolation,
    files: EpisodeFiles,
    *,
    gateway_url: str | None,
    sandbox_id: str,
    records: list[dict[str, Any]],
    read_only: Sequence[Path] = (),
    writable: Sequence[Path] = (),
) -> int:
    """``supervise`` the launch inside a harness sandbox (as it is when ``isolation`` is
    ``none``) and append the ``sandbox`` record of how it ended to ``records``, whatever
    happens (docs/evidence-format.md: a failed start is ``sandbox_error``, a stop before the
    program exited ``cancelled``). ``read_only`` and ``writable``: host directories it may
    also read (an install folder) or write (a conformance workspace); ``gateway_url`` None:
    no route out of the sandbox at all."""
    started = time.monotonic()
    record: dict[str, Any] = {
        "kind": "sandbox",
        "role": "agent",
        "provider": isolation.kind,
        "sandbox_id": sandbox_id,
        "outcome": "cancelled",
    }
    try:
        if isolation.kind == "none":
            exit_code, came_up = await supervise(launch), True
        else:
            sandbox = HarnessSandbox(
                isolation, files.root, gateway_url, read_only=read_only, writable=writable
            )
            async with sandbox:
                argv = sandbox.command(launch.argv, launch.env, launch.cwd)
                jailed = replace(launch, argv=tuple(argv), pass_fds=sandbox.pass_fds)
                exit_code = await supervise(jailed)
                came_up = sandbox.started()
        record.update(exit_code=exit_code, **_ending(exit_code, came_up))
        return exit_code
    finally:
        record["wall_time_s"] = round(time.monotonic() - started, 3)
        records.append(record)


def _ending(exit_code: int, came_up: bool) -> dict[str, str]:
    if not came_up:
        return {"outcome": "sandbox_error", "error_type": "sandbox_did_not_start"}
    if exit_code != 0:
        return {"outcome": "failed", "error_type": "nonzero_exit"}
    return {"outcome": "completed"}


async def _stop_tree(process: asyncio.subprocess.Process, tracked: Tracked) -> None:
    if process.returncode is None:
        tracked.record()
    _signal_tree(process, tracked, signal.SIGTERM)
    waited = 0.0
    while waited < TERMINATE_GRACE_SECONDS and (
        process.returncode is None or tracked.alive() or _group_alive(process.pid)
    ):
        await asyncio.sleep(POLL_SECONDS)
        waited += POLL_SECONDS
    _signal_tree(process, tracked, signal.SIGKILL)
    await process.wait()


def _signal_tree(
    process: asyncio.subprocess.Process, tracked: Tracked, sig: signal.Signals
) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)  # the group is named after the leader, even once it exited
    signal_all(tracked.alive(), sig)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True
