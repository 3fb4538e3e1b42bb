"""A relay in front of an agent that still runs whole episodes itself.

It forwards the flat row to the agent's legacy ``run`` and answers what the agent answers —
including its errors, which the collector classifies. None of the episode limits apply: the
agent owns its own sessions, deadline and cleanup.

A materialized task (a row with a ``task_id`` object and ``task_input``, or an episode request)
reaches the agent as the flat row it stands for (``flat_row_of_task``), so a taskset can run on
an agent that only knows flat rows; the answer is the agent's flat answer all the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from gym_assets.records.contracts import ResourcesServer
from gym_assets.records.episode import EpisodeRequest, EpisodeResponse
from gym_assets.rollouts.episodes.legacy import (
    LEGACY_RELAY,
    flat_row_of_request,
    flat_row_of_task,
)
from gym_assets.rollouts.episodes.resources import default_aggregate_metrics
from gym_assets.tasks.materialize import is_materialized


class LegacyAgent(Protocol):
    name: str

    async def run(self, row: Mapping[str, Any]) -> dict[str, Any]: ...


class LegacyAgentRelay:
    implementation = LEGACY_RELAY

    def __init__(self, name: str, agent: LegacyAgent) -> None:
        self.name = name
        self.agent = agent

    async def run(self, request: EpisodeRequest | Mapping[str, Any]) -> EpisodeResponse | dict:
        if isinstance(request, EpisodeRequest):
            return await self.agent.run(flat_row_of_request(request, self.agent.name))
        if is_materialized(request):
            return await self.agent.run(flat_row_of_task(request, self.agent.name))
        return await self.agent.run(request)

    async def aggregate_metrics(self, verify_responses: Sequence[Mapping[str, Any]]) -> dict:
        return default_aggregate_metrics(verify_responses)


def create(
    name: str,
    settings: Mapping[str, Any],
    *,
    agents: Mapping[str, Any],
    resources: ResourcesServer | None,
) -> LegacyAgentRelay:
    if "agent_server" not in agents or not hasattr(agents["agent_server"], "run"):
        raise ValueError(f"{name}: agent_server must name an agent with a legacy run")
    return LegacyAgentRelay(name, agents["agent_server"])
