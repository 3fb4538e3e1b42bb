"""Which environment server runs a dataset's rows, and which agent the results belong to.

A dataset that declares a taskset is routed by ``environment_server_routes``; the route must
name an environment server that fronts the declaring agent or binds the declaring resources
server. A flat dataset is routed through its agent: the declaring agent, or the single agent
(or the pinned one) bound to the declaring resources server. These functions take the
resolved config mapping (``LoadedConfig.data``); given a ``LoadedConfig`` itself, their
errors also name the file and line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gym_assets.config.errors import (
    AgentWithoutEnvironmentServerError,
    AmbiguousEnvironmentServerError,
    ServerRefNotFoundError,
)
from gym_assets.config.locate import Locate, did_you_mean, locator_of, nowhere, quoted
from gym_assets.config.model import (
    AGENTS,
    ENVIRONMENTS,
    RESOURCES,
    ServerInstance,
    agent_names,
    agent_references,
    attributed_agent,
    server_instances,
)
from gym_assets.errors import ConfigError
from gym_assets.json_shapes import is_mapping
from gym_assets.modes import ROUTING_MODES, RoutingMode

ROUTES = "environment_server_routes"
MODE = "environment_routing_mode"
SERVER_NAME = "environment_server_name"
MIGRATE_HINT = "gym-assets config add-environment-servers"


def routing_mode(config: Mapping[str, Any], locate: Locate | None = None) -> RoutingMode:
    """``environment_routing_mode``, defaulting to ``agent``."""
    mode = config.get(MODE)
    if mode is None:
        return "agent"
    if mode not in ROUTING_MODES:
        raise ConfigError(
            f"environment_routing_mode must be one of {', '.join(ROUTING_MODES)}; got {mode!r}.",
            **(locate or locator_of(config))(MODE),
        )
    return mode


def validate_routing(config: Mapping[str, Any], locate: Locate = nowhere) -> None:
    """Check the routing keys: the mode's requirements, and that routes name real servers."""
    mode = routing_mode(config, locate)
    routes = config.get(ROUTES)
    if routes is not None and not is_mapping(routes):
        raise ConfigError(
            "environment_server_routes must map each taskset name to the environment server "
            f"that runs it, e.g. `environment_server_routes: {{my_taskset: my_env}}`; got "
            f"{type(routes).__name__}.",
            **locate(ROUTES),
        )
    for taskset, target in (routes or {}).items():
        if not isinstance(taskset, str) or not taskset:
            raise ConfigError(
                f"environment_server_routes has the key {taskset!r}; taskset names are "
                "non-empty strings.",
                **locate(ROUTES, taskset),
            )
        _check_environment_server(
            config, target, f"The route for taskset '{taskset}'", locate(ROUTES, taskset)
        )
    server_name = config.get(SERVER_NAME)
    if server_name is not None:
        _check_environment_server(
            config, server_name, "environment_server_name", locate(SERVER_NAME)
        )
    if mode == "legacy" and not server_name:
        raise ConfigError(
            "environment_server_name is required when environment_routing_mode=legacy; set it "
            "to the environment server that runs every flat row.",
            **locate(MODE),
        )
    if mode == "taskset" and not routes:
        raise ConfigError(
            "environment_server_routes are required when environment_routing_mode=taskset; map "
            "each taskset to the environment server that runs it.",
            **locate(MODE),
        )


def _check_environment_server(
    config: Mapping[str, Any], target: Any, what: str, at: dict[str, Any]
) -> None:
    instances = server_instances(config)
    environments = [name for name, s in instances.items() if s.kind == ENVIRONMENTS]
    if not isinstance(target, str) or not target:
        raise ConfigError(
            f"{what} must be the name of an environment server; got {target!r}.", **at
        )
    if target not in config:
        raise ServerRefNotFoundError(
            f"{what} names environment server '{target}', which is not defined."
            + did_you_mean(target, environments)
            + " Point it at an instance declared under environment_servers.",
            **at,
        )
    server = instances.get(target)
    if server is None or server.kind != ENVIRONMENTS:
        kind = "not a server instance" if server is None else f"a {server.kind} instance"
        raise ConfigError(
            f"{what} names '{target}', which is {kind}, not an environment server. Point it "
            "at an instance declared under environment_servers"
            + (f" (defined: {quoted(environments)})." if environments else "."),
            **at,
        )


def taskset_environment_server(config: Mapping[str, Any], taskset: str) -> ServerInstance:
    """The environment server a taskset's route names: one instance with exactly one
    implementation under ``environment_servers``, else a ``ConfigError``."""
    locate = locator_of(config)
    routes = config.get(ROUTES)
    target = routes.get(taskset) if is_mapping(routes) else None
    if not isinstance(target, str) or not target:
        raise ConfigError(
            f"No Environment Server route for taskset '{taskset}'; set environment_server_routes."
            f" Add `{taskset}: <environment server>` under environment_server_routes.",
            **locate(ROUTES),
        )
    block = config.get(target)
    implementations = block.get(ENVIRONMENTS) if is_mapping(block) else None
    if not is_mapping(implementations) or len(implementations) != 1:
        environments = [n for n, s in server_instances(config).items() if s.kind == ENVIRONMENTS]
        raise ConfigError(
            f"Taskset '{taskset}' route '{target}' must name an Environment Server."
            + did_you_mean(target, environments)
            + " A route names an instance with exactly one implementation under "
            "environment_servers.",
            **locate(ROUTES, taskset),
        )
    ((implementation, server_config),) = implementations.items()
    if not is_mapping(server_config):
        raise ConfigError(
            f"Environment Server '{target}' must have a configuration mapping under "
            f"environment_servers.{implementation}.",
            **locate(target, ENVIRONMENTS, implementation),
        )
    return ServerInstance(target, ENVIRONMENTS, str(implementation), server_config)


def _is_agent_block(block: Any) -> bool:
    return is_mapping(block) and AGENTS in block


def _is_resources_block(block: Any) -> bool:
    return is_mapping(block) and RESOURCES in block


def resolve_dataset_agent(
    config: Mapping[str, Any],
    declaring_instance: str,
    pin: str | None = None,
    *,
    taskset: str | None = None,
) -> str | None:
    """The agent a dataset's rows are credited to (None: a multi-agent server decides).

    With a taskset its route decides, once validated against the declaring instance; without
    one, :func:`flat_dataset_agent` does (docs/config-reference.md, "Routes and routing
    modes"). Every refusal is a ``ConfigError`` saying how to fix the config.
    """
    if taskset is not None:
        locate = _check_declaring(config, declaring_instance)
        return _taskset_agent(config, declaring_instance, pin, taskset, locate)
    return flat_dataset_agent(config, declaring_instance, pin)


def flat_dataset_agent(
    config: Mapping[str, Any], declaring_instance: str, pin: str | None = None
) -> str:
    """The agent that runs a flat dataset's rows: the declaring agent, or the one agent bound
    to the declaring resources server (or its pin). Never None, or a ``ConfigError``."""
    locate = _check_declaring(config, declaring_instance)
    return _flat_agent(config, declaring_instance, pin, locate)


def _check_declaring(config: Mapping[str, Any], declaring_instance: str) -> Locate:
    """Refuse datasets of an instance that is neither an agent nor a resources server."""
    locate = locator_of(config)
    block = config.get(declaring_instance)
    if not (_is_agent_block(block) or _is_resources_block(block)):
        instances = [name for name, value in config.items() if is_mapping(value)]
        raise ConfigError(
            f"Datasets of '{declaring_instance}' cannot be routed: "
            + (
                "it is not defined."
                if block is None
                else "it is neither an agent nor a resources server."
            )
            + did_you_mean(declaring_instance, instances)
            + " Declare datasets on a resources server or an agent.",
            **locate(declaring_instance),
        )
    return locate


def _taskset_agent(
    config: Mapping[str, Any], declaring: str, pin: str | None, taskset: str, locate: Locate
) -> str | None:
    server = taskset_environment_server(config, taskset)
    instances = server_instances(config)
    references = agent_references(server.config)
    for field, ref in references:
        name = ref.get("name")
        if not isinstance(name, str) or name not in instances or not instances[name].is_agent:
            raise ConfigError(
                f"Environment Server '{server.name}' references '{name}', which is not an agent. "
                "Its agent_server and other agent references must name agents.",
                **locate(server.name, ENVIRONMENTS, server.implementation, field, "name"),
            )
    if not references:
        raise ConfigError(
            f"Environment Server '{server.name}' must bind a valid agent_server for this dataset "
            f"(taskset '{taskset}'). Add `agent_server: {{type: responses_api_agents, name: "
            "<agent>}` to it.",
            **locate(server.name),
        )
    if pin is not None:
        raise ConfigError(
            f"Taskset '{taskset}' pins agent '{pin}', but a taskset routes to Environment Server "
            f"'{server.name}' through environment_server_routes, not to an agent. Remove the "
            "`agent` key.",
            **locate(declaring),
        )
    if _is_agent_block(config[declaring]):
        if declaring not in agent_names(server.config):
            raise ConfigError(
                f"Taskset '{taskset}' must route to its declaring agent '{declaring}'. The route "
                f"names '{server.name}', which fronts {quoted(agent_names(server.config))}; route "
                "the taskset to a server that fronts the declaring agent.",
                **locate(ROUTES, taskset),
            )
        return declaring
    binding = server.config.get("resources_server")
    if not (
        is_mapping(binding)
        and binding.get("name") == declaring
        and (binding.get("type") or RESOURCES) == RESOURCES
    ):
        raise ConfigError(
            f"Environment Server '{server.name}' must bind declaring resources server "
            f"'{declaring}' for taskset '{taskset}'. Set its resources_server.name to "
            f"'{declaring}', or route the taskset to a server that binds it.",
            **locate(ROUTES, taskset),
        )
    return attributed_agent(server.config)


def _flat_agent(config: Mapping[str, Any], declaring: str, pin: str | None, locate: Locate) -> str:
    if _is_agent_block(config[declaring]):
        if pin is not None and pin != declaring:
            raise ConfigError(
                f"A dataset of agent '{declaring}' pins agent '{pin}', but a dataset declared on "
                "an agent always runs on that agent, so the pin would not apply. Remove the "
                "`agent` key, or declare the dataset on the resources server and pin it there.",
                **locate(declaring),
            )
        return declaring
    candidates = [
        server.name
        for server in server_instances(config).values()
        if server.is_agent
        and is_mapping(server.config.get("resources_server"))
        and server.config["resources_server"].get("name") == declaring
    ]
    listed = f"[{', '.join(candidates)}]" if candidates else "none"
    if pin is not None:
        if pin not in candidates:
            raise ConfigError(
                f"The dataset pins agent '{pin}', but no agent of that name references resources "
                f"server '{declaring}'. Agents referencing it: {listed}. Pin one of those, or "
                f"bind '{pin}' to '{declaring}' through its resources_server field.",
                **locate(declaring),
            )
        return pin
    if not candidates:
        raise ConfigError(
            f"No agent in the running config references resources server '{declaring}', so its "
            f"datasets have no agent to run them. Add an agent whose resources_server.name is "
            f"'{declaring}'.",
            **locate(declaring),
        )
    if len(candidates) > 1:
        raise ConfigError(
            f"{len(candidates)} agents reference this resources server ({listed}). Pin the "
            f"harness with an `agent:` key on each dataset of '{declaring}'.",
            **locate(declaring),
        )
    return candidates[0]


def servers_by_agent(config: Mapping[str, Any]) -> dict[str, list[str]]:
    """Every referenced agent and the environment servers that front it, in config order."""
    fronting: dict[str, list[str]] = {}
    for server in server_instances(config).values():
        if server.kind != ENVIRONMENTS:
            continue
        for agent in dict.fromkeys(agent_names(server.config)):
            fronting.setdefault(agent, []).append(server.name)
    return fronting


def environment_server_for_agent(config: Mapping[str, Any], agent: str) -> str:
    """The one environment server fronting ``agent``, which runs rows routed by it (none or
    several: refused)."""
    locate = locator_of(config)
    instances = server_instances(config)
    if agent not in instances or not instances[agent].is_agent:
        agents = [name for name, server in instances.items() if server.is_agent]
        raise ConfigError(
            f"Rows name agent '{agent}', which is not an agent instance in the running config."
            + did_you_mean(agent, agents),
            **locate(agent),
        )
    servers = servers_by_agent(config).get(agent, [])
    if not servers:
        raise AgentWithoutEnvironmentServerError(
            f"Agent '{agent}' has no environment server, so rows routed by agent cannot reach "
            "it. Declare an environment server whose agent_server names it (or run "
            f"`{MIGRATE_HINT}`), or route these rows by taskset.",
            **locate(agent),
        )
    if len(servers) > 1:
        raise AmbiguousEnvironmentServerError(
            f"Agent '{agent}' is fronted by several environment servers: [{', '.join(servers)}]. "
            "Rows that route by agent cannot choose between them. Set "
            "environment_routing_mode=legacy with environment_server_name, or route these rows "
            "by taskset.",
            **locate(servers[1]),
        )
    return servers[0]


def refuse_unfronted(
    config: Mapping[str, Any], server: str, agent: str, subject: str, **at: Any
) -> None:
    """Refuse rows of ``agent`` sent to an environment ``server`` that does not front it.

    ``subject`` says whose rows they are ("Row agent_ref 'a'", ...); ``at`` is where to fix it
    (the row's file and line, or the config node that routed the rows). The message lists the
    agents the server does front, so the user can see which route or agent is wrong.
    A server that references no agent (or is unknown here) is not judged.
    """
    instance = server_instances(config).get(server)
    fronted = sorted(set(agent_names(instance.config))) if instance is not None else []
    if not fronted or agent in fronted:
        return
    raise ConfigError(
        f"{subject} is not an agent of environment server '{server}': {quoted(fronted)}. "
        f"That server runs only the agents it references, so these rows would run on an agent "
        f"they were not written for. Route them to an environment server that fronts "
        f"'{agent}', or declare the dataset on an agent that '{server}' fronts.",
        **at,
    )


def flat_route(
    config: Mapping[str, Any], declaring_instance: str, pin: str | None = None
) -> tuple[str, str]:
    """``(environment server, agent)`` for the rows of a flat dataset (no taskset).

    The agent is :func:`flat_dataset_agent`'s; the server is the routing mode's: in ``agent``
    mode the one server fronting that agent, in ``legacy`` mode ``environment_server_name``,
    which must then front the agent (a flat row carries no route of its own to fall back on).
    """
    locate = locator_of(config)
    agent = flat_dataset_agent(config, declaring_instance, pin)
    server = environment_server_for_taskset(config, None)
    if server is None:
        return environment_server_for_agent(config, agent), agent
    refuse_unfronted(
        config,
        server,
        agent,
        f"Datasets of '{declaring_instance}' run agent '{agent}', which",
        **locate(SERVER_NAME),
    )
    return server, agent


def environment_server_for_taskset(config: Mapping[str, Any], taskset: object) -> str | None:
    """The server a row of ``taskset`` is stamped with before dispatch (its route); a flat row
    (``taskset`` None, or not a usable name) follows the routing mode, where None means "find
    it by agent". Reading the taskset off a row is ``gym_assets.tasks.row_routing``'s job."""
    locate = locator_of(config)
    if isinstance(taskset, str) and taskset:
        routes = config.get(ROUTES)
        target = routes.get(taskset) if is_mapping(routes) else None
        if not isinstance(target, str) or not target:
            raise ConfigError(
                f"No environment server route is configured for taskset '{taskset}'; add "
                f"`{taskset}: <environment server>` under environment_server_routes.",
                **locate(ROUTES),
            )
        return target
    mode = routing_mode(config)
    if mode == "agent":
        return None
    if mode == "legacy":
        name = config.get(SERVER_NAME)
        if not isinstance(name, str) or not name:
            raise ConfigError(
                "environment_server_name is required when environment_routing_mode=legacy; set "
                "it to the environment server that runs every flat row.",
                **locate(MODE),
            )
        return name
    raise ConfigError(
        "taskset routing requires rows containing task_id.taskset and task_input; use "
        "environment_routing_mode=agent to mix flat rows with materialized tasks, or collate "
        "the dataset with a taskset.",
        **locate(MODE),
    )
