"""One conformance episode (one harness × one scenario), run in a process of its own:

    python -m gym_assets.suite.episode --harness-json '{...}' --scenario S \\
        --directory D --timeout T [--allow-unsandboxed]

The episode runs the scenario's task through the project's normal rollout machinery — the
same ``Dispatcher`` as ``gym-assets rollouts``: environment server → agent → model gateway →
resources server, then the collector's record with its projected ``ng_trajectory`` (or one
failure-sidecar row). Only the servers differ: the gateway answers from the scripted probe
(``gym_assets.suite.scripted_provider``) and the resources server is the conformance one; both
write the episode's ``witness.json``. The harness replaces the agent implementation exactly as
``rollouts --harness`` does (``with_harness``). Nothing here writes evidence on the harness's
behalf: whatever the collector saved is what the inspection judges.

The gateway runs in this process (its own thread, as always) rather than in a child: an episode
is one rollout, and keeping the provider and the resources server in one process keeps the
witness a local file both update under one lock. The supervising runner owns the process
group, the deadline and the clean-up (``supervise``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from gym_assets.conformance.witness_log import WitnessLog
from gym_assets.errors import UserError
from gym_assets.fileio import atomic_write_text, json_line
from gym_assets.records.contracts import RunGateway
from gym_assets.records.keys import ENVIRONMENT_SERVER, ROLLOUT_INDEX, TASK_INDEX
from gym_assets.rollouts.collection.dispatch import Dispatcher
from gym_assets.rollouts.collection.files import AppendLog, RunFiles
from gym_assets.rollouts.collection.inputs import RolloutInput
from gym_assets.rollouts.collection.ledger import Ledger
from gym_assets.rollouts.collection.progress import Progress
from gym_assets.rollouts.episodes.registry import build_environment
from gym_assets.rollouts.gateway.server import ModelGateway
from gym_assets.rollouts.harnesses.registry import (
    Harness,
    Interface,
    resolve,
    resolve_interface,
    with_harness,
)
from gym_assets.sandbox import SandboxPolicy
from gym_assets.suite.layout import (
    CAPTURE_DIR,
    HARNESS_DIR,
    LAUNCH_FILE,
    REQUESTS_FILE,
    RUNTIME_FILE,
    WITNESS_FILE,
    WORKSPACE_DIR,
)
from gym_assets.suite.scenarios import MODEL, Scenario, get_scenario, task_input
from gym_assets.suite.scripted_provider import ProbeUpstream

TASKSET = "conformance"
MODEL_SERVER = "policy_model"
RESOURCES = "conformance_resources"
AGENT = "conformance_agent"
ENVIRONMENT = "conformance_environment"
COLLECTION_GRACE_S = 10.0  # collection's limit is the harness budget plus this
# Which environment server drives a harness of each interface (docs/harnesses.md): the session
# path (seed, activate, close through ``single_agent_turn``), or the legacy relay of ``/run``
# for an agent that runs whole episodes itself (it is handed a flat row).
ENVIRONMENT_FOR_INTERFACE: dict[Interface, str] = {
    "session": "single_agent_turn",
    "legacy_run": "legacy_agent",
}


def _ref(kind: str, name: str) -> dict[str, str]:
    return {"type": kind, "name": name}


def episode_config(
    harness: Harness, scenario: Scenario, directory: Path, timeout_s: float
) -> dict[str, Any]:
    """The servers of one episode, as a config tree; the agent runs ``harness``."""
    environment = ENVIRONMENT_FOR_INTERFACE[resolve_interface(harness)]
    resources = _ref("resources_servers", RESOURCES)
    model = _ref("responses_api_models", MODEL_SERVER)
    agent: dict[str, Any] = {"resources_server": resources, "model_server": model}
    if harness.kind != "builtin":  # its own shell runs the probe's commands, which write there
        agent["writable_dirs"] = [str(directory / WORKSPACE_DIR)]
    config: dict[str, Any] = {
        MODEL_SERVER: {"responses_api_models": {"gateway_model": {"model": MODEL}}},
        RESOURCES: {
            "resources_servers": {
                "conformance": {
                    "witness": str(directory / WITNESS_FILE),
                    "workspace": str(directory / WORKSPACE_DIR),
                    "expected_reward": scenario.expected_reward,
                }
            }
        },
        AGENT: {"responses_api_agents": {harness.agent_implementation: agent}},
        ENVIRONMENT: {
            "environment_servers": {
                environment: {
                    "agent_server": _ref("responses_api_agents", AGENT),
                    "resources_server": resources,
                    "default_episode_timeout_seconds": timeout_s,
                }
            }
        },
    }
    swapped, _ = with_harness(config, harness, [ENVIRONMENT], episodes_dir=directory / HARNESS_DIR)
    return swapped


def episode_input(scenario: Scenario, interface: str) -> RolloutInput:
    """The scenario's task as a collection input (the task id is the scenario's name): a
    materialized task for the session path, a flat row for a legacy ``/run`` agent."""
    stamps = {TASK_INDEX: 0, ROLLOUT_INDEX: 0, ENVIRONMENT_SERVER: ENVIRONMENT}
    task = task_input(scenario)
    if interface == "legacy_run":
        flat = {
            "task_id": scenario.name,
            "responses_create_params": task["responses_create_params"],
        }
        row = {**flat, **task["task_data"], **stamps, "agent_ref": {"name": AGENT}}
    else:
        row = {"task_id": {"taskset": TASKSET, "task_id": scenario.name}, "task_input": task}
        row.update(stamps)
    return RolloutInput.of(row, TASKSET)


def run_episode(
    harness: Harness,
    scenario: Scenario,
    directory: Path,
    timeout_s: float,
    *,
    allow_unsandboxed: bool = False,
) -> None:
    """Run one episode into ``directory`` (which exists and is the episode's own)."""
    directory = directory.resolve()
    workspace = directory / WORKSPACE_DIR
    workspace.mkdir(exist_ok=True)
    witness = WitnessLog(directory / WITNESS_FILE)
    witness.create()
    config = episode_config(harness, scenario, directory, timeout_s)
    sandbox = SandboxPolicy(allow_unsandboxed=allow_unsandboxed)
    resolved = resolve(harness, sandbox)
    item = episode_input(scenario, resolved.interface)
    atomic_write_text(
        directory / RUNTIME_FILE,
        json.dumps(
            {
                "harness": harness.model_dump(mode="json", exclude_defaults=True),
                "interface": resolved.interface,
                "runtime_version": resolved.runtime_version,
                "python": platform.python_version(),
            },
            indent=2,
            sort_keys=True,
        )
        + "\n",
    )
    atomic_write_text(
        directory / LAUNCH_FILE,
        json.dumps({"config": config, "timeout": timeout_s}, indent=2, sort_keys=True) + "\n",
    )
    (directory / REQUESTS_FILE).write_bytes(json_line(item.row))

    files = RunFiles(directory)
    upstream = ProbeUpstream(scenario, witness, workspace)
    gateway = ModelGateway(
        upstream, directory / CAPTURE_DIR, model_name=MODEL, model_server_name=MODEL_SERVER
    )
    with sandbox, gateway:
        server = build_environment(config, ENVIRONMENT, gateway, sandbox)
        records, failures = AppendLog(files.records), AppendLog(files.failures)
        dispatcher = Dispatcher(
            servers={ENVIRONMENT: server},
            agents={ENVIRONMENT: AGENT},
            gateway=cast(RunGateway, gateway),  # never scripted per rollout: no reference upstream
            gate=None,
            ledger=Ledger(),
            records=records,
            failures=failures,
            progress=Progress(1, sys.stderr),
            timeout_s=timeout_s + COLLECTION_GRACE_S,
        )

        try:
            asyncio.run(dispatcher.run([(item, 0)], 1))
        finally:
            for log in (records, failures):
                with contextlib.suppress(OSError):
                    log.close()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gym_assets.suite.episode")
    parser.add_argument("--harness-json", required=True, help="the harness registry entry")
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--directory", required=True, type=Path)
    parser.add_argument("--timeout", required=True, type=float)
    parser.add_argument("--allow-unsandboxed", action="store_true")
    return parser


def read_harness(text: str) -> Harness:
    """The registry entry ``episode_command`` wrote, read in JSON mode: the registry is strict,
    and only JSON mode takes an install folder's path as text."""
    return Harness.model_validate_json(text)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    harness = read_harness(args.harness_json)
    try:
        run_episode(
            harness,
            get_scenario(args.scenario),
            args.directory,
            args.timeout,
            allow_unsandboxed=args.allow_unsandboxed,
        )
    except UserError as exc:
        print(f"error: {exc.render()}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
