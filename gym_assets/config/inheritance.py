"""Top-level ``_inherit_from``: derive one instance from another, moving it by default.

``new: {_inherit_from: old, ...}`` deep-merges ``old`` under ``new`` (the inheriting block
wins; mappings merge, everything else is replaced) and retires ``old``, so inheriting is how a
user renames or re-tunes an instance defined in a shared file. ``_copy: true`` keeps ``old``
too. The moves are reported so references to a retired agent can follow it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gym_assets.config.locate import Locate, did_you_mean
from gym_assets.config.model import RESERVED_TOP_LEVEL_KEYS
from gym_assets.errors import ConfigError
from gym_assets.json_shapes import is_mapping

INHERIT_KEY = "_inherit_from"
COPY_KEY = "_copy"


@dataclass
class Inheritance:
    """The config with inheritance applied, and who moved where."""

    data: dict[str, Any]
    moves: dict[str, list[str]]  # retired instance -> the instances that moved it

    def final_destinations(self, source: str) -> list[str]:
        """Where a retired instance ended up, following moves of moves, in config order."""
        found: list[str] = []
        pending = list(self.moves.get(source, []))
        seen = {source}
        while pending:
            name = pending.pop(0)
            if name in seen:
                continue
            seen.add(name)
            if name in self.data:
                found.append(name)
            pending.extend(self.moves.get(name, []))
        order = {name: index for index, name in enumerate(self.data)}
        return sorted(found, key=order.__getitem__)


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``override`` on top: mappings merge key by key, other values replace."""
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if is_mapping(value) and is_mapping(merged.get(key)):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def apply_inheritance(raw: Mapping[str, Any], locate: Locate) -> Inheritance:
    """Resolve every ``_inherit_from`` chain; refuse unknown bases and cycles."""
    resolved: dict[str, Any] = {}

    def resolve(name: str, chain: tuple[str, ...]) -> Any:
        if name in resolved:
            return resolved[name]
        if name in chain:
            loop = " -> ".join((*chain[chain.index(name) :], name))
            raise ConfigError(
                f"`_inherit_from` goes round in a circle: {loop}. Break the cycle so that "
                "one of these instances is defined without inheriting.",
                **locate(name, INHERIT_KEY),
            )
        block = raw[name]
        if not _inherits(name, block):
            resolved[name] = copy.deepcopy(block)
            return resolved[name]
        base = _base_name(raw, name, block, locate)
        own = {key: value for key, value in block.items() if key not in (INHERIT_KEY, COPY_KEY)}
        resolved[name] = deep_merge(resolve(base, (*chain, name)), own)
        return resolved[name]

    moves: dict[str, list[str]] = {}
    for name, block in raw.items():
        resolve(name, ())
        if _inherits(name, block) and not _is_copy(name, block, locate):
            moves.setdefault(block[INHERIT_KEY], []).append(name)
    data = {name: resolved[name] for name in raw if name not in moves}
    return Inheritance(data=data, moves=moves)


def _inherits(name: str, block: Any) -> bool:
    return name not in RESERVED_TOP_LEVEL_KEYS and is_mapping(block) and INHERIT_KEY in block


def _base_name(raw: Mapping[str, Any], name: str, block: Mapping[str, Any], locate: Locate) -> str:
    base = block[INHERIT_KEY]
    if not isinstance(base, str) or not base:
        raise ConfigError(
            f"'{name}': `_inherit_from` must be the name of another top-level instance, "
            f"got {base!r}.",
            **locate(name, INHERIT_KEY),
        )
    if base in RESERVED_TOP_LEVEL_KEYS or not is_mapping(raw.get(base)):
        hint = did_you_mean(base, [key for key, value in raw.items() if is_mapping(value)])
        what = "is not defined" if base not in raw else "is not a server instance"
        raise ConfigError(
            f"'{name}' inherits from '{base}', which {what}.{hint} Point `_inherit_from` at "
            "an instance defined in the configs tree.",
            **locate(name, INHERIT_KEY),
        )
    return base


def _is_copy(name: str, block: Mapping[str, Any], locate: Locate) -> bool:
    value = block.get(COPY_KEY, False)
    if not isinstance(value, bool):
        raise ConfigError(
            f"'{name}': `_copy` must be true or false, got {value!r}.",
            **locate(name, COPY_KEY),
        )
    return value
