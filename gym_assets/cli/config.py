"""``gym-assets config``: see what resolution made of the configs, and migrate old configs."""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gym_assets.cli.flags import add_configs_flag, workspace_of
from gym_assets.display import shown

if TYPE_CHECKING:
    from gym_assets.config.loader import LoadedConfig


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "config",
        help="inspect the resolved config; add missing environment servers",
        description="Inspect the resolved config and migrate configs to current rules.",
    )
    commands = parser.add_subparsers(dest="config_command", metavar="SUBCOMMAND", required=True)

    show = commands.add_parser(
        "show",
        help="print server instances, routes, agent fronting and deprecation warnings",
        description="Load and resolve the configs tree and print what resolution made of it: "
        "every server instance (generated relays included) with its file and line, the "
        "routing mode and routes, which environment servers front each agent, and warnings.",
    )
    add_configs_flag(show)
    show.add_argument("--json", action="store_true", help="print one JSON object instead")
    show.set_defaults(handler=_show)

    migrate = commands.add_parser(
        "add-environment-servers",
        help="give every agent an environment server; point servers at renamed agents",
        description="Append one legacy_agent environment server per agent of the named files "
        "that no environment server fronts, to the file that defines the agent, and for an "
        "environment server that references agents the named files rename (`_inherit_from`) "
        "append to the file of the renames one override block pointing those fields at the new "
        "names (server names and routes do not change; no other file is written). The whole "
        "configs tree (--configs) is read; named files must lie inside it, and without PATH the "
        "whole tree is migrated. Ends with 'files touched: F, blocks added: B, unreadable "
        "files: U, updates by hand: H'. Exit 0 when done, 1 with --check when changes "
        "would be made, 2 when a file cannot be read or parsed (nothing is written then) or a "
        "reference must be updated by hand (the file, field and value are printed).",
    )
    migrate.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="config files or directories (default: the whole configs root)",
    )
    migrate.add_argument(
        "--check",
        action="store_true",
        help="print the files and blocks that would change; change nothing",
    )
    add_configs_flag(migrate)
    migrate.set_defaults(handler=_migrate)


def _migrate(args: argparse.Namespace) -> int:
    from gym_assets.config.migrate import add_environment_servers

    configs = workspace_of(args).configs
    return add_environment_servers(list(args.paths) or [configs], args.check, configs)


def _show(args: argparse.Namespace) -> int:
    from gym_assets.config.loader import load_configs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # printed below, once
        loaded = load_configs(workspace_of(args).configs)
    summary = summarize(loaded)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(_render(summary), end="")
    return 0


def summarize(loaded: LoadedConfig) -> dict[str, Any]:
    """What resolution produced, as plain data (the ``--json`` output)."""
    from gym_assets.config.model import server_instances
    from gym_assets.config.routing import ROUTES, SERVER_NAME, routing_mode, servers_by_agent

    fronting = servers_by_agent(loaded.data)
    servers = []
    for server in server_instances(loaded.data).values():
        file, line = loaded.where(server.name)
        generated = server.name not in loaded.raw
        servers.append(
            {
                "name": server.name,
                "kind": server.kind,
                "implementation": server.implementation,
                "file": str(file),
                "line": None if generated else line,
                "generated": generated,
            }
        )
    agents = [s["name"] for s in servers if s["kind"] == "responses_api_agents"]
    return {
        "configs": str(loaded.root),
        "files": [str(file) for file in loaded.files],
        "servers": servers,
        "routing": {
            "mode": routing_mode(loaded.data),
            "environment_server_name": loaded.data.get(SERVER_NAME),
            "routes": dict(loaded.data.get(ROUTES) or {}),
        },
        "agents": {agent: fronting.get(agent, []) for agent in agents},
        "warnings": list(loaded.warnings),
    }


def _render(summary: dict[str, Any]) -> str:
    lines = [f"Configs: {summary['configs']} ({len(summary['files'])} files)", "", "Servers:"]
    width = max((len(s["name"]) for s in summary["servers"]), default=0)
    for server in summary["servers"]:
        origin = (
            f"generated, for the agent in {server['file']}"
            if server["generated"]
            else f"{server['file']}:{server['line']}"
        )
        kind = f"{server['kind']}/{server['implementation']}"
        lines.append(f"  {server['name']:<{width}}  {kind:<45}  {origin}")
    routing = summary["routing"]
    lines += ["", f"Routing mode: {routing['mode']}"]
    if routing["environment_server_name"]:
        lines.append(f"environment_server_name: {routing['environment_server_name']}")
    lines.append("Routes:" if routing["routes"] else "Routes: (none)")
    lines += [f"  {taskset} -> {server}" for taskset, server in routing["routes"].items()]
    lines += ["", "Environment servers fronting each agent:"]
    for agent, servers in summary["agents"].items():
        note = "  (ambiguous for rows routed by agent)" if len(servers) > 1 else ""
        lines.append(f"  {agent} -> {', '.join(servers) or '(none)'}{note}")
    lines += ["", "Warnings:" if summary["warnings"] else "Warnings: (none)"]
    for warning in summary["warnings"]:
        lines += [f"  {line}" if line else "" for line in warning.splitlines()]
    return "".join(f"{shown(line)}\n" for line in lines)
