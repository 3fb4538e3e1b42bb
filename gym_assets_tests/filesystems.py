"""Filesystem helpers for tests: a tree snapshot, and real failing filesystems.

The failures are real, not simulated: a small tmpfs that fills up (ENOSPC), a read-only tmpfs
(EROFS), an immutable directory (EPERM, which even root cannot write into). Each needs root;
a test that cannot set one up is skipped with the reason.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


def snapshot(root: Path) -> dict[str, tuple[str, int, str]]:
    """Every path below ``root`` (hidden ones and links included, links not followed):
    relative path -> (kind, mode, sha256 of a file's bytes or a link's target)."""
    found: dict[str, tuple[str, int, str]] = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(directory, name)
            info = os.lstat(path)
            mode = stat.S_IMODE(info.st_mode)
            if stat.S_ISLNK(info.st_mode):
                entry = ("link", mode, os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                entry = ("file", mode, hashlib.sha256(path.read_bytes()).hexdigest())
            elif stat.S_ISDIR(info.st_mode):
                entry = ("dir", mode, "")
            else:
                entry = (stat.filemode(info.st_mode)[0], mode, "")
            found[str(path.relative_to(root))] = entry
    return found


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=False)


@contextlib.contextmanager
def tmpfs(path: Path, options: str) -> Iterator[Path]:
    """Mount a tmpfs at ``path`` (``mount -o <options>``) for the block; skip if impossible."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted = _run("mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path))
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        if _run("umount", str(path)).returncode != 0:
            _run("umount", "--lazy", str(path))  # still busy: detach it anyway


@contextlib.contextmanager
def immutable(path: Path) -> Iterator[Path]:
    """Make ``path`` immutable (``chattr +i``) for the block; skip if the filesystem can't."""
    if os.geteuid() != 0:
        pytest.skip("chattr +i needs root")
    changed = _run("chattr", "+i", str(path))
    if changed.returncode != 0:
        pytest.skip(f"chattr +i does not work here: {changed.stderr.strip()}")
    try:
        yield path
    finally:
        _run("chattr", "-i", str(path))


def fill(directory: Path, leave: int) -> None:
    """Fill the filesystem of ``directory`` until at most ``leave`` bytes are free."""
    free = os.statvfs(directory)
    room = free.f_bavail * free.f_frsize - leave
    with (directory / "filler").open("wb") as handle, contextlib.suppress(OSError):
        handle.write(b"\0" * max(room, 0))


_HOLDER = """
import sys
from pathlib import Path
from gym_assets.outputs.lock import held
from gym_assets.outputs.markers import TASKSET
from gym_assets.outputs.targets import Target
with held(Target(Path(sys.argv[1]), TASKSET, Path(sys.argv[2]))):
    print("held", flush=True)
    sys.stdin.readline()
"""


@contextlib.contextmanager
def lock_held_elsewhere(output: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holds the lock of ``output`` until the block ends."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(output), str(output.parent / "no-configs")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline() == "held\n"
        yield holder
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)


def readable_by_others(path: Path) -> bool:
    """Whether a user other than the owner can reach and read ``path`` (each directory above it
    searchable, it readable): an unprivileged run imports the checkout from there, which a
    clone in a 0700 temporary directory does not allow."""
    path = path.resolve()
    searchable = all(p.stat().st_mode & stat.S_IXOTH for p in path.parents)
    return searchable and bool(path.stat().st_mode & stat.S_IROTH)
