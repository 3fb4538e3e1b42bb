"""Declare the environment servers that resolution would otherwise generate or retarget.

``gym-assets config add-environment-servers`` brings the given config files up to the rule that
every agent has an environment server, the way NeMo Gym's #4053 migration does, appending only:

* an agent of a given file that no environment server fronts gets a ``legacy_agent`` relay
  appended to that file (a retired agent gets none: the agents it moved into get their own);
  an agent moved into exactly one agent gets its relay written next to the rename, and the new
  agent a server that ``_inherit_from``s it with ``agent_server.name`` overridden;
* an environment server that references an agent which a given file renames (moves with
  ``_inherit_from`` into exactly one agent) gets, in that file, one override block that points
  the referencing fields at the new names (``gym_assets.config.overrides``): one block per
  server however many of its agents the file renames. Server names never change, so
  ``environment_server_routes`` stay valid;
* where appending cannot do it (the server is declared in the file of the rename, or that file
  already has a block of that name, or the agent moved into several agents) it says which
  file, field and value to update by hand, and exits 2.

Every config under the configs root is read, as the loader reads it, so an agent fronted (or
a server declared) in a file that was not named still counts. Files are written atomically,
and only when every file parses; a named file must lie inside the configs root.
"""

from __future__ import annotations

import copy
import os
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gym_assets.config.flavors import default_config_for, is_flavor
from gym_assets.config.inheritance import Inheritance, apply_inheritance, deep_merge
from gym_assets.config.locate import Locate
from gym_assets.config.model import ENVIRONMENTS, agent_references, server_instances
from gym_assets.config.overrides import Document, merge_documents, override_block
from gym_assets.config.relays import (
    block_yaml,
    fallback_name,
    fronted_agents,
    inheriting_relay_block,
    needs_environment_server,
    relay_block,
    relay_name,
)
from gym_assets.config.yaml_source import (
    KeyPath,
    expand_yaml_paths,
    parse_yaml_text,
    read_yaml_file,
    yaml_files_under,
)
from gym_assets.errors import ConfigError
from gym_assets.fileio import atomic_write_bytes
from gym_assets.json_shapes import is_mapping
from gym_assets.outputs.targets import is_within


@dataclass(frozen=True)
class _Document:
    path: Path
    content: bytes
    data: Mapping[str, Any]
    lines: Mapping[KeyPath, int]
    named: bool  # named on the command line, so it may get blocks (else read for the tree)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8")


@dataclass(frozen=True)
class _Reference:
    """One agent field of an environment server that names an agent ``_inherit_from`` moved."""

    server: str
    implementation: str
    field: str
    old: str
    agents: tuple[str, ...]  # where the agent ended up

    @property
    def dotted(self) -> str:
        return ".".join((self.server, ENVIRONMENTS, self.implementation, self.field, "name"))


@dataclass
class _Change:
    """What one named file gets appended: relays, then override blocks (server -> block)."""

    document: _Document
    blocks: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])

    @property
    def appended(self) -> dict[str, dict[str, Any]]:
        return {**self.blocks, **self.overrides}


def add_environment_servers(paths: list[Path], check: bool, configs_root: Path) -> int:
    """Migrate ``paths``; exit code 0 done, 1 changes pending (check), 2 failed or by hand."""
    documents, unreadable = _read_all(paths, configs_root)
    changes: list[_Change] = []
    by_hand: list[tuple[_Reference, Path, str]] = []
    texts: list[str] = []
    failed = bool(unreadable)
    if not failed:
        try:
            changes, by_hand = _plan(documents)
            texts = [_new_text(change) for change in changes]
        except ConfigError as exc:
            print(f"could not update {exc.render()}", file=sys.stderr)
            changes, by_hand, failed = [], [], True
    for change, text in zip(changes, texts, strict=True):
        _report(change, check)
        if not check:
            _write(change.document.path, text)
    for reference, file, why in by_hand:
        targets = ", ".join(f"`{agent}`" for agent in reference.agents)
        at = targets if len(reference.agents) == 1 else f"one of {targets}"
        message = f"update by hand: {file}: point `{reference.dotted}` at {at} ({why})"
        print(message, file=sys.stderr)
    blocks = sum(len(change.appended) for change in changes)
    print(
        f"\nfiles touched: {len(changes)}, blocks added: {blocks}, unreadable files: "
        f"{unreadable}, updates by hand: {len(by_hand)}"
    )
    if failed or by_hand:
        return 2
    return 1 if check and changes else 0


def _read_all(paths: list[Path], configs_root: Path) -> tuple[list[_Document], int]:
    """The named files and the rest of the configs tree, as the loader sees it, and how many
    files failed (each failure printed)."""
    named: dict[Path, bool] = {}  # file -> only found by expanding a directory
    for path in paths:
        for file in expand_yaml_paths([path]):
            named[file] = named.get(file, True) and path.is_dir()
    named_real = {path.resolve() for path in named}
    context = [path for path in _tree_files(configs_root) if path.resolve() not in named_real]
    documents: list[_Document] = []
    failed = 0
    for path, is_named, expanded in [
        *((path, True, expanded) for path, expanded in named.items()),
        *((path, False, True) for path in context),
    ]:
        try:
            document = _read(path, configs_root, is_named)
        except ConfigError as exc:
            verb = "update" if is_named else "read"
            print(f"could not {verb} {path}: {exc.render()}", file=sys.stderr)
            failed += 1
            continue
        if not (expanded and _flavor_of(configs_root, document)):
            documents.append(document)  # a flavor only when named itself
    replaced = {
        default
        for document in documents
        if (default := _flavor_of(configs_root, document)) is not None
    }
    for document in documents:
        if document.named and document.path.resolve() in replaced:
            print(
                f"could not update {document.path}: a flavor of its benchmark is named too, "
                "and a flavor stands in for this file; migrate them in separate runs",
                file=sys.stderr,
            )
            failed += 1
    return [d for d in documents if d.path.resolve() not in replaced], failed


def _flavor_of(configs_root: Path, document: _Document) -> Path | None:
    """The default config a flavor stands in for (resolved), or None for any other file."""
    if not configs_root.is_dir():
        return None
    root, path = configs_root.resolve(), document.path.resolve()
    if not is_flavor(root, path, document.data):
        return None
    default = default_config_for(root, path)
    return None if default is None else default.resolve()


def _tree_files(configs_root: Path) -> list[Path]:
    if configs_root.is_dir():
        return list(yaml_files_under(configs_root))
    return [configs_root] if configs_root.is_file() else []


def _read(path: Path, configs_root: Path, named: bool) -> _Document:
    if named and not is_within(path.resolve(), configs_root.resolve()):
        raise ConfigError(
            f"not inside the configs root {configs_root}; only config files are changed (pass "
            "--configs DIR to name the tree it belongs to)",
            path=path,
        )
    content, text = read_yaml_file(path)
    parsed = parse_yaml_text(text, path)
    data = parsed.data
    if data is None:
        data = dict[str, Any]()
    if not is_mapping(data):
        raise ConfigError(
            f"the top level must be a mapping of instance names; got {type(data).__name__}",
            path=path,
        )
    return _Document(path, content, data, parsed.lines, named)


def _plan(
    documents: list[_Document],
) -> tuple[list[_Change], list[tuple[_Reference, Path, str]]]:
    """The changes per named file, and the references that must be updated by hand."""
    merged = merge_documents(Document(d.path, d.data, d.lines) for d in documents)
    everything = merged.raw
    by_path = {document.path: document for document in documents}
    owner = {key: by_path[path] for key, path in merged.owners.items()}
    locate = _locator(merged.nodes)
    changes = {document.path: _Change(document) for document in documents}

    # References to a renamed agent: one override block per server, in the file of the rename.
    edited = copy.deepcopy(everything)
    ours = {name for name, document in owner.items() if document.named}
    by_hand: list[tuple[_Reference, Path, str]] = []
    retargets: dict[Path, dict[str, tuple[str, dict[str, str]]]] = {}
    for reference in _moved_references(apply_inheritance(everything, locate), ours):
        unmigratable = _why_by_hand(reference, owner)
        if unmigratable is not None:
            by_hand.append((reference, *unmigratable))
            continue
        target = owner[reference.agents[0]].path
        _, fields = retargets.setdefault(target, {}).setdefault(
            reference.server, (reference.implementation, {})
        )
        fields[reference.field] = reference.agents[0]
    for path, servers in retargets.items():
        for server, (implementation, fields) in servers.items():
            block = override_block(implementation, fields)
            changes[path].overrides[server] = block
            edited[server] = deep_merge(edited[server], block)
    inheritance = apply_inheritance(edited, locate)

    # Agents fronted by no server (counting the ones a by-hand update will front) get a relay.
    data = inheritance.data
    fronted = fronted_agents(data) | {agent for ref, _, _ in by_hand for agent in ref.agents}
    taken = set(everything)
    for change in changes.values():
        if not change.document.named:
            continue
        agents = [
            agent
            for name, agent in server_instances(data).items()
            if agent.is_agent
            and owner[name] is change.document
            and name not in fronted
            and needs_environment_server(agent)
        ]
        sources = {
            agent.name: _sole_source(inheritance, everything, agent.name) for agent in agents
        }
        named = [(agent, name) for agent in agents for name in (sources[agent.name], agent.name)]
        preferred = Counter(relay_name(name, agent.implementation) for agent, name in named if name)
        relays: dict[str, str] = {}  # agent -> its relay's name
        for agent, name in named:
            if name is None:
                continue
            relay = relay_name(name, agent.implementation)
            if preferred[relay] > 1 or relay in taken:
                relay = fallback_name(name, taken)
            taken.add(relay)
            relays[name] = relay
        for agent in agents:
            source = sources[agent.name]
            if source is None:
                change.blocks[relays[agent.name]] = relay_block(agent.name)
                continue
            change.blocks[relays[source]] = relay_block(source)
            change.blocks[relays[agent.name]] = inheriting_relay_block(relays[source], agent.name)
    pending = [change for change in changes.values() if change.appended]
    return pending, by_hand


def _sole_source(inheritance: Inheritance, raw: Mapping[str, Any], agent: str) -> str | None:
    """The agent ``agent`` was moved from, when it was that agent's one destination and, as
    written, an agent that needed a relay of its own (not a template)."""
    for source, movers in inheritance.moves.items():
        if movers != [agent] or inheritance.final_destinations(source) != [agent]:
            continue
        written = server_instances({source: raw.get(source)}).get(source)
        if written is not None and written.is_agent and needs_environment_server(written):
            return source
    return None


def _moved_references(inheritance: Inheritance, ours: set[str]) -> list[_Reference]:
    """Agent fields of live environment servers that still name an agent moved into one of
    ``ours`` (instances of the given files); other renames are not this run's business."""
    instances = server_instances(inheritance.data)
    found: list[_Reference] = []
    for server in instances.values():
        if server.kind != ENVIRONMENTS:
            continue
        for field_name, ref in agent_references(server.config):
            old = ref.get("name")
            if not isinstance(old, str) or old not in inheritance.moves:
                continue
            agents = tuple(
                name
                for name in inheritance.final_destinations(old)
                if name in instances and instances[name].is_agent
            )
            if set(agents) & ours:  # none at all: a dangling reference, which loading reports
                found.append(
                    _Reference(server.name, server.implementation, field_name, old, agents)
                )
    return found


def _why_by_hand(reference: _Reference, owner: Mapping[str, _Document]) -> tuple[Path, str] | None:
    """Where and why ``reference`` cannot be retargeted by appending, or None if it can."""
    server, target = owner[reference.server], owner[reference.agents[0]]
    if len(reference.agents) > 1:
        return server.path, (
            f"'{reference.old}' was moved into several agents; give each of the others its own "
            f"environment server (`_inherit_from: {reference.server}` with `_copy: true`)"
        )
    if target is server:
        return target.path, "the server is declared in the same file as the rename"
    if reference.server in target.data:
        return target.path, (
            f"that file already has a block for '{reference.server}', and appending another "
            "would repeat its key; add the field to that block"
        )
    return None


def _locator(nodes: Mapping[KeyPath, tuple[Path, int]]) -> Locate:
    def locate(*path: Any) -> dict[str, Any]:
        for depth in range(len(path), 0, -1):
            found = nodes.get(tuple(path[:depth]))
            if found is not None:
                return {"path": found[0], "line": found[1]}
        return {}

    return locate


def _report(change: _Change, check: bool) -> None:
    path, appended = change.document.path, change.appended
    if not check:
        print(f"added {len(appended)} to {path}")
        return
    print(f"would add {len(appended)} to {path}:")
    for server, block in appended.items():
        print("".join(f"    {line}\n" for line in block_yaml(server, block).splitlines()), end="")


def _new_text(change: _Change) -> str:
    """The file's new text, checked to parse to the old data plus exactly the new blocks."""
    document = change.document
    text = document.text
    newline = "\r\n" if "\r\n" in text else "\n"
    lead = "" if not text or text.endswith(("\n", "\r")) else "\n"
    blocks = "\n".join(block_yaml(server, block) for server, block in change.appended.items())
    text += f"{lead}\n{blocks}".replace("\n", newline)
    expected = {**document.data, **change.appended}
    if parse_yaml_text(text, document.path).data != expected:
        raise ConfigError(
            "appending to this file would change more than the planned blocks, so nothing was "
            "written; make the changes by hand",
            path=document.path,
        )
    return text


def _write(path: Path, text: str) -> None:
    path = path.resolve()  # a link in the tree stays a link
    mode = os.stat(path).st_mode & 0o7777
    atomic_write_bytes(path, text.encode("utf-8"))
    os.chmod(path, mode)
