"""``gym-assets scoreboard``: the scoreboard as the asset publishes it, printed as Markdown."""

from __future__ import annotations

import argparse
import sys

from gym_assets.cli.flags import add_configs_flag, add_data_root_flag, workspace_of


def _scoreboard(args: argparse.Namespace) -> int:
    from gym_assets.rollouts.analysis.scoreboard import BOARD_MD, publish_scoreboard

    roots = workspace_of(args)
    publish_scoreboard(roots.rollouts_root(), roots.scoreboard_dir(), roots)
    sys.stdout.write((roots.scoreboard_dir() / BOARD_MD).read_text(encoding="utf-8"))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "scoreboard",
        help="the latest result of every benchmark × harness × model, with regressions",
        description="Read the result of every rollouts run under <data_root>/rollouts/, add "
        "the new ones to the scoreboard's history in <data_root>/scoreboard/ (as the "
        "scoreboard asset does), render scoreboard.{md,html,json} there and print the "
        "Markdown. Exit 0, or 1 when the history cannot be read.",
    )
    add_configs_flag(parser)
    add_data_root_flag(parser)
    parser.set_defaults(handler=_scoreboard)
