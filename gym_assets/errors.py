"""User-facing errors.

Every refusal the user can fix is a ``UserError``: the CLI prints its message once (no
traceback) and exits 1; Dagster assets raise it as a failure with the same text. The message
names the file and line when there is one, says what is wrong and how to fix it.
"""

from __future__ import annotations

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
