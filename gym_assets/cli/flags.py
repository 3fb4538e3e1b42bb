"""Flags several subcommands share: where the configs are, where products go, which
benchmark a command is about, and whether a stale product may be rebuilt; and the one place a
command turns them into its workspace."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from gym_assets.workspace import Workspace

if TYPE_CHECKING:
    from gym_assets.tasks.selection import Selection

BENCHMARK_METAVAR = "NAME[/FLAVOR]"
BENCHMARK_HELP = (
    "a benchmark's dataset name, or the token `gym-assets list benchmarks` prints for it or "
    "for one of its flavors (NAME/FLAVOR: the file benchmarks/NAME/FLAVOR.yaml)"
)


def add_configs_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--configs",
        metavar="DIR",
        default=None,
        help="configs root (default: $GYM_ASSETS_CONFIGS or ./configs)",
    )


def add_data_root_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-root",
        metavar="DIR",
        default=None,
        help="where products are written (default: $GYM_ASSETS_DATA_ROOT or ./.gym_assets)",
    )


NO_REBUILD = "--no-rebuild"


def add_no_rebuild_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        NO_REBUILD,
        action="store_true",
        help="refuse (exit 1) instead of rebuilding a product under the data root whose inputs "
        "changed since it was built (rows, config, prepare script, code version, configs root); "
        "missing products are still made",
    )


def refused_by(args: argparse.Namespace) -> str | None:
    """The flag that forbids rebuilding a stale product, named in the refusal; None if none."""
    return NO_REBUILD if args.no_rebuild else None


def workspace_of(args: argparse.Namespace) -> Workspace:
    """The command's roots: its ``--configs`` and ``--data-root``, else their defaults (a
    command without one of the flags, such as ``conformance inspect``, takes the default)."""
    return Workspace.resolve(getattr(args, "configs", None), getattr(args, "data_root", None))


def select(args: argparse.Namespace, value: str) -> Selection:
    """The benchmark(s) ``--benchmark value`` selects, loaded with the command's roots."""
    from gym_assets.cli.config_warnings import say_config_warnings
    from gym_assets.tasks.selection import select_benchmark

    selection = select_benchmark(workspace_of(args), value)
    say_config_warnings(selection.catalog.loaded)
    return selection
