"""Merge the files of a configs tree, letting one file retarget another file's server.

A top-level key is defined by one file. The one exception is the block NeMo Gym's #4053
migration appends for renamed agents: written in another file, it points agent references of
an environment server defined elsewhere at new names, and nothing else::

    shared_env:                       # defined in another file
      environment_servers:
        conversation:                 # the implementation the definition has
          user_agent: {type: responses_api_agents, name: renamed_user}

NeMo Gym merges its config files deeply in the order they are listed, a later file winning.
A tree has no order its user chose (files are read sorted by path), so "later wins" would let
a file's name decide the outcome, and any accidental duplicate would silently merge. Here an
override block wins over the definition whatever the file order, several override blocks of
one server must agree where they overlap, and any other duplicate key stays an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_assets.config.inheritance import INHERIT_KEY, deep_merge
from gym_assets.config.model import AGENTS, ENVIRONMENTS, SERVER_KINDS, agent_references
from gym_assets.config.yaml_source import KeyPath
from gym_assets.errors import ConfigError
from gym_assets.json_shapes import is_mapping

_REFERENCE_KEYS = frozenset({"type", "name"})


@dataclass(frozen=True)
class Document:
    """One parsed config file: its top-level mapping and the line of each node."""

    path: Path
    data: Mapping[str, Any]
    lines: Mapping[KeyPath, int]


@dataclass(frozen=True)
class MergedTree:
    """The documents merged: the raw config, where each node was written, and for each
    top-level key the file that defines it (an override block's file is never its owner)."""

    raw: dict[str, Any]
    nodes: dict[KeyPath, tuple[Path, int]]
    owners: dict[str, Path]


def is_override_block(block: Any) -> bool:
    """Whether ``block`` only retargets agent references of one environment server:
    ``{environment_servers: {<impl>: {<field>: {type: responses_api_agents, name: <agent>}}}}``
    with at least one field (``agent_server`` may leave the type out)."""
    if not is_mapping(block) or set(block) != {ENVIRONMENTS}:
        return False
    implementations = block[ENVIRONMENTS]
    if not is_mapping(implementations) or len(implementations) != 1:
        return False
    (fields,) = implementations.values()
    if not is_mapping(fields) or not fields:
        return False
    return all(_is_agent_reference(field, value) for field, value in fields.items())


def override_block(implementation: str, fields: Mapping[str, str]) -> dict[str, Any]:
    """The override block pointing each of ``fields`` (field -> agent) at its agent."""
    refs = {field: {"type": AGENTS, "name": agent} for field, agent in fields.items()}
    return {ENVIRONMENTS: {implementation: refs}}


def merge_documents(documents: Iterable[Document]) -> MergedTree:
    """Merge ``documents`` in order: definitions keep their order, override blocks are laid
    over their definition; a key defined twice, an override without a definition, one that
    does not fit its definition, or two that disagree is a ``ConfigError`` at its line."""
    documents = list(documents)
    written: dict[str, list[Document]] = {}
    for document in documents:
        for key in document.data:
            written.setdefault(key, []).append(document)
    definitions: dict[str, Document] = {}
    overrides: dict[str, list[Document]] = {}
    for key, found in written.items():
        defining = [d for d in found if len(found) == 1 or not is_override_block(d.data[key])]
        if len(defining) > 1:
            raise _defined_twice(key, *defining[:2])
        if not defining:
            raise _never_defined(key, found)
        definitions[key] = defining[0]
        overrides[key] = [d for d in found if d is not defining[0]]

    raw: dict[str, Any] = {}
    for document in documents:
        raw.update((k, v) for k, v in document.data.items() if definitions[k] is document)
    for key, overriding in overrides.items():
        set_by: dict[tuple[str, str], Document] = {}
        for document in overriding:
            _check_fits(key, definitions[key], document)
            ((implementation, fields),) = document.data[key][ENVIRONMENTS].items()
            for field in fields:
                earlier = set_by.setdefault((implementation, field), document)
                if earlier is not document:
                    _check_agree(key, implementation, field, earlier, document)
            raw[key] = deep_merge(raw[key], document.data[key])
    nodes: dict[KeyPath, tuple[Path, int]] = {}
    for overriding in (False, True):  # an override's lines win over its definition's
        for document in documents:
            for path, line in document.lines.items():
                # an override block owns only the references it sets, never the server's key
                if (definitions[path[0]] is not document) == overriding and (
                    not overriding or len(path) > 3
                ):
                    nodes[path] = (document.path, line)
    owners = {key: document.path for key, document in definitions.items()}
    return MergedTree(raw=raw, nodes=nodes, owners=owners)


def _is_agent_reference(field: Any, value: Any) -> bool:
    if not isinstance(field, str) or not is_mapping(value) or not set(value) <= _REFERENCE_KEYS:
        return False
    name, kind = value.get("name"), value.get("type")
    typed = kind == AGENTS or (field == "agent_server" and kind is None)
    return typed and isinstance(name, str) and bool(name)


def _line(document: Document, *path: Any) -> int | None:
    return document.lines.get(tuple(path)) or None


def _check_fits(key: str, definition: Document, override: Document) -> None:
    """The override's server and implementation, and each field, exist in the definition as
    written (a definition that inherits them is checked when references are resolved)."""
    block = definition.data[key]
    ((implementation, fields),) = override.data[key][ENVIRONMENTS].items()
    where = f"{definition.path}:{_line(definition, key) or 0}"
    fix = (
        "An override block may only point agent references that the server already has at "
        "other agents; change anything else in the server's own file, or derive a new server "
        "from it with `_inherit_from`."
    )
    if not is_mapping(block):
        raise ConfigError(
            f"'{key}' is overridden here, but its definition at {where} is not a server. {fix}",
            path=override.path,
            line=_line(override, key),
        )
    kinds = [kind for kind in SERVER_KINDS if block.get(kind) is not None]
    if kinds and kinds != [ENVIRONMENTS]:
        raise ConfigError(
            f"'{key}' is overridden here as an environment server, but {where} defines it as "
            f"{kinds[0]}. {fix}",
            path=override.path,
            line=_line(override, key),
        )
    implementations = block.get(ENVIRONMENTS)
    if not is_mapping(implementations):
        return  # inherited: resolution checks the result
    if implementation not in implementations:
        have = ", ".join(f"'{name}'" for name in implementations) or "none"
        raise ConfigError(
            f"'{key}' is overridden here as implementation '{implementation}', but {where} "
            f"defines {have}. {fix}",
            path=override.path,
            line=_line(override, key, ENVIRONMENTS, implementation),
        )
    settings = implementations[implementation]
    if INHERIT_KEY in block or not is_mapping(settings):
        return
    references = {field for field, _ in agent_references(settings)}
    for field in fields:
        if field not in references:
            raise ConfigError(
                f"'{key}': the override sets '{field}', which is not an agent reference of the "
                f"server defined at {where}. {fix}",
                path=override.path,
                line=_line(override, key, ENVIRONMENTS, implementation, field),
            )


def _check_agree(
    key: str, implementation: str, field: str, earlier: Document, later: Document
) -> None:
    dotted = f"{key}.{ENVIRONMENTS}.{implementation}.{field}"
    first = earlier.data[key][ENVIRONMENTS][implementation][field]
    second = later.data[key][ENVIRONMENTS][implementation][field]
    if first == second:
        return
    at = _line(earlier, key, ENVIRONMENTS, implementation, field) or 0
    raise ConfigError(
        f"`{dotted}` is overridden twice with different agents: here and at "
        f"{earlier.path}:{at}. Keep one of the two override blocks.",
        path=later.path,
        line=_line(later, key, ENVIRONMENTS, implementation, field),
    )


def _defined_twice(key: str, first: Document, second: Document) -> ConfigError:
    return ConfigError(
        f"top-level key '{key}' is already defined in {first.path}:{_line(first, key) or 0}; "
        "each key may be defined in one file only (another file may only override the agent "
        "references of an environment server). Rename one of them, or derive one from the "
        "other with `_inherit_from`.",
        path=second.path,
        line=_line(second, key),
    )


def _never_defined(key: str, found: list[Document]) -> ConfigError:
    places = ", ".join(f"{d.path}:{_line(d, key) or 0}" for d in found)
    return ConfigError(
        f"top-level key '{key}' is written in several files ({places}), each only as an "
        "override block (agent references of an environment server, nothing else); one of "
        "them must define the server (its entrypoint and settings).",
        path=found[-1].path,
        line=_line(found[-1], key),
    )
