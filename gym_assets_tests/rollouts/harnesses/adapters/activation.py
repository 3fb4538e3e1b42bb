"""Running one real harness activation by hand: a scripted gateway, the adapter's prepare, the
harness sandbox (unsandboxed where namespaces are unavailable), the adapter's observations —
the path ``command_agent`` takes, without a benchmark around it. The harness and its offline
profile come from the project's registry."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gym_assets.config.loader import load_configs
from gym_assets.records.contracts import Step
from gym_assets.rollouts.episodes.launch import EpisodeFiles, launch_of, run_isolated
from gym_assets.rollouts.gateway import read_capture
from gym_assets.rollouts.gateway.server import ModelGateway
from gym_assets.rollouts.gateway.upstreams import ScriptedUpstream
from gym_assets.rollouts.harnesses.adapters.base import Api, CliEpisode, adapter_named
from gym_assets.rollouts.harnesses.registry import HARNESSES_DIR_ENV, Harness, load_harnesses
from gym_assets.sandbox import SandboxPolicy
from gym_assets.suite.judging import ScenarioResult
from gym_assets.suite.run import run_suite
from gym_assets.suite.scenarios import SCENARIO_NAMES

CONFIGS = Path(__file__).resolve().parents[4] / "configs"
ROLLOUT = "r1"
INVOCATION = "root"


def installed(name: str) -> Harness:
    """The registry entry of ``name`` (configs/), or a skip naming the missing install."""
    harness = load_harnesses(load_configs(CONFIGS))[name]
    assert harness.install_dir is not None and harness.adapter is not None
    if not adapter_named(harness.adapter).executable(harness.install_dir).exists():
        pytest.skip(
            f"{name} is not installed in {harness.install_dir} (run `gym-assets harness install "
            f"{name}`, or point {HARNESSES_DIR_ENV} at a folder holding it)"
        )
    return harness


@dataclass(frozen=True)
class Activation:
    episode: CliEpisode
    exit_code: int
    bundle: dict[str, Any]
    calls: list[dict[str, Any]]  # the gateway's capture of the rollout, payloads included
    sandbox: dict[str, Any]  # the sandbox record of the activation
    outside: list[dict[str, Any]]  # network.jsonl events other than the gateway's (sandboxed)


def run_activation(
    harness: Harness,
    script: Sequence[Step],
    root: Path,
    *,
    prompt: str,
    api: Api | None = None,
) -> Activation:
    assert harness.adapter is not None and harness.install_dir is not None
    assert harness.api is not None and harness.stream is not None
    adapter = adapter_named(harness.adapter)
    with ModelGateway(ScriptedUpstream(script), root / "capture") as gateway:
        files = EpisodeFiles(root / "activation").create()
        episode = CliEpisode(
            files=files,
            base_url=gateway.url_for(ROLLOUT, INVOCATION),
            model=gateway.model_name,
            model_server=gateway.model_server_name,
            prompt=prompt,
            invocation_id=INVOCATION,
            install_dir=harness.install_dir,
            api=api or harness.api,
            stream=harness.stream,
            offline_env=harness.offline.env,
            offline_args=harness.offline.args,
        )
        prepared = adapter.prepare(episode)
        launch = launch_of(
            prepared.argv,
            files,
            base_url=episode.base_url,
            model=episode.model,
            model_server=episode.model_server,
            prompt=prompt,
            invocation_id=INVOCATION,
            extra_env=prepared.env,
        )
        records: list[dict[str, Any]] = []
        run = run_isolated(
            launch,
            SandboxPolicy(allow_unsandboxed=True).isolation(),
            files,
            gateway_url=episode.base_url,
            sandbox_id=f"{ROLLOUT}/{INVOCATION}",
            records=records,
            read_only=[harness.install_dir],
        )
        exit_code = asyncio.run(run)
        bundle = adapter.observations(episode, exit_code)
    calls = read_capture(root / "capture", ROLLOUT, include_payloads=True)["calls"]
    return Activation(episode, exit_code, bundle, calls, records[0], outside_attempts(files.root))


def outside_attempts(activation_dir: Path) -> list[dict[str, Any]]:
    """What the sandbox's network log holds besides its start and the gateway connections:
    looked-up names and blocked connections (nothing when it ran unsandboxed)."""
    log = activation_dir / "network.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    events = [json.loads(line) for line in lines if line.strip()]
    return [e for e in events if e.get("event") not in ("sandbox_ready", "gateway_connection")]


def conformance_run(harness: Harness, output: Path) -> dict[str, ScenarioResult]:
    """All seven scenarios for the harness (``gym-assets conformance run --harness NAME``);
    every scenario must have been run and judged, whatever its verdict."""
    suite = run_suite(
        load_configs(CONFIGS),
        harnesses=[harness.name],
        scenarios=None,
        output=output,
        timeout_s=120,
        jobs=2,
        configs=str(CONFIGS),
    )
    assert suite.report_md.is_file() and suite.summary_path.is_file()
    results = {s.scenario: s for s in suite.harnesses[harness.name].scenarios}
    assert set(results) == set(SCENARIO_NAMES)
    for result in results.values():
        assert result.exercised and result.verdict in ("fulfilled", "not_fulfilled")
        assert not result.execution_failed, result.issues
        # offline with the registry's profile: nothing looked up, nothing but the gateway
        assert outside_attempts(scenario_activation(result)) == [], result.scenario
    return results


def scenario_activation(result: ScenarioResult) -> Path:
    """The directory of the scenario's one activation."""
    (activation,) = result.result_path.parent.glob("harness/*/root")
    return activation


def scenario_bundle(result: ScenarioResult) -> dict[str, Any]:
    """The bundle the adapter wrote for the scenario's one activation."""
    path = scenario_activation(result) / "observations.json"
    return json.loads(path.read_text(encoding="utf-8"))
