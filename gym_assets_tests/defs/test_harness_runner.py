"""The ``HarnessRunner`` resource runs the conformance suite for an asset: Dagster code asks,
the library launches and supervises every process (a real instance, a real episode). Its run
settings are the run options ``gym-assets rollouts`` takes as flags: same names, same defaults."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import dagster as dg

from gym_assets.cli import build_parser
from gym_assets.config.loader import load_configs
from gym_assets.defs.rollouts.resources import HarnessRunner
from gym_assets.rollouts.options import OPTIONS, RunOptions

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "harnesses" / "minimal_agent.py"
# The resource's settings that are no run option: the suite's.
RESOURCE_ONLY = {
    "conformance_timeout_s",
    "conformance_jobs",
}
# The run options only the command line sets: a partition runs every planned task, as planned.
CLI_ONLY = {"limit", "allow_plan_drift"}


def _run_flags() -> dict[str, argparse.Action]:
    """The actions of ``gym-assets rollouts`` by the name their value is parsed into."""
    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return {action.dest: action for action in commands.choices["rollouts"]._actions}


def test_the_command_line_the_resource_and_run_options_agree_on_every_option() -> None:
    flags, fields, defaults = _run_flags(), HarnessRunner.model_fields, RunOptions()
    for name, option in OPTIONS.items():
        assert option.default == getattr(defaults, name), name
        flag = flags[name]
        assert flag.option_strings == [option.flag], name
        assert (flag.default, flag.help) == (option.default, option.help), name
        if name in CLI_ONLY:
            assert name not in fields, name
        else:
            assert fields[name].default == option.default, name
    assert set(fields) - set(OPTIONS) == RESOURCE_ONLY  # a renamed option fails here


def test_the_resource_hands_a_run_every_option_it_sets() -> None:
    changed = {
        "concurrency": 3,
        "workers": 2,
        "repeats": 2,
        "timeout_s": 5.0,
        "resume": True,
        "quarantine_corrupt": True,
        "max_attempts": 7,
        "max_unmeasured_share": 0.25,
        "allow_unsandboxed": True,
        "max_request_bytes": 1024,
        "max_answer_bytes": 2048,
    }
    assert set(changed) == set(OPTIONS) - CLI_ONLY
    assert all(value != OPTIONS[name].default for name, value in changed.items())
    options = HarnessRunner(**changed).options([{"text": "done"}])
    assert {name: getattr(options, name) for name in changed} == changed
    assert options.script == [{"text": "done"}]
    assert (options.limit, options.allow_plan_drift) == (None, False)


def test_the_command_line_hands_a_run_every_option_it_parses() -> None:
    argv = ["rollouts", "--repeats", "2", "--concurrency", "3", "--limit", "4", "--timeout", "5"]
    argv += ["--workers", "2"]
    argv += ["--max-attempts", "6", "--resume", "--quarantine-corrupt", "--allow-plan-drift"]
    argv += ["--max-unmeasured-share", "0.25", "--max-request-bytes", "1024"]
    argv += ["--max-answer-bytes", "2048"]
    options = RunOptions.of(build_parser().parse_args([*argv, "--allow-unsandboxed"]))
    parsed = {name: getattr(options, name) for name in OPTIONS}
    assert parsed == {
        "repeats": 2,
        "concurrency": 3,
        "workers": 2,
        "limit": 4,
        "resume": True,
        "allow_plan_drift": True,
        "timeout_s": 5.0,
        "max_attempts": 6,
        "max_unmeasured_share": 0.25,
        "allow_unsandboxed": True,
        "quarantine_corrupt": True,
        "max_request_bytes": 1024,
        "max_answer_bytes": 2048,
    }


def test_an_asset_runs_a_harness_through_the_resource(tmp_path, instance) -> None:
    configs = tmp_path / "configs"
    configs.mkdir()
    entry = {"kind": "command", "command": [sys.executable, str(EXAMPLE)]}
    (configs / "harnesses.yaml").write_text(json.dumps({"harnesses": {"minimal_agent": entry}}))
    output = tmp_path / "conformance"

    @dg.asset
    def harness_probe(harness_runner: HarnessRunner) -> dg.MaterializeResult:
        summary = harness_runner.run_conformance(
            load_configs(configs),
            "minimal_agent",
            output,
            scenarios=["tool_failure"],
            configs=str(configs),
        )
        return dg.MaterializeResult(
            metadata={"verdict": summary.verdict, "exit_code": summary.exit_code}
        )

    runner = HarnessRunner(conformance_timeout_s=60, conformance_jobs=1)
    resources = {"harness_runner": runner}
    result = dg.materialize([harness_probe], resources=resources, instance=instance)
    assert result.success
    (event,) = result.get_asset_materialization_events()
    metadata = event.materialization.metadata
    assert metadata["verdict"].value is True and metadata["exit_code"].value == 0
    episode = output / "minimal_agent" / "tool_failure"
    runtime = json.loads((episode / "runtime.json").read_text())
    assert runtime["interface"] == "session" and runtime["runtime_version"] == "minimal_agent 1.0"
    (activation,) = (episode / "harness").glob("*/root")  # the harness's own dir and log
    assert (activation / "episode.log").is_file() and (activation / "observations.json").is_file()
