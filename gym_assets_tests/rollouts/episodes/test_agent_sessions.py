"""Agent-session hardening (NeMo Gym PR #3554).

The agent below does its activation work under the test's control (an event it waits for),
so joins, replays, refusals and stops are observed on the real ``SessionAgent`` machinery.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from gym_assets.records.episode import EpisodeId, TaskId
from gym_assets.rollouts.episodes.agents import ActivationSettings, AgentSession, SessionAgent
from gym_assets.rollouts.episodes.observations import Invocation
from gym_assets.rollouts.episodes.sessions import SessionConflict

EPISODE = EpisodeId(rollout_id="r1")
TASK = TaskId(taskset="t", task_id="1")
BODY = {"input": "go"}


class _Gateway:
    model_name = "policy"
    model_server_name = "policy_model"
    capture_dir = Path("unused")

    def url_for(self, rollout_id: str, invocation_id: str | None = None) -> str:
        return f"http://127.0.0.1:1/ng-rollout/{rollout_id}/v1"


class GatedAgent(SessionAgent):
    """Each activation counts itself, records a partial response, then waits for ``release``
    and answers (or raises ``fail_with``)."""

    source = "gated"

    def __init__(self, **settings: Any) -> None:
        super().__init__("gated", _Gateway(), ActivationSettings.model_validate(settings))
        self.runs = 0
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.fail_with: Exception | None = None

    async def _activate(
        self, session: AgentSession, invocation: Invocation, params: Mapping[str, Any]
    ) -> dict[str, Any]:
        self.runs += 1
        session.partial_response = {"id": f"resp-{self.runs}", "output": [], "status": "x"}
        self.started.set()
        await self.release.wait()
        if self.fail_with is not None:
            raise self.fail_with
        return {"id": f"resp-{self.runs}", "status": "completed", "output": [], "n": self.runs}


async def _seeded(**settings: Any) -> GatedAgent:
    agent = GatedAgent(**settings)
    await agent.seed_session("as", EPISODE, TASK)
    return agent


def _invocations(receipt: Mapping[str, Any]) -> list[dict[str, Any]]:
    records = receipt["agent_observations"]["records"]
    return [r for r in records if r["kind"] == "agent_invocation"]


def test_identical_retry_while_running_joins_the_activation() -> None:
    async def scenario() -> tuple[GatedAgent, list[dict[str, Any]]]:
        agent = await _seeded()
        first = asyncio.create_task(agent.activate("as", BODY))
        await agent.started.wait()
        retry = asyncio.create_task(agent.activate("as", {"input": "go"}))
        await asyncio.sleep(0)
        agent.release.set()
        return agent, list(await asyncio.gather(first, retry))

    agent, (first, retry) = asyncio.run(scenario())
    assert agent.runs == 1 and first == retry and first["n"] == 1


def test_identical_retry_after_completion_replays_without_running_again() -> None:
    async def scenario() -> tuple[GatedAgent, dict[str, Any], dict[str, Any]]:
        agent = await _seeded()
        agent.release.set()
        first = await agent.activate("as", BODY)
        first["mutated"] = True  # a caller's copy: the replay is unaffected
        return agent, first, await agent.activate("as", dict(BODY))

    agent, first, replay = asyncio.run(scenario())
    assert agent.runs == 1 and first["n"] == replay["n"] == 1 and "mutated" not in replay


def test_a_failed_activation_replays_the_same_error() -> None:
    async def scenario() -> GatedAgent:
        agent = await _seeded()
        agent.fail_with = RuntimeError("provider 429")
        agent.release.set()
        for _ in range(2):
            with pytest.raises(RuntimeError, match="provider 429"):
                await agent.activate("as", BODY)
        return agent

    assert asyncio.run(scenario()).runs == 1


def test_a_concurrent_activation_on_another_body_is_refused() -> None:
    async def scenario() -> tuple[GatedAgent, dict[str, Any]]:
        agent = await _seeded()
        first = asyncio.create_task(agent.activate("as", BODY))
        await agent.started.wait()
        with pytest.raises(SessionConflict, match="already running an activation"):
            await agent.activate("as", {"input": "something else"})
        agent.release.set()
        await first
        # Once it has finished, a new body is the session's next activation.
        second = await agent.activate("as", {"input": "next"})
        return agent, second

    agent, second = asyncio.run(scenario())
    assert agent.runs == 2 and second["n"] == 2


def test_a_waiter_that_gives_up_does_not_stop_the_activation() -> None:
    async def scenario() -> tuple[GatedAgent, dict[str, Any]]:
        agent = await _seeded()
        waiter = asyncio.create_task(agent.activate("as", BODY))
        await agent.started.wait()
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        agent.release.set()
        return agent, await agent.activate("as", BODY)  # the retry joins the same run

    agent, result = asyncio.run(scenario())
    assert agent.runs == 1 and result["status"] == "completed"


def test_close_stops_a_running_activation_and_reports_cancelled() -> None:
    async def scenario() -> tuple[dict[str, Any], asyncio.Task[Any]]:
        agent = await _seeded()
        waiter = asyncio.create_task(agent.activate("as", BODY))
        await agent.started.wait()
        receipt = await agent.close_session("as", EPISODE)
        await asyncio.wait([waiter])
        return receipt, waiter

    receipt, waiter = asyncio.run(scenario())
    assert waiter.cancelled()
    partial = receipt["partial_response"]
    assert partial["id"] == "resp-1" and partial["status"] == "incomplete"
    assert partial["metadata"]["ng_termination_reason"] == "cancelled"
    (invocation,) = _invocations(receipt)
    assert invocation["status"] == "incomplete" and invocation["error_type"] == "cancelled"


def test_the_agents_own_deadline_ends_the_activation_with_wall_time() -> None:
    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        agent = await _seeded(wall_time_s=0.05)  # release is never set
        response = await agent.activate("as", BODY)
        return response, await agent.close_session("as", EPISODE)

    response, receipt = asyncio.run(scenario())
    assert response["id"] == "resp-1" and response["status"] == "incomplete"
    assert response["metadata"]["ng_termination_reason"] == "wall_time"
    assert receipt["partial_response"] == response
    (invocation,) = _invocations(receipt)
    assert invocation["status"] == "incomplete" and invocation["error_type"] == "wall_time"


def test_a_close_for_another_episode_stops_nothing() -> None:
    async def scenario() -> GatedAgent:
        agent = await _seeded()
        waiter = asyncio.create_task(agent.activate("as", BODY))
        await agent.started.wait()
        with pytest.raises(SessionConflict, match="another episode"):
            await agent.close_session("as", EpisodeId(rollout_id="other"))
        agent.release.set()
        assert (await waiter)["status"] == "completed"
        return agent

    assert asyncio.run(scenario()).runs == 1
