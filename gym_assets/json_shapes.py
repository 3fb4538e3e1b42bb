"""Type guards for values read from JSON or YAML, whose shape is known only when they are read.

``isinstance(value, Mapping)`` tells a type checker that a parsed value is a mapping of unknown
keys and values; these guards say what the code then relies on: a mapping (YAML keys need not
be strings) or a list whose items may be anything, each read and checked before use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard


def is_mapping(value: object) -> TypeGuard[Mapping[Any, Any]]:
    """A JSON object or YAML mapping."""
    return isinstance(value, Mapping)


def is_list(value: object) -> TypeGuard[list[Any]]:
    """A JSON array or YAML sequence."""
    return isinstance(value, list)
