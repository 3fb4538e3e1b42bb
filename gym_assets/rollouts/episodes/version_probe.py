"""A command harness's ``--version``, asked inside the harness sandbox.

The answer is the runtime version a run records, but asking runs the harness's program, which
may be hostile: so it runs exactly as an activation does (``run_isolated``: its own namespaces,
a scrubbed environment, only a throwaway activation directory writable), with no route out at
all (it needs no model), under a deadline, and everything it started dies with the sandbox.
Its output goes to files outside what it may write. A process asks once per harness command
and isolation: a conformance run's episodes and a run's retries reuse the answer.
"""

from __future__ import annotations

import asyncio
import functools
import tempfile
from collections.abc import Sequence
from pathlib import Path

from gym_assets.rollouts.episodes.launch import EpisodeFiles, Launch, base_environment, run_isolated
from gym_assets.sandbox import Isolation

VERSION_TIMEOUT_SECONDS = 10.0
OUTPUT_BYTES = 64 * 1024  # a version is one line; the rest is never read


class VersionProbeFailed(RuntimeError):
    """The program did not answer ``--version``: it exited non-zero, or ran out of time."""


def version_of(command: Sequence[str], isolation: Isolation) -> str:
    """The first non-empty line ``command --version`` prints (stdout), asked in the sandbox of
    ``isolation``; ``VersionProbeFailed`` (with its last stderr line) or ``OSError``."""
    return _asked(tuple(command), isolation)


@functools.cache
def _asked(command: tuple[str, ...], isolation: Isolation) -> str:
    return asyncio.run(_probe(command, isolation))


async def _probe(command: tuple[str, ...], isolation: Isolation) -> str:
    with tempfile.TemporaryDirectory(prefix="gym-harness-version-") as scratch:
        files = EpisodeFiles(Path(scratch) / "activation").create()
        stdout, stderr = Path(scratch) / "stdout", Path(scratch) / "stderr"
        launch = Launch(
            (*command, "--version"),
            base_environment(files.home),
            files.workdir,
            stdout,
            errors=stderr,
        )
        try:
            exit_code = await asyncio.wait_for(
                run_isolated(
                    launch, isolation, files, gateway_url=None, sandbox_id="version", records=[]
                ),
                VERSION_TIMEOUT_SECONDS,
            )
        except TimeoutError:
            raise VersionProbeFailed(f"no answer in {VERSION_TIMEOUT_SECONDS:.0f} s") from None
        said, complaint = _head(stdout), _head(stderr)
    if exit_code != 0:
        last = complaint.strip().splitlines()[-1:]
        raise VersionProbeFailed(f"exit code {exit_code}{': ' + last[0] if last else ''}")
    return next((line.strip() for line in said.splitlines() if line.strip()), "")


def _head(path: Path) -> str:
    with open(path, "rb") as output:  # ours: outside the directory the program could write
        return output.read(OUTPUT_BYTES).decode(errors="replace")
