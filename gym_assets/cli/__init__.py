"""The ``gym-assets`` command line.

Each area registers its subcommands from its own module (``gym_assets/cli/<area>.py`` exposing
``register(subparsers)``); this module only builds the parser and maps errors to exit codes:
0 success, 1 refusal (a ``UserError``: one clear message, no traceback), 2 usage error.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

from gym_assets import settings
from gym_assets.errors import UserError

AREA_MODULES = ("config", "benchmarks", "plans", "conformance", "rollouts")


def configs_root(value: str | None) -> Path:
    """The configs root: ``--configs``, else ``$GYM_ASSETS_CONFIGS``, else ``./configs``."""
    return settings.configs_root(value)


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gym-assets",
        description="Prepare, plan, run and audit LLM-agent evaluations.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for area in AREA_MODULES:
        try:
            module = importlib.import_module(f"gym_assets.cli.{area}")
        except ModuleNotFoundError as exc:
            if exc.name != f"gym_assets.cli.{area}":
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.handler(args)
    except UserError as exc:
        print(f"error: {exc.render()}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
