"""The native single-agent-turn environment server.

One episode: seed resources, seed the agent (granting it the resources session's tools),
activate it, close it (before verifying, so its observations are final), verify, and close
resources. Each participant's close is registered before it is seeded; the final unwind runs
them newest first, under the cleanup timeout, whatever happened — and outside the episode
deadline, so a slow resources close never costs a finished result.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from gym_assets.records import keys
from gym_assets.records.contracts import ResourcesServer
from gym_assets.rollouts.episodes.agents import Agent, ToolGrant
from gym_assets.rollouts.episodes.failures import ProtocolViolation, parse_task_input, stage
from gym_assets.rollouts.episodes.runner import (
    EnvironmentSettings,
    Episode,
    EpisodeRunner,
    RunnerServer,
)
from gym_assets.tasks.task_inputs import SingleAgentTurnTaskInput


class SingleAgentTurn(RunnerServer):
    implementation = "single_agent_turn"

    def __init__(
        self, name: str, settings: EnvironmentSettings, agent: Agent, resources: ResourcesServer
    ) -> None:
        self.name = name
        self.agent = agent
        self.resources = resources
        self.runner = EpisodeRunner(settings)

    async def _episode(self, episode: Episode) -> dict[str, Any]:
        request = episode.request
        task = parse_task_input(
            SingleAgentTurnTaskInput, request.task.task_input, self.implementation
        )
        params = task.responses_create_params.model_dump(exclude_unset=True)
        key = episode.capture_key

        resources_session = f"resources-session-{uuid.uuid4().hex}"
        resources_close = episode.cleanup.register(
            "resources close", lambda: self.resources.close_session(resources_session, key)
        )
        with stage("seed"):
            seeded = await self.resources.seed_session(resources_session, key, task.task_data)
            _require_echo(seeded, "resources_session_id", resources_session)

        agent_session = f"agent-session-{uuid.uuid4().hex}"

        async def close_agent() -> None:
            receipt = await self.agent.close_session(
                agent_session, request.episode_id, cookie=agent_session
            )
            episode.take_receipt(self.agent.name, receipt)

        agent_close = episode.cleanup.register("agent close", close_agent)
        with stage("agent"):
            grant = ToolGrant(self.resources, resources_session)
            seeded = await self.agent.seed_session(
                agent_session, request.episode_id, request.task.task_id, grant=grant
            )
            _require_echo(seeded, "agent_session_id", agent_session)
            # the seed set our session cookie; later calls carry it
            response = await self.agent.activate(agent_session, params, cookie=agent_session)
        episode.partial_response = response

        with stage("cleanup"):
            await agent_close.close()
        with stage("verification"):
            body = {**task.task_data, "responses_create_params": params, "response": response}
            # the resources seed set our resources cookie; verify carries it
            verified = await self.resources.verify(
                resources_session, body, cookie=resources_session
            )
        resources_close.retry_later()
        return {**verified, keys.AGENT_OBSERVATIONS: episode.merged_observations()}


def _require_echo(reply: Mapping[str, Any], key: str, expected: str) -> None:
    if reply.get(key) != expected:
        raise ProtocolViolation(f"seed answered {key}={reply.get(key)!r}, expected {expected!r}")


def create(
    name: str,
    settings: Mapping[str, Any],
    *,
    agents: Mapping[str, Agent],
    resources: ResourcesServer | None,
) -> SingleAgentTurn:
    agent, resources_server = single_participants(name, agents, resources)
    return SingleAgentTurn(
        name, EnvironmentSettings.model_validate(dict(settings)), agent, resources_server
    )


def single_participants(
    name: str, agents: Mapping[str, Agent], resources: ResourcesServer | None
) -> tuple[Agent, ResourcesServer]:
    """The one agent (``agent_server``) and the resources server a single-agent server binds."""
    if "agent_server" not in agents or resources is None:
        raise ValueError(f"{name}: needs agent_server and resources_server references")
    return agents["agent_server"], resources
