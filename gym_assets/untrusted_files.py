"""Reading a file that someone else could have put in place: a guest, a harness, another user.

A sandboxed program can leave a symbolic link to a host file where we expect its answer, a
FIFO that blocks the reader for ever, or a link to ``/dev/zero``. So a file in a directory the
other side could write is opened only through directory descriptors, component by component,
from a directory that is ours (``root``, whose own path is trusted), never following a link;
``O_NONBLOCK`` so that a FIFO cannot block the open; and kept only when the descriptor is a
regular file, read through a bound. The file's mode is checked before the open too, so a
device never gets opened at all.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePath

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CHUNK = 1 << 20


class RefusedFile(Exception):
    """The file is there but not one to read: a link, not a regular file, or over the bound.
    The message says which, naming the path as given (relative to the root)."""


def read_beneath(root: Path, relative: str | PurePath, limit: int) -> bytes:
    """The bytes of the regular file ``root/relative``, at most ``limit`` of them.

    ``FileNotFoundError`` when it (or a directory on the way) does not exist, ``RefusedFile``
    when something on the way is a link or not a directory, when it is not a regular file or
    when it holds more than ``limit`` bytes; other ``OSError`` as they come."""
    fd = open_beneath(root, relative)
    try:
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - size))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    raise RefusedFile(f"{PurePath(relative)} holds more than {limit} bytes")


def open_beneath(root: Path, relative: str | PurePath) -> int:
    """A read-only descriptor of the regular file ``root/relative`` (see ``read_beneath``);
    the caller closes it."""
    parts = PurePath(relative).parts
    if not parts or PurePath(relative).is_absolute() or ".." in parts:
        raise ValueError(f"not a path beneath a directory: {relative}")
    shown = PurePath(relative)
    directory = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            inner = _open_or_refuse(part, _DIRECTORY, directory, shown)
            os.close(directory)
            directory = inner
        before = os.stat(parts[-1], dir_fd=directory, follow_symlinks=False)
        if not stat.S_ISREG(before.st_mode):
            raise RefusedFile(f"{shown} is {_kind(before.st_mode)}, not a regular file")
        fd = _open_or_refuse(parts[-1], _FILE, directory, shown)
    finally:
        os.close(directory)
    after = os.fstat(fd)
    if not stat.S_ISREG(after.st_mode) or (after.st_dev, after.st_ino) != (
        before.st_dev,
        before.st_ino,
    ):
        os.close(fd)
        raise RefusedFile(f"{shown} was replaced while it was opened")
    return fd


def _open_or_refuse(name: str, flags: int, directory: int, shown: PurePath) -> int:
    try:
        return os.open(name, flags, dir_fd=directory)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise RefusedFile(f"{shown}: {name} is a link or not a directory") from None
        raise


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "a device"
