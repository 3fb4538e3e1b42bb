"""``gym-assets conformance``: run the scripted suite against harnesses, inspect a rollout
bundle, build a harness matrix, regenerate docs.

Inspection exit codes are a contract for CI: 0 the P0 gate is met, 1 it is not, 2 the input
could not be judged (unknown profile, bad bundle, inputs changed, conflicting report, an
``--output`` that is refused or cannot be written) — in which case nothing was published.
Input errors are therefore handled here, not left to the dispatcher, which would map them to 1.
``run`` follows the same contract (docs/conformance.md#exit-codes): 0 every harness meets
the P0 gate, 1 some scenario does not or a harness is unavailable (a ``cli`` harness not
installed: reported with its install command), 2 an episode could not run or be judged, or the
run was refused (its output exists, a bad timeout, an unknown harness or scenario) — then
nothing is written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gym_assets.cli.flags import add_configs_flag, workspace_of
from gym_assets.conformance.profiles import PROFILE_ID, PROFILES
from gym_assets.display import shown
from gym_assets.errors import UserError

if TYPE_CHECKING:
    from gym_assets.conformance.inspection import InspectionOptions

INPUT_ERROR_EXIT = 2


def _explained_errors() -> tuple[type[Exception], ...]:
    """Refusals whose message is one line for the user (never a payload)."""
    from gym_assets.conformance.bundle import InspectionInputError
    from gym_assets.errors import OutputError

    return (InspectionInputError, OutputError)


def _checker_errors() -> tuple[type[Exception], ...]:
    """What the reference runner treats as "could not inspect": input, I/O and decoding failures.

    An --output that is refused or cannot be written (an OutputError) is one of them: nothing
    was judged or published, and exit 1 would read as "gate not met".
    """
    return (*_explained_errors(), OSError, ValueError, RecursionError)


def _add_profile_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", metavar="DIR", required=True, type=Path)
    parser.add_argument(
        "--profile",
        default=PROFILE_ID,
        help=f"check catalogue id (default {PROFILE_ID}); "
        + ", ".join(other for other in PROFILES if other != PROFILE_ID)
        + " name the same checks; reports record the id given",
    )
    tools = parser.add_mutually_exclusive_group()
    tools.add_argument(
        "--tools", action="store_true",
        help="tool evidence is in scope for every record (default: where the record's task "
        "declares tools, as the benchmark gave it)",
    )  # fmt: skip
    tools.add_argument("--no-tools", action="store_true", help="tool evidence is out of scope")
    parser.add_argument("--no-verifier", action="store_true", help="grades are out of scope")
    parser.add_argument("--no-steps", action="store_true", help="step evidence is out of scope")
    parser.add_argument(
        "--require-sandbox", action="store_true", help="a sandbox record is required"
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "conformance", help="judge harness evidence against the P0 conformance profile"
    )
    commands = parser.add_subparsers(
        dest="conformance_command", metavar="SUBCOMMAND", required=True
    )

    run = commands.add_parser(
        "run", help="run the scripted scenarios against harnesses and report their P0 verdicts"
    )
    run.add_argument(
        "--harness", metavar="NAME", action="append", default=[],
        help="a harness of the configs' harnesses: registry (repeatable; default: all)",
    )  # fmt: skip
    run.add_argument(
        "--scenario", metavar="NAME", action="append", default=[],
        help="a scenario of the suite (repeatable; default: all; see --list-scenarios)",
    )  # fmt: skip
    run.add_argument("--output", metavar="DIR", type=Path, help="a new directory for the run")
    run.add_argument(
        "--timeout", metavar="SECONDS", type=float, default=90.0,
        help="each episode's budget (default 90)",
    )  # fmt: skip
    run.add_argument(
        "--jobs", metavar="N", type=int, default=None,
        help="episodes run at once (default: the number of cores)",
    )  # fmt: skip
    run.add_argument(
        "--list-scenarios", action="store_true", help="print the suite manifest and exit"
    )
    run.add_argument(
        "--allow-unsandboxed", action="store_true",
        help="run tool commands and harnesses without isolation when no sandbox can be made",
    )  # fmt: skip
    add_configs_flag(run)
    run.set_defaults(handler=run_suite, run_parser=run)

    inspect = commands.add_parser(
        "inspect", help="check a rollout bundle and publish a content-addressed report"
    )
    inspect.add_argument("--bundle", metavar="PATH", required=True, type=Path)
    inspect.add_argument(
        "--capture-dir", metavar="DIR", type=Path, help="capture sidecars to hash as provenance"
    )
    _add_profile_flags(inspect)
    inspect.set_defaults(handler=run_inspect)

    matrix = commands.add_parser("matrix", help="inspect several harnesses and compare them")
    matrix.add_argument(
        "--harness",
        metavar="NAME=PATH",
        action="append",
        required=True,
        help="a harness name and its rollout bundle (repeatable)",
    )
    _add_profile_flags(matrix)
    matrix.set_defaults(handler=run_matrix)

    catalogue = commands.add_parser("catalogue", help="regenerate the check catalogue page")
    catalogue.add_argument("--out", metavar="FILE", type=Path, default=None)
    catalogue.set_defaults(handler=run_catalogue)


def _options(args: argparse.Namespace, capture_dir: Path | None = None) -> InspectionOptions:
    from gym_assets.conformance.inspection import InspectionOptions
    from gym_assets.conformance.scope import EvidenceScope

    scope = EvidenceScope(
        tools=not args.no_tools,
        verifier=not args.no_verifier,
        steps=not args.no_steps,
        require_sandbox=args.require_sandbox,
    )
    return InspectionOptions(
        profile=args.profile,
        scope=scope,
        capture_dir=capture_dir,
        configs_root=workspace_of(args).configs,
        tools_from_benchmark=not (args.tools or args.no_tools),
    )


def _checker_error(exc: BaseException) -> int:
    detail = f": {shown(exc)}" if isinstance(exc, _explained_errors()) else ""
    print(f"checker_error ({type(exc).__name__}){detail}; no report published", file=sys.stderr)
    return INPUT_ERROR_EXIT


def run_suite(args: argparse.Namespace) -> int:
    import json

    from gym_assets.suite.scenarios import manifest

    if args.list_scenarios:
        print(json.dumps(manifest(), indent=2))
        return 0
    parser: argparse.ArgumentParser = args.run_parser
    if args.output is None:
        parser.error("--output DIR is required (or --list-scenarios)")
    from gym_assets.cli.config_warnings import say_config_warnings
    from gym_assets.config.loader import load_configs
    from gym_assets.suite.run import run_suite as run

    try:
        summary = run(
            say_config_warnings(load_configs(workspace_of(args).configs)),
            harnesses=args.harness,
            scenarios=args.scenario,
            output=args.output,
            timeout_s=args.timeout,
            jobs=args.jobs,
            progress=lambda line: print(shown(line), flush=True),
            allow_unsandboxed=args.allow_unsandboxed,
            configs=args.configs,
        )
    except UserError as exc:
        print(f"error: {shown(exc.render(), lines=True)}", file=sys.stderr)
        return INPUT_ERROR_EXIT
    except OSError as exc:  # the run's own files could not be written: nothing was judged
        print(f"runner_error: {type(exc).__name__}: {shown(exc)}", file=sys.stderr)
        return INPUT_ERROR_EXIT
    verdict = "every harness meets" if summary.verdict else "not every harness meets"
    print(f"{verdict} the P0 gate: {summary.report_md}")
    return summary.exit_code


def run_inspect(args: argparse.Namespace) -> int:
    from gym_assets.conformance.inspection import inspect_bundle

    try:
        inspection = inspect_bundle(args.bundle, args.output, _options(args, args.capture_dir))
    except _checker_errors() as exc:
        return _checker_error(exc)
    gate = "met" if inspection.gate_met else "not met"
    print(f"{inspection.summary['tool_scope']}")
    print(f"P0 gate {gate}: {inspection.report_dir}")
    return inspection.exit_code


def run_matrix(args: argparse.Namespace) -> int:
    from gym_assets.conformance.matrix import build_matrix, parse_harness

    try:
        harnesses = [parse_harness(value) for value in args.harness]
        matrix = build_matrix(harnesses, args.output, _options(args))
    except _checker_errors() as exc:
        return _checker_error(exc)
    gate = "every harness meets" if matrix.gate_met else "not every harness meets"
    print(f"{matrix.document['tool_scope']}")
    print(f"{gate} the P0 gate: {matrix.matrix_dir}")
    return matrix.exit_code


def run_catalogue(args: argparse.Namespace) -> int:
    from gym_assets.conformance.catalogue_doc import DOC_PATH, write_catalogue

    path = write_catalogue(args.out or DOC_PATH, workspace_of(args).configs)
    print(f"wrote {path}")
    return 0
