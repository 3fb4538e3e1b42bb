"""``gym-assets doctor``: is this machine ready for a run? One line per item, with its fix."""

from __future__ import annotations

import argparse
import json

from gym_assets.cli.flags import add_configs_flag, add_data_root_flag, workspace_of
from gym_assets.display import shown


def _doctor(args: argparse.Namespace) -> int:
    from gym_assets.doctor import examine

    findings = examine(workspace_of(args), args.base_url, args.api_key_env)
    if args.json:
        print(json.dumps([finding.as_json() for finding in findings], ensure_ascii=False))
    else:
        width = max(len(finding.item) for finding in findings)
        for finding in findings:
            print(shown(finding.line(width)))
    return 1 if any(finding.status == "FAIL" for finding in findings) else 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="check what a run needs here: Python, the venv, the Dagster home, the sandbox, ...",
        description="Check what a run needs on this machine and print one line per item, "
        "`ok|warn|FAIL  ITEM  DETAIL  [fix: ...]`: the Python version, the project's "
        "environment and its pinned Dagster, DAGSTER_HOME, the bubblewrap sandbox (one guest "
        "is started), the configs, each cli harness against its pinned version, a data "
        "root that can be written and the free disk under it, and with --base-url a model "
        "server's /models. Exit 0 when nothing FAILs, 1 otherwise.",
    )
    add_configs_flag(parser)
    add_data_root_flag(parser)
    parser.add_argument(
        "--base-url", metavar="URL", help="a model server's /v1 URL: GET <URL>/models must answer"
    )
    parser.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="the environment variable holding that server's API key (sent, never printed)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON array")
    parser.set_defaults(handler=_doctor)
