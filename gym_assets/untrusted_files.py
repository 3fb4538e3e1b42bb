"""Reading a file that someone else could have put in place: a guest, a harness, another user.

A sandboxed program can leave a symbolic link to a host file where we expect its answer, a
FIFO that blocks the reader for ever, or a link to ``/dev/zero``. So a file in a directory the
other side could write is opened only through directory descriptors, component by component,
from a directory that is ours (``root``, whose own path is trusted), never following a link;
``O_NONBLOCK`` so that a FIFO cannot block the open; and kept only when the descriptor is a
regular file, read through a bound. The file's mode is checked before the open too, so a
device never gets opened at all. The checked open and the bounded read (``open_regular``,
``read_up_to``) serve the files a user names too (``user_files``), links followed there.
"""

from __future__ import annotations

import errno
import fnmatch
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
        data = read_up_to(fd, limit)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise RefusedFile(f"{PurePath(relative)} holds more than {limit} bytes")
    return data


def read_up_to(fd: int, limit: int) -> bytes:
    """What ``fd`` holds, but never more than ``limit + 1`` bytes: a result longer than
    ``limit`` says the file is over its bound without reading the rest of it."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = os.read(fd, min(_CHUNK, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def open_beneath(root: Path, relative: str | PurePath) -> int:
    """A read-only descriptor of the regular file ``root/relative`` (see ``read_beneath``);
    the caller closes it."""
    shown = PurePath(relative)
    if not shown.parts:
        raise ValueError(f"not a path beneath a directory: {relative}")
    directory = _directory_beneath(root, shown.parent, shown)
    try:
        return open_regular(shown.name, dir_fd=directory)
    except NotRegular as exc:
        raise RefusedFile(f"{shown} {exc.reason}") from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # a link put in place after the check
            raise RefusedFile(f"{shown}: {shown.name} is a link or not a directory") from None
        raise
    finally:
        os.close(directory)


class NotRegular(Exception):
    """What a path leads to is not a regular file, or was swapped while it was opened;
    ``reason`` says which (``is a FIFO, not a regular file``)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


def open_regular(path: str | Path, *, dir_fd: int | None = None, follow: bool = False) -> int:
    """A read-only descriptor of the regular file ``path``; the caller closes it.

    Its mode is checked before the open, so a device is never opened, and the descriptor's
    after, so nothing swapped in between is read; the open is non-blocking, so a FIFO cannot
    block it. A link is followed only with ``follow``. ``NotRegular`` otherwise; ``OSError``
    (``FileNotFoundError`` ...) as they come."""
    before = os.stat(path, dir_fd=dir_fd, follow_symlinks=follow)
    if not stat.S_ISREG(before.st_mode):
        raise NotRegular(f"is {kind_of(before.st_mode)}, not a regular file")
    fd = os.open(path, _FILE & ~os.O_NOFOLLOW if follow else _FILE, dir_fd=dir_fd)
    after = os.fstat(fd)
    if not stat.S_ISREG(after.st_mode) or (after.st_dev, after.st_ino) != (
        before.st_dev,
        before.st_ino,
    ):
        os.close(fd)
        raise NotRegular("was replaced while it was opened")
    return fd


def glob_beneath(root: Path, relative: str | PurePath, pattern: str, limit: int) -> list[str]:
    """The paths under ``root/relative`` (relative to it, sorted) that match ``pattern``, one
    ``fnmatch`` pattern per path component, found without following a link to a directory
    (a matching link or FIFO at the last component is listed: reading it is refused later).
    ``FileNotFoundError`` when the directory is missing, ``RefusedFile`` when it is reached
    through a link or when more than ``limit`` entries would have to be looked at (a guest's
    tree of links to ``.`` would otherwise multiply without end)."""
    start = PurePath(relative)
    directory = _directory_beneath(root, start, start)
    budget = [limit]
    try:
        return sorted(_matching(directory, PurePath(pattern).parts, "", budget, start))
    finally:
        os.close(directory)


def _matching(
    directory: int, parts: tuple[str, ...], prefix: str, budget: list[int], shown: PurePath
) -> list[str]:
    found: list[str] = []
    with os.scandir(directory) as entries:
        for entry in entries:
            budget[0] -= 1
            if budget[0] < 0:
                raise RefusedFile(f"{shown} holds too many entries to look through")
            if not fnmatch.fnmatchcase(entry.name, parts[0]):
                continue
            if len(parts) == 1:
                found.append(prefix + entry.name)
            elif entry.is_dir(follow_symlinks=False):
                inner = _open_or_refuse(entry.name, _DIRECTORY, directory, shown)
                try:
                    found += _matching(inner, parts[1:], f"{prefix}{entry.name}/", budget, shown)
                finally:
                    os.close(inner)
    return found


def _directory_beneath(root: Path, relative: PurePath, shown: PurePath) -> int:
    """A descriptor of the directory ``root/relative``, each component opened without
    following a link."""
    if relative.is_absolute() or ".." in relative.parts:
        raise ValueError(f"not a path beneath a directory: {shown}")
    directory = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in relative.parts:
            inner = _open_or_refuse(part, _DIRECTORY, directory, shown)
            os.close(directory)
            directory = inner
    except BaseException:
        os.close(directory)
        raise
    return directory


def _open_or_refuse(name: str, flags: int, directory: int, shown: PurePath) -> int:
    try:
        return os.open(name, flags, dir_fd=directory)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise RefusedFile(f"{shown}: {name} is a link or not a directory") from None
        raise


def kind_of(mode: int) -> str:
    """What a non-regular file is, as refusals name it: ``a FIFO``, ``a directory`` ..."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "a device"
