"""A command harness's ``--version``, asked inside the harness sandbox.

The answer is the runtime version a run records, but asking runs the harness's program, which
may be hostile: so it runs as any program of a registry entry does (``offline_run``: the
harness sandbox with no route out, a scrubbed environment, a deadline, nothing left behind).
A process asks once per harness command and isolation: a run's every resolution, and a
conformance run's episodes (which are handed the answer), reuse it.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence

from gym_assets.rollouts.episodes.offline_run import ProgramTimedOut, run_offline
from gym_assets.sandbox import Isolation

VERSION_TIMEOUT_SECONDS = 10.0


class VersionProbeFailed(RuntimeError):
    """The program did not answer ``--version``: it exited non-zero, or ran out of time."""


def version_of(command: Sequence[str], isolation: Isolation) -> str:
    """The first non-empty line ``command --version`` prints (stdout), asked in the sandbox of
    ``isolation``; ``VersionProbeFailed`` (with its last stderr line) or ``OSError``."""
    return _asked(tuple(command), isolation)


@functools.cache
def _asked(command: tuple[str, ...], isolation: Isolation) -> str:
    argv = (*command, "--version")
    try:
        done = asyncio.run(run_offline(argv, isolation, timeout_s=VERSION_TIMEOUT_SECONDS))
    except ProgramTimedOut as exc:
        raise VersionProbeFailed(str(exc)) from None
    if done.exit_code != 0:
        last = done.stderr.strip().splitlines()[-1:]
        raise VersionProbeFailed(f"exit code {done.exit_code}{': ' + last[0] if last else ''}")
    return next((line.strip() for line in done.stdout.splitlines() if line.strip()), "")
