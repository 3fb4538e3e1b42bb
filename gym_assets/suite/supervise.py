"""Run one episode process under supervision (docs/conformance.md#how-an-episode-runs).

The episode gets its own session and process group, closed stdin, and its output in
``episode.log``. Harness CLIs start sessions and process groups of their own, so killing the
group is not enough: while the episode runs, every descendant is recorded (pid and creation
time, so a recycled pid is never signalled) at each poll. When the episode exits or its
deadline passes, the ladder is: terminate the episode's group, terminate the recorded
descendants newest first, wait ``TERM_GRACE_S``, kill whatever is left, give the episode
``EXIT_GRACE_S`` more, kill it if needed. The result is ``{returncode, timed_out}``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from gym_assets.process_tree import Tracked, signal_all

POLL_S = 0.1
TERM_GRACE_S = 2.0
EXIT_GRACE_S = 3.0
SUPERVISION_GRACE_S = 30.0  # the runner kills an episode at its timeout plus this
_KEPT_VARIABLES = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ", "PYTHONPATH")


@dataclass(frozen=True)
class Execution:
    """How the episode process ended: kept apart from the checks."""

    returncode: int | None
    timed_out: bool
    seconds: float = 0.0  # wall time from launch to exit (benches; not part of the result file)

    @property
    def failed(self) -> bool:
        return self.timed_out or self.returncode != 0

    def to_json(self) -> dict[str, Any]:
        return {"returncode": self.returncode, "timed_out": self.timed_out}


def episode_environment(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """What an episode inherits: the basics and the project's own settings, no secrets."""
    return {k: v for k, v in environ.items() if k in _KEPT_VARIABLES or k.startswith("GYM_ASSETS_")}


def supervise(
    argv: Sequence[str],
    *,
    log_path: Path,
    deadline_s: float,
    cwd: Path | None = None,
    stop: threading.Event | None = None,
) -> Execution:
    """Run ``argv`` until it exits, ``deadline_s`` passes or ``stop`` is set (the run was
    interrupted); leave nothing of it running."""
    with log_path.open("ab") as log:
        episode = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=episode_environment(),
            cwd=cwd,
        )
    tracked = Tracked(episode.pid)
    started = time.monotonic()
    ends = started + deadline_s
    timed_out = False
    while episode.poll() is None:
        tracked.record()
        if time.monotonic() >= ends:
            timed_out = True
            break
        if stop is not None and stop.is_set():
            break
        time.sleep(POLL_S)
    seconds = time.monotonic() - started
    _stop(episode, tracked)
    return Execution(episode.returncode, timed_out, seconds)


def _stop(episode: subprocess.Popen[bytes], tracked: Tracked) -> None:
    """The ladder: TERM the group and the recorded descendants, wait, KILL what is left."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(episode.pid, signal.SIGTERM)
    signal_all(tracked.alive(), signal.SIGTERM)
    _, survivors = psutil.wait_procs(tracked.alive(), TERM_GRACE_S)
    signal_all(survivors, signal.SIGKILL)
    try:
        episode.wait(EXIT_GRACE_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(episode.pid, signal.SIGKILL)
        episode.wait()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(episode.pid, signal.SIGKILL)  # stragglers left in the group
