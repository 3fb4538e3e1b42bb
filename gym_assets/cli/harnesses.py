"""``gym-assets harness install NAME... | --all`` and ``gym-assets list harnesses [--json]``."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from gym_assets.cli.flags import add_configs_flag, workspace_of
from gym_assets.cli.listing import print_listing
from gym_assets.display import shown

if TYPE_CHECKING:
    from gym_assets.rollouts.harnesses.registry import Harness

NOT_INSTALLED = "not installed"


def _registry(args: argparse.Namespace) -> dict[str, Harness]:
    from gym_assets.cli.config_warnings import say_config_warnings
    from gym_assets.config.loader import load_configs
    from gym_assets.rollouts.harnesses.registry import load_harnesses

    return load_harnesses(say_config_warnings(load_configs(workspace_of(args).configs)))


def _listing(harness: Harness) -> dict[str, Any]:
    from gym_assets.rollouts.harnesses.install import install_command, state_of

    row: dict[str, Any] = {
        "name": harness.name,
        "kind": harness.kind,
        "adapter": harness.adapter,
        "version": harness.version,
        "api": harness.api,
        "stream": harness.stream,
        "install": None
        if harness.install is None
        else harness.install.model_dump(exclude_none=True),
        "install_dir": None if harness.install_dir is None else str(harness.install_dir),
        "installed_version": None,
        "available": True,
        "install_command": None,
    }
    if harness.kind == "cli":
        state = state_of(harness)
        row |= {"installed_version": state.version, "available": state.installed}
        row["install_command"] = None if state.installed else install_command(harness.name)
    return row


def _installed(row: dict[str, Any]) -> str:
    if row["kind"] != "cli":
        return "-"
    found = row["installed_version"]
    if found is None or (found == row["version"] and not row["available"]):
        return NOT_INSTALLED
    return found if found == row["version"] else f"{found} (pinned {row['version']})"


def _cells(row: dict[str, Any]) -> list[str]:
    return [
        row["name"],
        row["kind"],
        row["adapter"] or "-",
        row["version"] or "-",
        "-" if row["api"] is None else f"{row['api']} {'SSE' if row['stream'] else 'JSON'}",
        _installed(row),
        row["install_dir"] or "-",
    ]


def _list(args: argparse.Namespace) -> int:
    rows = [_listing(harness) for harness in _registry(args).values()]
    headers = ["name", "kind", "adapter", "version", "api", "installed", "folder"]
    print_listing("Harnesses", rows, as_json=args.json, headers=headers, cells=_cells)
    missing = [f"`{row['install_command']}`" for row in rows if row["install_command"]]
    if missing and not args.json:
        print(f"not installed: run {', '.join(missing)}")
    return 0


def _install(args: argparse.Namespace) -> int:
    if bool(args.names) == bool(args.all):  # a usage error: exit 2
        args.install_parser.error("name the harnesses to install, or give --all")
    from gym_assets.rollouts.harnesses.install import install_all
    from gym_assets.rollouts.harnesses.registry import get_harness

    registry = _registry(args)
    if args.all:
        chosen = [harness for harness in registry.values() if harness.kind == "cli"]
        if not chosen:
            print("no cli harness in the registry; nothing to install", file=sys.stderr)
            return 0
    else:
        chosen = [get_harness(registry, name) for name in dict.fromkeys(args.names)]
    install_all(chosen, lambda line: print(shown(line), file=sys.stderr, flush=True))
    return 0


def register_listing(what: argparse._SubParsersAction) -> None:
    listing = what.add_parser(
        "harnesses", help="list the harness registry with each cli harness's installed version"
    )
    listing.add_argument("--json", action="store_true", help="print one JSON array")
    add_configs_flag(listing)
    listing.set_defaults(handler=_list)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("harness", help="install cli harnesses")
    commands = parser.add_subparsers(dest="harness_command", metavar="SUBCOMMAND", required=True)
    install = commands.add_parser(
        "install",
        help="install cli harnesses at their pinned version into their install folder",
        description="Install each named cli harness (or --all of them) at its pinned version "
        "into $GYM_ASSETS_HARNESSES_DIR/<name> or .harnesses/<name> beside the configs folder; "
        "one already installed is left as it is.",
    )
    install.add_argument("names", metavar="NAME", nargs="*", help="a cli harness of the registry")
    install.add_argument("--all", action="store_true", help="every cli harness of the registry")
    add_configs_flag(install)
    install.set_defaults(handler=_install, install_parser=install)
