"""Declare the environment servers that resolution would otherwise generate.

``gym-assets config add-environment-servers`` appends one ``legacy_agent`` relay per agent that
no environment server fronts, to the file that defines the agent, so the config resolves with
no deprecation warning. It only appends: the original bytes, comments included, stay a prefix
of the result. Agents fronted anywhere in the run (by any agent field, multi-agent servers
included) get nothing, since a second server would make routing by agent ambiguous; renames
(``_inherit_from``) of an agent that is or will be fronted are left to resolution, which
points the reference at the new name. Only files inside the configs root are changed (a link is
followed to its file, which must be there too); any other path is refused before anything is
written.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_assets.config.inheritance import COPY_KEY, INHERIT_KEY
from gym_assets.config.model import ServerInstance, server_instances
from gym_assets.config.relays import (
    fallback_name,
    fronted_agents,
    is_template,
    relay_name,
    relay_yaml,
)
from gym_assets.config.yaml_source import expand_yaml_paths, parse_yaml_text
from gym_assets.errors import ConfigError
from gym_assets.io import atomic_write_bytes
from gym_assets.json_shapes import is_mapping
from gym_assets.outputs.targets import is_within

HEADER = "# Environment servers added by `gym-assets config add-environment-servers`."


@dataclass(frozen=True)
class _Document:
    path: Path
    content: bytes
    data: Mapping[str, Any]


def add_environment_servers(paths: list[Path], check: bool, configs_root: Path) -> int:
    """Append relays for unfronted agents; exit code 0 done, 1 changes pending (check), 2 failed.

    Nothing is written unless every file parses and lies in ``configs_root``, because a file
    that cannot be read may be the one that fronts an agent.
    """
    documents: list[_Document] = []
    failed = False
    for path in expand_yaml_paths(paths):
        try:
            documents.append(_read(path, configs_root))
        except ConfigError as exc:
            print(f"could not update {path}: {exc.render()}", file=sys.stderr)
            failed = True
    if failed:
        return 2
    pending = 0
    for document, relays in _plan(documents):
        pending += 1
        if check:
            print(f"would add {len(relays)} to {document.path}")
            continue
        _append(document, relays)
        print(f"added {len(relays)} to {document.path}")
    return 1 if check and pending else 0


def _read(path: Path, configs_root: Path) -> _Document:
    if not is_within(path.resolve(), configs_root.resolve()):
        raise ConfigError(
            f"not inside the configs root {configs_root}; only config files are changed (pass "
            "--configs DIR to name the tree it belongs to)",
            path=path,
        )
    try:
        content = path.read_bytes()
        text = content.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the file: {exc}", path=path) from None
    data = parse_yaml_text(text, path).data
    if data is None:
        data = dict[str, Any]()
    if not is_mapping(data):
        raise ConfigError(
            f"the top level must be a mapping of instance names; got {type(data).__name__}",
            path=path,
        )
    return _Document(path=path, content=content, data=data)


def _is_moved(block: Any) -> bool:
    return (
        is_mapping(block)
        and isinstance(block.get(INHERIT_KEY), str)
        and (block.get(COPY_KEY) is not True)
    )


def _plan(documents: list[_Document]) -> list[tuple[_Document, dict[str, str]]]:
    """``(document, {relay name: agent})`` for each document that needs relays, in order."""
    everything: dict[str, Any] = {}
    owner: dict[str, Path] = {}
    for document in documents:
        everything.update(document.data)
        owner.update(dict.fromkeys(document.data, document.path))
    fronted = fronted_agents(everything)
    movers = Counter(block[INHERIT_KEY] for block in everything.values() if _is_moved(block))
    candidates = {
        agent.name: agent
        for agent in server_instances(everything).values()
        if agent.is_agent and agent.name not in fronted and _may_need_server(agent, everything)
    }

    def follows_a_rename(agent: ServerInstance) -> bool:
        """A mover of a fronted agent, or the sole mover of a migrated one.

        Resolution points the agent's server at the mover; with several movers of a fronted
        agent it refuses the config with a message that says how to fix it by hand.
        """
        block = everything[agent.name]
        base = block.get(INHERIT_KEY) if _is_moved(block) else None
        return base in fronted or (movers[base] == 1 and base in candidates)

    def retired_with_several_movers(agent: ServerInstance) -> bool:
        """A relay for it would be ambiguous; each mover gets its own instead."""
        return movers[agent.name] > 1

    taken = set(everything)
    plans: list[tuple[_Document, dict[str, str]]] = []
    for document in documents:
        agents = [
            candidates[name]
            for name in document.data
            if name in candidates
            and owner[name] == document.path
            and not follows_a_rename(candidates[name])
            and not retired_with_several_movers(candidates[name])
        ]
        preferred = Counter(relay_name(agent.name, agent.implementation) for agent in agents)
        relays: dict[str, str] = {}
        for agent in agents:
            name = relay_name(agent.name, agent.implementation)
            if preferred[name] > 1 or name in taken:
                name = fallback_name(agent.name, taken)
            taken.add(name)
            relays[name] = agent.name
        if relays:
            plans.append((document, relays))
    return plans


def _may_need_server(agent: ServerInstance, everything: Mapping[str, Any]) -> bool:
    """Started agents and derived agents (whose entrypoint may be inherited), not templates."""
    derived = INHERIT_KEY in everything[agent.name]
    return (bool(agent.config.get("entrypoint")) or derived) and not is_template(agent)


def _append(document: _Document, relays: Mapping[str, str]) -> None:
    newline = "\r\n" if b"\r\n" in document.content else "\n"
    text = document.content.decode("utf-8")
    lead = "" if not text or text.endswith(("\n", "\r")) else "\n"
    blocks = "\n".join(relay_yaml(server, agent) for server, agent in relays.items())
    addition = f"{lead}\n{HEADER}\n{blocks}".replace("\n", newline)
    path = document.path.resolve()  # a link in the tree stays a link
    mode = os.stat(path).st_mode & 0o7777
    atomic_write_bytes(path, document.content + addition.encode("utf-8"))
    os.chmod(path, mode)
