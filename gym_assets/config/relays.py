"""Every agent needs an environment server; old configs get a generated relay meanwhile.

An agent that no environment server references cannot be reached by rows routed by agent.
Older configs declared agents only, so resolution fronts each such agent with a generated
``legacy_agent`` relay and warns once; ``error_on_agent_without_environment_server: true`` turns
that into an error. The naming rule and block shape are shared with the migration command so
that migrated configs resolve to exactly what resolution would have generated.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import yaml

from gym_assets.config.errors import AgentWithoutEnvironmentServerError
from gym_assets.config.locate import Locate
from gym_assets.config.model import (
    AGENTS,
    ENVIRONMENTS,
    ServerInstance,
    agent_names,
    server_instances,
)
from gym_assets.config.references import UNSET
from gym_assets.json_shapes import is_mapping

STRICT_FLAG = "error_on_agent_without_environment_server"
RELAY_IMPLEMENTATION = "legacy_agent"
SERVER_SUFFIX = "_environment_server"
NATIVE_SESSION_AGENT_TYPES = frozenset(
    {"hermes_agent", "pi_agent", "codex_agent", "openclaw_agent", "opencode_agent"}
)
MIGRATE_COMMAND = (
    "gym-assets config add-environment-servers path/to/config.yaml [more paths] [--check]"
)


def relay_name(agent: str, agent_type: str) -> str:
    """The preferred relay name: the agent's name without its type (or ``_agent``) suffix.

    ``mcqa_simple_agent`` (``simple_agent``) -> ``mcqa_environment_server``;
    ``simple_agent`` (``simple_agent``) -> ``simple_agent_environment_server``.
    """
    for suffix in (f"_{agent_type}", agent_type):
        if agent.endswith(suffix):
            stem = agent[: -len(suffix)].rstrip("_")
            break
    else:
        stem = agent.removesuffix("_agent").rstrip("_")
    return (stem or agent_type) + SERVER_SUFFIX


def fallback_name(agent: str, taken: Collection[str]) -> str:
    """``<agent>_environment_server``, with more suffixes while that is taken."""
    name = agent + SERVER_SUFFIX
    while name in taken:
        name += SERVER_SUFFIX
    return name


def relay_block(agent: str) -> dict[str, Any]:
    """The config of a ``legacy_agent`` relay fronting one agent."""
    return {
        ENVIRONMENTS: {
            RELAY_IMPLEMENTATION: {
                "entrypoint": "app.py",
                "agent_server": {"type": AGENTS, "name": agent},
            }
        }
    }


def inheriting_relay_block(relay: str, agent: str) -> dict[str, Any]:
    """A relay derived from ``relay`` (which it retires) that fronts ``agent`` instead: how a
    rename of an agent fronted only by its relay is declared."""
    return {
        "_inherit_from": relay,
        ENVIRONMENTS: {RELAY_IMPLEMENTATION: {"agent_server": {"name": agent}}},
    }


def relay_yaml(server: str, agent: str) -> str:
    """The relay as YAML text, ready to paste into (or append to) a config file."""
    return block_yaml(server, relay_block(agent))


def block_yaml(server: str, block: Mapping[str, Any]) -> str:
    """One top-level server block as YAML text, keys in the order given."""
    return yaml.safe_dump({server: dict(block)}, sort_keys=False, default_flow_style=False)


def fronted_agents(config: Mapping[str, Any]) -> set[str]:
    """Names of every agent that some environment server references (any agent field)."""
    return {
        name
        for server in server_instances(config).values()
        if server.kind == ENVIRONMENTS
        for name in agent_names(server.config)
    }


def is_template(agent: ServerInstance) -> bool:
    """An agent meant to be completed by others, which therefore needs no server itself.

    That is an unbound template (``resources_server.name: ???``), or a native-session harness
    whose ``resources_server`` is explicitly null (an omitted binding may still be inherited).
    """
    binding = agent.config.get("resources_server")
    if is_mapping(binding):
        return binding.get("name") == UNSET
    explicitly_unbound = "resources_server" in agent.config and binding is None
    return explicitly_unbound and agent.implementation in NATIVE_SESSION_AGENT_TYPES


def needs_environment_server(agent: ServerInstance) -> bool:
    """Agents that are started and are not templates need a server."""
    return bool(agent.config.get("entrypoint")) and not is_template(agent)


def unfronted_agents(config: Mapping[str, Any]) -> list[ServerInstance]:
    """Agents that need an environment server and have none, in config order."""
    fronted = fronted_agents(config)
    return [
        server
        for server in server_instances(config).values()
        if server.is_agent and server.name not in fronted and needs_environment_server(server)
    ]


def front_every_agent(data: dict[str, Any], locate: Locate) -> dict[str, str]:
    """Add a relay for each unfronted agent (or refuse them); returns ``{relay: agent}``."""
    agents = unfronted_agents(data)
    if not agents:
        return {}
    if data.get(STRICT_FLAG) is True:
        raise _unfronted_error(agents, locate)
    relays: dict[str, str] = {}
    for agent in agents:
        name = relay_name(agent.name, agent.implementation)
        if name in data or name in relays:
            name = fallback_name(agent.name, {*data, *relays})
        relays[name] = agent.name
    for name, agent_name in relays.items():
        data[name] = relay_block(agent_name)
    return relays


def _unfronted_error(
    agents: list[ServerInstance], locate: Locate
) -> AgentWithoutEnvironmentServerError:
    names = ", ".join(f"'{agent.name}'" for agent in agents)
    example = relay_yaml(relay_name(agents[0].name, agents[0].implementation), agents[0].name)
    return AgentWithoutEnvironmentServerError(
        f"No environment server fronts these agents: {names}. Declare one environment server "
        "per agent that names it in `agent_server`, for example:\n\n"
        f"{_indent(example)}\n"
        f"or let `{MIGRATE_COMMAND}` append relays for you, or unset `{STRICT_FLAG}` to get "
        "generated relays with a deprecation warning.",
        **locate(agents[0].name),
    )


def deprecation_message(relays: Mapping[str, str], locate: Locate) -> str:
    """The one warning for all generated relays: what happened, and the two ways to fix it."""
    names = ", ".join(f"`{agent}`" for agent in relays.values())
    blocks: list[str] = []
    for server, agent in relays.items():
        where = locate(agent)
        origin = f"# for {agent}" + (f", defined in {where['path']}" if where else "")
        blocks.append(f"{origin}\n{relay_yaml(server, agent)}")
    return (
        f"DEPRECATED: agents without an environment server: {names}. Each was given a "
        f"generated `{RELAY_IMPLEMENTATION}` relay for this run; a future release will refuse "
        "such configs with AgentWithoutEnvironmentServerError.\n"
        f"Declare the servers with\n    {MIGRATE_COMMAND}\n"
        "or paste these blocks into your configs:\n\n"
        + "\n".join(_indent(block) for block in blocks)
        + f"\nSet `{STRICT_FLAG}: true` to refuse such configs now."
    )


def _indent(text: str) -> str:
    return "".join(f"    {line}\n" for line in text.splitlines())
