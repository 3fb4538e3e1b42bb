"""One writer per output: an exclusive lock held for the whole write, not waited for (but for
a product its writers take turns on).

The lock is ``flock`` on ``.<name>.lock`` beside the output (outside a directory that gets
swapped), through ``filelock``. The kernel drops it when its holder dies, so a killed run never
leaves a stale lock. The holder writes its pid into the file so that a refused writer can say
who holds it, and removes the file before releasing it: ``filelock`` retries a lock taken on an
unlinked file, so nothing is left beside the output after a run (a killed run may leave the
file, which the next run simply takes). Only a file that can be such a leftover is taken: taking
the lock truncates the file and removes it, so anything else at that name (a link, a user's
file holding more than a pid) is refused.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from gym_assets.errors import OutputError, os_failure
from gym_assets.outputs.targets import Target
from gym_assets.untrusted_files import RefusedFile, read_beneath

_LEFTOVER = re.compile(rb"\d*\n?")  # what a holder writes: its pid (or nothing yet)
_MAX_LOCK_BYTES = 32


def lock_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.lock")


def is_lock_leftover(path: Path) -> bool:
    """Whether ``path`` is a lock file gym-assets may take over (and then remove): a regular
    file holding at most a pid. Read without following a link or waiting on a FIFO."""
    try:
        held_by = read_beneath(path.parent, path.name, _MAX_LOCK_BYTES)
    except (OSError, RefusedFile):
        return False
    return _LEFTOVER.fullmatch(held_by) is not None


def _record_pid(fd: int) -> None:
    """Say who holds the lock; only informative, so a full disk does not stop the writer
    here (its own writes then fail with a message naming the output)."""
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)


def _holder(path: Path) -> str:
    try:
        return f"pid {int(path.read_text(encoding='ascii').strip())}"
    except (OSError, ValueError):  # gone meanwhile, or the holder is still writing its pid
        return "another process"


@contextlib.contextmanager
def held(
    target: Target, wait_s: float = 0.0, waiting: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Hold the output's lock, or refuse when another writer holds it: at once, or after
    ``wait_s`` for a product that writers share and take turns on (a partition's inventory,
    which the first of its shards writes and the others then read); ``waiting`` is told who
    holds it before such a wait."""
    path = lock_path(target.path)
    if os.path.lexists(path) and not is_lock_leftover(path):
        raise OutputError(
            f"{path} is in the place of its lock file and was not written by gym-assets (taking "
            f"the lock would overwrite it); move it elsewhere or {target.elsewhere_hint()}",
            path=target.path,
        )
    lock = FileLock(path, timeout=0, on_acquired=_record_pid)
    try:
        try:
            lock.acquire()
        except Timeout:
            if not wait_s:
                raise
            if waiting is not None:
                waiting(_holder(path))
            lock.acquire(timeout=wait_s)
    except Timeout:  # checked first: filelock's Timeout is an OSError too
        raise OutputError(
            f"is in use by {_holder(path)} (another gym-assets run); {target.busy_hint()}",
            path=target.path,
        ) from None
    except OSError as exc:
        raise os_failure(target.path, exc) from None
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
        lock.release()
