"""Which software wrote a plan: package version, checkout commit, and config paths.

Everything here must be stable across re-runs and machines, or plans would differ for no
reason: the commit is the full hash, ``-dirty`` only reflects tracked files (a plan written
into the tree must not make the next run "dirty"), and config paths inside the project are
recorded relative to it.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import gym_assets
from gym_assets.plans.model import GymStamp

PACKAGE = "gym-assets"
UNKNOWN_VERSION = "0+unknown"


def gym_version() -> str:
    """The installed ``gym-assets`` version (a source tree that was never installed has none)."""
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return UNKNOWN_VERSION


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def project_root(package_dir: Path | None = None) -> Path | None:
    """The git checkout the running ``gym_assets`` package comes from, if any.

    The package's parent must be the top of the work tree: an installed copy under a virtualenv
    that happens to sit inside some repository is not a checkout of this project.
    """
    package_dir = (package_dir or Path(gym_assets.__file__).parent).resolve()
    candidate = package_dir.parent
    top = _git(candidate, "rev-parse", "--show-toplevel")
    return candidate if top is not None and Path(top).resolve() == candidate else None


def checkout_commit(root: Path | None) -> str | None:
    """``HEAD`` of the checkout, plus ``-dirty`` when tracked files have uncommitted changes."""
    if root is None:
        return None
    head = _git(root, "rev-parse", "--verify", "HEAD")
    if head is None:
        return None
    changes = _git(root, "status", "--porcelain", "--untracked-files=no")
    return f"{head}-dirty" if changes else head


def current_gym(root: Path | None = None) -> GymStamp:
    """The stamp for plans written now (``root`` defaults to this project's checkout)."""
    return GymStamp(gym_version(), checkout_commit(root or project_root()))


def recorded_config_paths(paths: Iterable[Path], root: Path | None) -> tuple[str, ...]:
    """Config paths as the plan records them: POSIX, relative to ``root`` when inside it."""
    recorded: list[str] = []
    for path in paths:
        resolved = Path(path).resolve()
        if root is not None and resolved.is_relative_to(root.resolve()):
            resolved = resolved.relative_to(root.resolve())
        recorded.append(resolved.as_posix())
    return tuple(recorded)
