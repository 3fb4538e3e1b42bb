"""The ``gym-assets`` command line.

Each area registers its subcommands from its own module (``gym_assets/cli/<area>.py`` exposing
``register(subparsers)``, and ``register_listing(what)`` for its ``gym-assets list <things>``);
this module only builds the parser and maps errors to exit codes: 0 success, 1 refusal (a
``UserError`` or an ``OSError``: one clear line, no traceback), 2 usage error. A reader that
goes away (``| head``) ends the command quietly, as Python's documentation recommends.

Building the parser imports the standard library and a few stdlib-only modules (``workspace``,
``limits``, ``modes``, ``conformance.profiles``) and nothing else: each handler imports what it
runs when it runs, so ``--help`` or a usage error costs an interpreter start, not the openai
SDK, pydantic and the checks (``gym_assets_tests/test_cli_imports.py`` pins the list).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from gym_assets.cli import (
    benchmarks,
    config,
    conformance,
    doctor,
    harnesses,
    model,
    plans,
    rollouts,
    scoreboard,
)
from gym_assets.display import shown
from gym_assets.errors import UsageError, UserError, os_error_line


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
    areas = (config, benchmarks, plans, conformance, rollouts, scoreboard, harnesses, model, doctor)
    for area in areas:
        area.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)  # --help into a closed pipe counts too
        code = args.handler(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the flush at exit
    except BrokenPipeError:
        _stdout_to_devnull()
        return 1
    except UserError as exc:
        print(f"error: {shown(exc.render(), lines=True)}", file=sys.stderr)
        return 2 if isinstance(exc, UsageError) else 1
    except OSError as exc:
        print(f"error: {shown(os_error_line(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return int(code or 0)


def _stdout_to_devnull() -> None:
    """Python's recipe for SIGPIPE (the ``signal`` module's documentation): point stdout at
    devnull, so the interpreter's last flush does not fail with a second BrokenPipeError."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by an in-memory stream: no fd
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
