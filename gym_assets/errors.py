"""User-facing errors.

Every refusal the user can fix is a ``UserError``: the CLI prints its message once (no
traceback) and exits 1; Dagster assets raise it as a failure with the same text. The message
names the file and line when there is one, says what is wrong and how to fix it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path


class UserError(Exception):
    """An error caused by input the user controls (configs, data files, flags)."""

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None):
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        super().__init__(self.render())

    def render(self) -> str:
        if self.path is None:
            return self.message
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"


class UsageError(UserError):
    """A flag names something that does not exist (e.g. an unknown ``--benchmark`` token);
    the CLI prints it like any refusal but exits 2, as for other usage errors."""


class ConfigError(UserError):
    """The configs tree is invalid (bad shape, dangling reference, bad route, ...)."""


class OutputError(UserError):
    """An output path cannot be written: refused by the ownership rules, or failed.

    Disk full, permission denied, a read-only filesystem, a path under a regular file: each
    is something the user fixes, so it names the output and the OS's reason."""


def os_failure(path: str | Path, exc: OSError) -> OutputError:
    """``<path>: cannot write: <the OS's reason>``: the output the user named, not a temp file."""
    return OutputError(f"cannot write: {_reason(exc)}", path=path)


def os_error_line(exc: OSError) -> str:
    """One line for an ``OSError`` nothing nearer caught (a data root that is a file, a full
    disk): the paths it names and the OS's reason, never a traceback."""
    paths = [str(name) for name in (exc.filename, exc.filename2) if name is not None]
    return f"{' -> '.join(paths)}: {_reason(exc)}" if paths else _reason(exc)


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


@contextlib.contextmanager
def reported(path: str | Path) -> Iterator[None]:
    """Turn an ``OSError`` raised in the block into an ``OutputError`` about ``path``."""
    try:
        yield
    except OSError as exc:
        raise os_failure(path, exc) from None
