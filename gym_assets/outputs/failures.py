"""Filesystem failures of the write layer as one clear line, not a traceback.

Disk full, permission denied, a read-only filesystem, a path under a regular file: each is
something the user fixes, so it is a ``UserError`` naming the output and the OS's reason.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from gym_assets.errors import UserError


class OutputError(UserError):
    """An output path cannot be written: refused by the ownership rules, or failed."""


def os_failure(path: str | Path, exc: OSError) -> OutputError:
    """``<path>: cannot write: <the OS's reason>``: the output the user named, not a temp file."""
    return OutputError(f"cannot write: {exc.strerror or type(exc).__name__}", path=path)


@contextlib.contextmanager
def reported(path: str | Path) -> Iterator[None]:
    """Turn an ``OSError`` raised in the block into an ``OutputError`` about ``path``."""
    try:
        yield
    except OSError as exc:
        raise os_failure(path, exc) from None
