"""Helpers every config error uses: where a node was written, and did-you-mean hints."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any, Protocol


class Locate(Protocol):
    """Map a key path to ``ConfigError`` keyword arguments (``path``/``line``), or ``{}``."""

    def __call__(self, *path: Any) -> dict[str, Any]: ...


def nowhere(*path: Any) -> dict[str, Any]:
    """The locator for configs that did not come from files."""
    return {}


def locator_of(config: object) -> Locate:
    """The locator of a ``LoadedConfig`` (anything with ``where``), else ``nowhere``."""
    where = getattr(config, "where", None)
    if where is None:
        return nowhere

    def locate(*path: Any) -> dict[str, Any]:
        file, line = where(*path)
        return {"path": file, "line": line or None}

    return locate


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """`` Did you mean 'x'?`` for close matches, else an empty string."""
    matches = difflib.get_close_matches(name, sorted(set(candidates)), n=3, cutoff=0.6)
    if not matches:
        return ""
    return " Did you mean " + " or ".join(f"'{match}'" for match in matches) + "?"


def quoted(names: Iterable[str]) -> str:
    """``'a', 'b'`` — names as they appear in messages."""
    return ", ".join(f"'{name}'" for name in names)
