"""The ``gym-assets`` command line.

Each area registers its subcommands from its own module (``gym_assets/cli/<area>.py`` exposing
``register(subparsers)``, and ``register_listing(what)`` for its ``gym-assets list <things>``);
this module only builds the parser and maps errors to exit codes: 0 success, 1 refusal (a
``UserError``: one clear message, no traceback), 2 usage error.

Building the parser imports the standard library and a few stdlib-only modules (``workspace``,
``limits``, ``modes``, ``conformance.profiles``) and nothing else: each handler imports what it
runs when it runs, so ``--help`` or a usage error costs an interpreter start, not the openai
SDK, pydantic and the checks (``gym_assets_tests/test_cli_imports.py`` pins the list).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from gym_assets.cli import benchmarks, config, conformance, doctor, harnesses, plans, rollouts
from gym_assets.errors import UsageError, UserError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gym-assets",
        description="Prepare, plan, run and audit LLM-agent evaluations.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    listing = subparsers.add_parser("list", help="list configured things")
    what = listing.add_subparsers(dest="what", metavar="WHAT", required=True)
    for lister in (benchmarks, harnesses):
        lister.register_listing(what)
    for area in (config, benchmarks, plans, conformance, rollouts, harnesses, doctor):
        area.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.handler(args)
    except UserError as exc:
        print(f"error: {exc.render()}", file=sys.stderr)
        return 2 if isinstance(exc, UsageError) else 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
