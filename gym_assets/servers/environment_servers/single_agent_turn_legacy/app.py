"""Single-agent-turn for flat rows: the native protocol behind the old flat ``run`` answer.

A flat row (``responses_create_params`` plus task fields) runs as a native episode whose task
input is the row; the answer is the flat verify row, or ``_ng_failure_*`` fields. A row whose
``task_source`` names neither the bound resources server, the agent nor this server, or whose
``agent_ref`` names another agent, is refused — it was routed to the wrong place. An episode
request gets the episode response.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gym_assets.records.contracts import ResourcesServer
from gym_assets.records.episode import EpisodeFailure, EpisodeRequest, EpisodeResponse
from gym_assets.rollouts.episodes.agents import Agent
from gym_assets.rollouts.episodes.legacy import episode_request_of, flat_failure_answer
from gym_assets.rollouts.episodes.runner import EnvironmentSettings
from gym_assets.servers.environment_servers.single_agent_turn.app import (
    SingleAgentTurn,
    single_participants,
)
from gym_assets.tasks.materialize import is_materialized


class SingleAgentTurnLegacy(SingleAgentTurn):
    implementation = "single_agent_turn_legacy"

    async def run(self, request: EpisodeRequest | Mapping[str, Any]) -> EpisodeResponse | dict:
        if (
            isinstance(request, EpisodeRequest)
            or "episode_id" in request
            or is_materialized(request)
        ):
            return await super().run(request)
        refusal = self._misrouted(request)
        if refusal is not None:
            return flat_failure_answer(
                EpisodeFailure.of(refusal, terminal=True, kind="protocol_violation")
            )
        response = await super().run(episode_request_of(request, self.name))
        assert isinstance(response, EpisodeResponse)
        if response.failure is not None:
            return flat_failure_answer(response.failure)
        return dict(response.result or {})

    def _misrouted(self, row: Mapping[str, Any]) -> str | None:
        """A row's ``task_source`` may name this server's resources server, its agent or the
        server itself; its ``agent_ref`` must name its agent (docs/config-reference.md)."""
        source = row.get("task_source")
        if source is not None and source not in (self.resources.name, self.agent.name, self.name):
            return (
                f"Row task_source {source!r} does not match environment server {self.name!r} "
                f"resources server {self.resources.name!r}"
            )
        agent_ref = row.get("agent_ref")
        agent = agent_ref.get("name") if isinstance(agent_ref, Mapping) else agent_ref
        if agent is not None and agent != self.agent.name:
            return (
                f"Row agent_ref {agent!r} is not an agent of environment server {self.name!r}: "
                f"{self.agent.name!r}"
            )
        return None


def create(
    name: str,
    settings: Mapping[str, Any],
    *,
    agents: Mapping[str, Agent],
    resources: ResourcesServer | None,
) -> SingleAgentTurnLegacy:
    agent, resources_server = single_participants(name, agents, resources)
    return SingleAgentTurnLegacy(
        name, EnvironmentSettings.model_validate(dict(settings)), agent, resources_server
    )
