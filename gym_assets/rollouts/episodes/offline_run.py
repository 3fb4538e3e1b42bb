"""Running a harness entry's program outside an activation, in the harness sandbox all the same.

A registry entry's program may be hostile, and so may the install scripts of its packages:
anything of theirs the run starts for its own purposes (a ``--version`` probe, an install's
post-steps) runs exactly as an activation does (``run_isolated``: its own namespaces, a scrubbed
environment, only a throwaway activation directory and the named ``writable`` directories
writable), with no route out at all (it needs no model), under a deadline, and everything it
started dies with the sandbox. Its output goes to files outside what it may write, and only
their first ``OUTPUT_BYTES`` are read back.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gym_assets.rollouts.episodes.launch import EpisodeFiles, Launch, base_environment, run_isolated
from gym_assets.sandbox import Isolation

OUTPUT_BYTES = 64 * 1024


class ProgramTimedOut(RuntimeError):
    """The program was still running at its deadline, and was stopped."""


@dataclass(frozen=True)
class Finished:
    exit_code: int
    stdout: str
    stderr: str


async def run_offline(
    argv: Sequence[str],
    isolation: Isolation,
    *,
    timeout_s: float,
    env: Mapping[str, str] = {},
    writable: Sequence[Path] = (),
) -> Finished:
    """Run ``argv`` to its end in the sandbox of ``isolation`` with ``env`` over the scrubbed
    environment; ``ProgramTimedOut`` past ``timeout_s``."""
    with tempfile.TemporaryDirectory(prefix="gym-harness-program-") as scratch:
        files = EpisodeFiles(Path(scratch) / "activation").create()
        stdout, stderr = Path(scratch) / "stdout", Path(scratch) / "stderr"
        environment = {**base_environment(files.home), **env}
        launch = Launch(tuple(argv), environment, files.workdir, stdout, errors=stderr)
        running = run_isolated(
            launch,
            isolation,
            files,
            gateway_url=None,
            sandbox_id="offline",
            records=[],
            writable=writable,
        )
        try:
            exit_code = await asyncio.wait_for(running, timeout_s)
        except TimeoutError:
            raise ProgramTimedOut(f"no answer in {timeout_s:.0f} s") from None
        return Finished(exit_code, _head(stdout), _head(stderr))


def _head(path: Path) -> str:
    with open(path, "rb") as output:  # ours: outside the directory the program could write
        return output.read(OUTPUT_BYTES).decode(errors="replace")
