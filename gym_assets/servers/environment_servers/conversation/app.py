"""A two-agent dialogue: a simulated user and the assistant under evaluation take turns.

The user simulator opens with the task's ``opening_message``; then the assistant answers (it
may call the resources server's tools) and the simulator replies, until the assistant has
answered ``max_turns`` times (the server's setting, or the task's if lower) or the simulator
ends the conversation. Then both agents are closed — their observations are kept in one bundle,
invocation ids prefixed by agent — and the resources server grades the conversation.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from gym_assets.records import keys
from gym_assets.records.contracts import ResourcesServer
from gym_assets.rollouts.episodes.agents import Agent, ToolGrant
from gym_assets.rollouts.episodes.cleanup import CleanupEntry
from gym_assets.rollouts.episodes.failures import ProtocolViolation, parse_task_input, stage
from gym_assets.rollouts.episodes.responses import final_text
from gym_assets.rollouts.episodes.runner import (
    EnvironmentSettings,
    Episode,
    EpisodeRunner,
    RunnerServer,
)
from gym_assets.servers.environment_servers.conversation.task_data import TaskData
from gym_assets.servers.responses_api_agents.user_simulator.app import STOP_MARKER

ASSISTANT_INSTRUCTIONS = (
    "You are a customer support agent. Look the customer's order up, take the one action "
    "that resolves their request with your tools, and tell them what you did."
)


class Settings(EnvironmentSettings):
    max_turns: int = Field(default=6, ge=1, strict=True)


class Conversation(RunnerServer):
    implementation = "conversation"

    def __init__(
        self,
        name: str,
        settings: Settings,
        user: Agent,
        assistant: Agent,
        resources: ResourcesServer,
    ) -> None:
        self.name = name
        self.settings = settings
        self.user = user
        self.assistant = assistant
        self.resources = resources
        self.runner = EpisodeRunner(settings)

    async def _episode(self, episode: Episode) -> dict[str, Any]:
        task_input = dict(episode.request.task.task_input)
        task = parse_task_input(TaskData, task_input, self.implementation)
        key = episode.capture_key
        resources_session = f"resources-session-{uuid.uuid4().hex}"
        resources_close = episode.cleanup.register(
            "resources close", lambda: self.resources.close_session(resources_session, key)
        )
        with stage("seed"):
            seeded = await self.resources.seed_session(resources_session, key, task_input)
            if seeded.get("resources_session_id") != resources_session:
                raise ProtocolViolation("resources seed answered another session id")
        user_session, user_close = await self._seed(episode, self.user, None, task_input)
        grant = ToolGrant(self.resources, resources_session)
        bot_session, bot_close = await self._seed(episode, self.assistant, grant, None)

        bot_view: list[dict[str, Any]] = [{"role": "developer", "content": ASSISTANT_INSTRUCTIONS}]
        user_view: list[dict[str, Any]] = []
        transcript: list[dict[str, str]] = []
        customer = task.opening_message
        for turn in range(self._max_turns(task_input)):
            transcript.append({"role": "user", "content": customer})
            bot_view.append({"role": "user", "content": customer})
            with stage("agent"):
                response = await self.assistant.activate(
                    bot_session, {"input": list(bot_view)}, cookie=bot_session
                )
            episode.partial_response = response
            bot_view.extend(response.get("output") or [])
            reply = final_text(response)
            transcript.append({"role": "assistant", "content": reply})
            if turn + 1 == self._max_turns(task_input):
                break
            user_view += [
                {"role": "assistant", "content": customer},
                {"role": "user", "content": reply},
            ]
            with stage("agent"):
                said = await self.user.activate(
                    user_session, {"input": list(user_view)}, cookie=user_session
                )
            customer = final_text(said).strip()
            if not customer or STOP_MARKER in customer:
                break

        with stage("cleanup"):
            await bot_close.close()
            await user_close.close()
        with stage("verification"):
            body = {**task_input, "conversation": transcript, "response": response}
            verified = await self.resources.verify(
                resources_session, body, cookie=resources_session
            )
        resources_close.retry_later()
        return {**verified, keys.AGENT_OBSERVATIONS: episode.merged_observations()}

    async def _seed(
        self,
        episode: Episode,
        agent: Agent,
        grant: ToolGrant | None,
        task_data: Mapping[str, Any] | None,
    ) -> tuple[str, CleanupEntry]:
        request = episode.request
        session = f"agent-session-{uuid.uuid4().hex}"

        async def close() -> None:
            receipt = await agent.close_session(session, request.episode_id, cookie=session)
            episode.take_receipt(agent.name, receipt)

        entry = episode.cleanup.register(f"{agent.name} close", close)
        with stage("agent"):
            seeded = await agent.seed_session(
                session, request.episode_id, request.task.task_id, grant=grant, task_data=task_data
            )
            if seeded.get("agent_session_id") != session:
                raise ProtocolViolation(f"{agent.name} seed answered another session id")
        return session, entry

    def _max_turns(self, task_input: Mapping[str, Any]) -> int:
        task_limit = task_input.get("max_turns")
        limit = self.settings.max_turns
        return min(limit, task_limit) if isinstance(task_limit, int) and task_limit > 0 else limit


def create(
    name: str,
    settings: Mapping[str, Any],
    *,
    agents: Mapping[str, Agent],
    resources: ResourcesServer | None,
) -> Conversation:
    if "user_agent" not in agents or "assistant_agent" not in agents or resources is None:
        raise ValueError(f"{name}: needs user_agent, assistant_agent and resources_server")
    return Conversation(
        name,
        Settings.model_validate(dict(settings)),
        agents["user_agent"],
        agents["assistant_agent"],
        resources,
    )
