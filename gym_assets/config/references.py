"""Keep server references consistent: follow agent renames, refuse dangling references.

Environment servers name agents; agents and environment servers name resources and model
servers. A reference to an agent that ``_inherit_from`` moved to exactly one new agent follows
it; every other reference must name a defined instance of the right kind.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from gym_assets.config.errors import AmbiguousAgentRenameError, ServerRefNotFoundError
from gym_assets.config.inheritance import Inheritance
from gym_assets.config.locate import Locate, did_you_mean, quoted
from gym_assets.config.model import (
    AGENTS,
    ENVIRONMENTS,
    MODELS,
    RESOURCES,
    SERVER_KINDS,
    ServerInstance,
    agent_references,
    server_instances,
)
from gym_assets.errors import ConfigError
from gym_assets.json_shapes import is_mapping

UNSET = "???"  # the marker of a value a template leaves for its users to fill in
UNTYPED_REFERENCE_KINDS = {
    "resources_server": RESOURCES,
    "model_server": MODELS,
    "agent_server": AGENTS,
}
CHECKED_KINDS = (AGENTS, ENVIRONMENTS)


def server_references(config: Mapping[str, Any]) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """``(field, kind, reference)`` for each top-level field that references a server.

    A field references a server when its mapping value has a ``type`` naming a server kind, or
    when it is one of the conventional fields (``resources_server``, ``model_server``,
    ``agent_server``) without a type.
    """
    for field, value in config.items():
        if not is_mapping(value):
            continue
        kind = value.get("type") or UNTYPED_REFERENCE_KINDS.get(str(field))
        if kind in SERVER_KINDS:
            yield str(field), kind, value


def rename_agent_references(data: Mapping[str, Any], renames: Mapping[str, str]) -> None:
    """Point every environment-server agent reference to a renamed agent at its new name.

    Only the fields naming a renamed agent change; other participants of a multi-agent server
    and the servers' own names stay as they are, so routes remain valid.
    """
    for server in server_instances(data).values():
        if server.kind != ENVIRONMENTS:
            continue
        for _, ref in agent_references(server.config):
            name = ref.get("name")
            if isinstance(name, str) and name in renames:
                ref["name"] = renames[name]  # type: ignore[index]  # our own dict tree


def retarget_renamed_agents(data: dict[str, Any], inheritance: Inheritance, locate: Locate) -> None:
    """Point environment servers at the one agent a referenced agent was moved to."""
    instances = server_instances(data)
    renames: dict[str, str] = {}
    for source in inheritance.moves:
        agents = [
            name
            for name in inheritance.final_destinations(source)
            if name in instances and instances[name].is_agent
        ]
        if len(agents) == 1:
            renames[source] = agents[0]
        elif len(agents) > 1:
            for server in instances.values():
                if server.kind != ENVIRONMENTS:
                    continue
                for field, ref in agent_references(server.config):
                    if ref.get("name") == source:
                        raise _ambiguous_rename(source, agents, server, field, locate)
    rename_agent_references(data, renames)


def _ambiguous_rename(
    source: str, agents: list[str], server: ServerInstance, field: str, locate: Locate
) -> AmbiguousAgentRenameError:
    dotted = f"{server.name}.{ENVIRONMENTS}.{server.implementation}.{field}.name"
    return AmbiguousAgentRenameError(
        f"Agent '{source}' was moved by `_inherit_from` into several agents ({quoted(agents)}), "
        f"but {dotted} still references '{source}', so it is unclear which agent that server "
        f"should front. Give each new agent its own environment server (an instance with "
        f"`_inherit_from: {server.name}` and `_copy: true` that sets {field}.name to the "
        f"agent), or point {dotted} at one of the agents.",
        **locate(server.name, ENVIRONMENTS, server.implementation, field, "name"),
    )


def check_server_references(
    data: Mapping[str, Any], inheritance: Inheritance, locate: Locate
) -> None:
    """Every reference of an agent or environment server must name an instance of its kind."""
    instances = server_instances(data)
    for server in instances.values():
        if server.kind not in CHECKED_KINDS:
            continue
        for field, kind, ref in server_references(server.config):
            at = locate(server.name, server.kind, server.implementation, field, "name")
            name = ref.get("name")
            if name == UNSET:
                continue
            if not isinstance(name, str) or not name:
                raise ConfigError(
                    f"In server instance '{server.name}', field '{field}' references a {kind} "
                    f"instance but has no `name`; set {field}.name to the instance it uses.",
                    **at,
                )
            target = instances.get(name)
            if target is not None and target.kind == kind:
                continue
            raise ServerRefNotFoundError(
                f"In server instance '{server.name}', field '{field}' references "
                f"{kind}/'{name}', which is not defined."
                + (f" '{name}' is a {target.kind} instance." if target is not None else "")
                + did_you_mean(name, [n for n, s in instances.items() if s.kind == kind])
                + _missing_reference_hint(server, field, kind, name, inheritance),
                **at,
            )


def _missing_reference_hint(
    server: ServerInstance, field: str, kind: str, name: str, inheritance: Inheritance
) -> str:
    moved_to = inheritance.final_destinations(name)
    if server.kind == ENVIRONMENTS and kind == AGENTS:
        moved = f" '{name}' was moved by `_inherit_from` to {quoted(moved_to)}." if moved_to else ""
        return (
            f"{moved} Environment servers follow a top-level `_inherit_from` rename only when "
            "exactly one destination still defines an agent; otherwise point this server's "
            f"{field}.name at an existing agent."
        )
    if moved_to:
        return (
            f" '{name}' was moved by `_inherit_from` to {quoted(moved_to)}; point {field}.name "
            f"there, or add `_copy: true` to the inheriting instance to keep '{name}'."
        )
    return f" Define '{name}' or point {field}.name at an existing {kind} instance."
