"""The conformance suite run on an installed harness, for the adapters' end-to-end tests.

The harness must be installed (``gym-assets harness install NAME``, or a ready install folder
named by ``GYM_ASSETS_HARNESSES_DIR``); without one the test is skipped, saying so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gym_assets.cli import main
from gym_assets.config.loader import load_configs
from gym_assets.rollouts.harnesses.adapters import adapter_named
from gym_assets.rollouts.harnesses.registry import HARNESSES_DIR_ENV, load_harnesses
from gym_assets.suite.scenarios import SCENARIO_NAMES

CONFIGS = Path(__file__).resolve().parents[4] / "configs"


@dataclass(frozen=True)
class SuiteRun:
    output: Path
    harness: str
    exit_code: int

    def summary(self) -> dict[str, Any]:
        return json.loads((self.output / "conformance_summary.json").read_text(encoding="utf-8"))

    def verdicts(self) -> dict[str, str]:
        scenarios = self.summary()["harnesses"][self.harness]["scenarios"]
        return {s["scenario"]: s["verdict"] for s in scenarios}

    def failing(self) -> dict[str, list[str]]:
        scenarios = self.summary()["harnesses"][self.harness]["scenarios"]
        return {s["scenario"]: s["failing_checks"] for s in scenarios}

    def episode(self, scenario: str) -> Path:
        return self.output / self.harness / scenario

    def bundle(self, scenario: str) -> dict[str, Any]:
        """What the adapter read back from the harness's artifacts in that scenario."""
        path = self.episode(scenario) / "harness" / "0-0" / "root" / "observations.json"
        return json.loads(path.read_text(encoding="utf-8"))

    def attempts(self, scenario: str) -> list[int]:
        """The HTTP statuses the scripted provider answered, in order (the witness)."""
        witness = json.loads((self.episode(scenario) / "witness.json").read_text("utf-8"))
        return [attempt["status_code"] for attempt in witness["attempts"]]

    def trajectory(self, scenario: str) -> dict[str, Any]:
        lines = (self.episode(scenario) / "rollouts.jsonl").read_text("utf-8").splitlines()
        (record,) = [json.loads(line) for line in lines if line.strip()]
        return record["ng_trajectory"]


def run_all_scenarios(name: str, output: Path) -> SuiteRun:
    """``gym-assets conformance run --harness NAME`` over the seven scenarios (skipped when the
    harness is not installed here)."""
    harness = load_harnesses(load_configs(CONFIGS))[name]
    assert harness.adapter is not None and harness.install_dir is not None
    program = adapter_named(harness.adapter).executable(harness.install_dir)
    if not program.exists():
        pytest.skip(
            f"{name} is not installed ({program} is missing): run `gym-assets harness install "
            f"{name}` or point {HARNESSES_DIR_ENV} at a folder holding {name}/"
        )
    argv = ["conformance", "run", "--harness", name, "--output", str(output), "--jobs", "2"]
    exit_code = main([*argv, "--configs", str(CONFIGS), "--timeout", "120"])
    run = SuiteRun(output, name, exit_code)
    assert (output / "conformance_report.md").is_file()
    assert set(run.verdicts()) == set(SCENARIO_NAMES)
    assert set(run.verdicts().values()) <= {"fulfilled", "not_fulfilled"}
    print(f"{name}: failing checks per scenario: {run.failing()}")  # the record, for docs
    return run


def assert_failures_recorded_and_retries_owned(run: SuiteRun, tool_name: str) -> None:
    """A permanent 400 is tried once and the harness's own record says the run failed; the
    command that exits 7 is recorded failed; the two 429s, retried by the harness's HTTP client
    and kept in none of its artifacts, are owned by its invocation all the same (the
    per-invocation base URL), beside the three calls it references by response id."""
    assert run.attempts("model_error") == [400]
    (invocation,) = _invocations(run.bundle("model_error"))
    assert invocation["status"] == "failed" and invocation["model_calls"] == []
    tools = [r for r in run.bundle("tool_failure")["records"] if r["kind"] == "tool_call"]
    assert [(t["tool_name"], t["status"]) for t in tools] == [
        (tool_name, "failed"),
        (tool_name, "completed"),
    ]
    assert run.attempts("retry_429")[:2] == [429, 429]
    (invocation,) = _invocations(run.bundle("retry_429"))
    assert len(invocation["model_calls"]) == 3
    trajectory = run.trajectory("retry_429")
    (owner,) = trajectory["invocations"]
    assert len(owner["model_calls"]) == len(trajectory["model_calls"]) == 5


def _invocations(bundle: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in bundle["records"] if r["kind"] == "agent_invocation"]
