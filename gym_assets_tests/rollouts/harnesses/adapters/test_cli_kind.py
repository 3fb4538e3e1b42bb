"""The ``cli`` harness kind: registry entries, the install folder, availability, and the
adapter hook of ``command_agent`` (a stand-in CLI over real HTTP to a real gateway)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from gym_assets.config.loader import load_configs
from gym_assets.errors import ConfigError
from gym_assets.records.episode import EpisodeId, TaskId
from gym_assets.rollouts.gateway import ScriptedUpstream, read_capture
from gym_assets.rollouts.harnesses.adapters import ADAPTER_MODULES
from gym_assets.rollouts.harnesses.registry import (
    HARNESSES_DIR_ENV,
    HarnessUnavailable,
    adapter_settings,
    load_harnesses,
    resolve,
)
from gym_assets.sandbox import SandboxPolicy
from gym_assets.servers.responses_api_agents.command_agent.app import create
from gym_assets_tests.rollouts.harnesses.adapters import fake_adapter

HERE = Path(__file__).parent
ENTRY = {
    **fake_adapter.ENTRY,
    "offline": {"env": {"FAKE_OFFLINE": "1"}, "args": ["--no-telemetry"]},
}


@pytest.fixture(autouse=True)
def fake_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        ADAPTER_MODULES, "fake", "gym_assets_tests.rollouts.harnesses.adapters.fake_adapter"
    )
    monkeypatch.delenv(HARNESSES_DIR_ENV, raising=False)


def test_a_cli_entry_is_installed_beside_the_configs_folder(tmp_path: Path, monkeypatch) -> None:
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "harnesses.yaml").write_text(json.dumps({"harnesses": {"fakecli": ENTRY}}))
    harness = load_harnesses(load_configs(configs))["fakecli"]
    assert harness.agent_implementation == "command_agent" and harness.version == "1.2.3"
    assert harness.install_dir == tmp_path / ".harnesses" / "fakecli"
    monkeypatch.setenv(HARNESSES_DIR_ENV, str(tmp_path / "cache"))
    harness = load_harnesses(load_configs(configs))["fakecli"]
    assert harness.install_dir == tmp_path / "cache" / "fakecli"
    assert adapter_settings(harness) == {
        "name": "fake",
        "install_dir": str(tmp_path / "cache" / "fakecli"),
        "api": "responses",
        "stream": False,
        "offline_env": {"FAKE_OFFLINE": "1"},
        "offline_args": ["--no-telemetry"],
    }


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"version": None}, "needs version"),
        ({"adapter": "nope"}, "no harness adapter named 'nope'"),
        ({"stream": True}, "cannot drive responses streaming; it speaks responses JSON"),
        ({"command": ["prog"]}, "drop command"),
        ({"install": {"npm": "a", "pip": "b"}}, "exactly one of npm"),
        ({"install_dir": "/elsewhere"}, "drop it"),
        ({"agent_implementation": "simple_agent"}, "drop agent_implementation"),
    ],
)
def test_malformed_cli_entries_are_config_errors(change, said) -> None:
    entry = {k: v for k, v in {**ENTRY, **change}.items() if v is not None}
    with pytest.raises(ConfigError, match=said):
        load_harnesses({"harnesses": {"x": entry}})


def test_cli_fields_on_another_kind_are_refused() -> None:
    entry = {"kind": "command", "command": ["prog"], "api": "chat"}
    with pytest.raises(ConfigError, match="belong to a cli harness"):
        load_harnesses({"harnesses": {"x": entry}})


def test_a_harness_that_is_not_installed_is_refused_with_the_install_command(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv(HARNESSES_DIR_ENV, str(tmp_path))
    harness = load_harnesses({"harnesses": {"fakecli": ENTRY}})["fakecli"]
    with pytest.raises(HarnessUnavailable, match="gym-assets harness install fakecli"):
        resolve(harness, SandboxPolicy())


def _activate(gateway, episodes: Path, task: list[dict]) -> tuple[Any, EpisodeId, dict]:
    """One activation of the fake cli harness on ``task``: (agent, episode, response)."""
    settings = {**adapter_settings(load_harnesses({"harnesses": {"f": ENTRY}})["f"])}
    settings["install_dir"] = str(HERE)
    agent = create(
        "agent",
        {"adapter": settings, "harness": "f", "episodes_dir": str(episodes)},
        gateway=gateway,
        resources=None,
    )
    episode = EpisodeId(rollout_id="r1")

    async def activate() -> dict:
        await agent.seed_session("as", episode, TaskId(taskset="t", task_id="1"))
        return await agent.activate("as", {"input": task})

    return agent, episode, asyncio.run(activate())


def test_the_adapter_configures_the_program_and_reads_back_what_it_kept(
    start_gateway, tmp_path: Path
) -> None:
    gateway = start_gateway(ScriptedUpstream([{"text": "DONE"}]))
    episodes = tmp_path / "episodes"
    task = [{"role": "user", "content": "Say DONE."}]
    agent, episode, response = _activate(gateway, episodes, task)
    assert response["status"] == "completed" and response["output"][0]["type"] == "message"
    home = episodes / episode.capture_key / "root" / "home"
    config = json.loads((home / ".fakecli" / "config.json").read_text())
    assert config["base_url"] == gateway.url_for(episode.capture_key, "root")
    kept = json.loads((home / ".fakecli" / "session.jsonl").read_text().splitlines()[0])
    assert kept == {"flags": ["--no-telemetry"], "offline": "1"}  # the offline profile
    # The program sent no session header: the per-invocation URL gave the call to its invocation.
    calls = read_capture(gateway.capture_dir, episode.capture_key)["calls"]
    assert [call["client_session_id"] for call in calls] == ["root"]
    receipt = asyncio.run(agent.close_session("as", episode))
    assert receipt["agent_observations"]["source"] == "fake"
    assert receipt["agent_observations"]["records"][0]["invocation_id"] == "root"


def test_settings_name_exactly_one_program() -> None:
    with pytest.raises(ValueError, match="exactly one of command"):
        create("agent", {}, gateway=None, resources=None)  # type: ignore[arg-type]


def test_a_cli_harness_gets_the_instructions_and_answers_what_the_model_said(
    start_gateway, tmp_path: Path
) -> None:
    """A task with a system message (HumanEval's "reply with one python block"): the program
    is told the instructions with the task, and the response is what the model said, though
    the program's conversation does not start with the task's own input items."""
    gateway = start_gateway(ScriptedUpstream([{"text": "```python\ndef f(): ...\n```"}]))
    episodes = tmp_path / "episodes"
    task = [
        {"role": "system", "content": "Reply with one python block."},
        {"role": "user", "content": "Write f."},
    ]
    _, episode, response = _activate(gateway, episodes, task)
    session = episodes / episode.capture_key / "root" / "home" / ".fakecli" / "session.jsonl"
    told = json.loads(session.read_text().splitlines()[-1])["prompt"]
    assert told == "Reply with one python block.\n\nWrite f."
    [message] = response["output"]
    assert message["role"] == "assistant"
    assert message["content"][0]["text"] == "```python\ndef f(): ...\n```"
