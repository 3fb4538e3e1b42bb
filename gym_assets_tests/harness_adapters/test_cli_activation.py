"""What a ``cli`` harness is told and what its activation answers, when the task comes with a
system message (HumanEval's "reply with one python block"): the program gets the instructions
with the task, and the response is what the model said, though the program's conversation
does not start with the task's own input items."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from gym_assets.harness_adapters import ADAPTER_MODULES
from gym_assets.rollouts.gateway import ScriptedUpstream
from gym_assets.rollouts.protocol import EpisodeId, TaskId
from gym_assets.servers.responses_api_agents.command_agent.app import create

HERE = Path(__file__).parent
SETTINGS = {"name": "fake", "install_dir": str(HERE), "api": "responses", "stream": False}
TASK = [
    {"role": "system", "content": "Reply with one python block."},
    {"role": "user", "content": "Write f."},
]


@pytest.fixture(autouse=True)
def fake_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(ADAPTER_MODULES, "fake", "gym_assets_tests.harness_adapters.fake_adapter")


def test_a_cli_harness_gets_the_instructions_and_answers_what_the_model_said(
    start_gateway, tmp_path: Path
) -> None:
    gateway = start_gateway(ScriptedUpstream([{"text": "```python\ndef f(): ...\n```"}]))
    episodes = tmp_path / "episodes"
    agent = create(
        "agent",
        {"adapter": SETTINGS, "harness": "f", "episodes_dir": str(episodes)},
        gateway=gateway,
        resources=None,
    )
    episode = EpisodeId(rollout_id="r1")

    async def activate() -> dict:
        await agent.seed_session("as", episode, TaskId(taskset="t", task_id="1"))
        return await agent.activate("as", {"input": TASK})

    response = asyncio.run(activate())
    session = episodes / episode.capture_key / "root" / "home" / ".fakecli" / "session.jsonl"
    told = json.loads(session.read_text().splitlines()[-1])["prompt"]
    assert told == "Reply with one python block.\n\nWrite f."
    [message] = response["output"]
    assert message["role"] == "assistant"
    assert message["content"][0]["text"] == "```python\ndef f(): ...\n```"
