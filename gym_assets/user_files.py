"""Opening a file the user named: a plan, a script, a config, a dataset, a bundle.

A user's path may be a symbolic link (datasets are linked into place), so links are followed,
unlike a guest's files (``untrusted_files``); but what it leads to must be a regular file. A
FIFO would block the open and the read for ever, ``/dev/zero`` never ends, a directory is a
slip: each is refused at once, by name, before a byte is read, through the same non-blocking,
checked open as a guest's file. A file read whole stops at its cap (``gym_assets.limits``),
which the refusal names; a file that is streamed is opened the same way and read as it goes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from gym_assets.errors import UserError
from gym_assets.untrusted_files import NotRegular, open_regular, read_up_to

_MiB = 1024 * 1024


def open_input(path: str | Path, what: str, error: type[UserError] = UserError) -> BinaryIO:
    """``path`` opened for binary reading, or an ``error`` naming it: missing, unreadable, or
    not a regular file (``<path>: is a FIFO, not a regular file; pass the plan file itself``).
    ``what`` names the file in the message (``plan file``); ``error`` is the refusal's class,
    for commands whose exit code tells input errors apart (``ConfigError`` ...)."""
    try:
        fd = open_regular(path, follow=True)
    except NotRegular as exc:
        raise error(f"{exc.reason}; pass the {what} itself", path=path) from None
    except FileNotFoundError:
        raise error(f"{what} not found", path=path) from None
    except OSError as exc:
        raise error(f"cannot read the {what} ({_reason(exc)})", path=path) from None
    return os.fdopen(fd, "rb")


def read_input(
    path: str | Path, what: str, limit: int, error: type[UserError] = UserError
) -> bytes:
    """The bytes of the file ``path`` (opened as ``open_input`` does), refused when it holds
    more than ``limit``: by its size before a byte is read, and by a read that stops past the
    limit should it grow meanwhile."""
    with open_input(path, what, error) as handle:
        try:
            fd = handle.fileno()
            over = os.fstat(fd).st_size > limit
            data = b"" if over else read_up_to(fd, limit)
        except OSError as exc:
            raise error(f"cannot read the {what} ({_reason(exc)})", path=path) from None
    if over or len(data) > limit:
        raise error(
            f"the {what} is larger than {size(limit)}, its limit (docs/operations.md, Input "
            "limits)",
            path=path,
        )
    return data


def size(limit: int) -> str:
    """A byte count as the limits are documented: ``256 MiB``."""
    return f"{limit / _MiB:g} MiB" if limit >= _MiB else f"{limit:,} bytes"


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__
