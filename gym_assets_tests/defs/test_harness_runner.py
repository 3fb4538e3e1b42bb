"""The ``HarnessRunner`` resource runs the conformance suite for an asset: Dagster code asks,
the library launches and supervises every process (a real instance, a real episode)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import dagster as dg

from gym_assets.config.loader import load_configs
from gym_assets.defs.rollouts.resources import HarnessRunner

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "harnesses" / "minimal_agent.py"


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
