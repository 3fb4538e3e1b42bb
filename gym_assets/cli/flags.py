"""Flags several subcommands share: where the configs are and where products go."""

from __future__ import annotations

import argparse


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
