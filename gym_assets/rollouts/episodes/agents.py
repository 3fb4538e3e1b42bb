"""The in-process agent contract and helpers for Responses objects.

Agents are seeded, activated and closed by an environment server (the reference §2.4). Tool
access is granted per episode: a ``ToolGrant`` names the resources server and the session whose
tools the agent may call — the in-process form of the reference's ``direct_http`` grant.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from openai import AsyncOpenAI

from gym_assets.rollouts.contracts import GatewayHandle, ResourcesServer
from gym_assets.rollouts.episodes.model_calls import ModelSettings, create_turn, open_client
from gym_assets.rollouts.episodes.observations import Invocation, ObservationLog
from gym_assets.rollouts.episodes.responses import input_items
from gym_assets.rollouts.episodes.sessions import SessionBook
from gym_assets.rollouts.protocol import EpisodeId, TaskId


@dataclass(frozen=True)
class ToolGrant:
    resources: ResourcesServer
    session_id: str

    def identity(self) -> dict[str, str]:
        """What a seed binding compares (the same grant seeds the same session)."""
        return {"resources": self.resources.name, "session_id": self.session_id}


class Agent(Protocol):
    name: str

    async def seed_session(
        self,
        session_id: str,
        episode_id: EpisodeId,
        task_id: TaskId,
        *,
        grant: ToolGrant | None = None,
        task_data: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Bind a session to one episode; returns ``{agent_session_id}``."""
        ...

    async def activate(self, session_id: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Run one activation on Responses create params; returns a Responses object."""
        ...

    async def close_session(self, session_id: str, episode_id: EpisodeId) -> dict[str, Any]:
        """The close receipt: ``{agent_session_id, agent_observations, partial_response}``."""
        ...


@dataclass
class AgentSession:
    """One seeded agent session: its episode, tool grant, task context and observations."""

    capture_key: str
    grant: ToolGrant | None
    task_data: dict[str, Any] | None
    log: ObservationLog
    partial_response: dict[str, Any] | None = None


class SessionAgent:
    """The session state machine of the bundled agents (the reference §2.4, simple-agent parts).

    Identical seeds reuse the session and conflicting ones are refused; a session allows
    several sequential activations (``root``, then ``activation-N``); closing returns the
    observations and the latest (possibly partial) response, and repeated closes return the
    same receipt. Activating an unknown or closed session is refused.

    Each activation is one invocation with its own client to the gateway (its model calls are
    captured under the session's rollout and carry ``x-session-id: <invocation id>``; the
    connections are shared inside ``shared_connections()``);
    subclasses implement ``_run``, making model calls through ``_model_turn``.
    """

    source: ClassVar[str]

    def __init__(self, name: str, gateway: GatewayHandle, settings: ModelSettings) -> None:
        self.name = name
        self.gateway = gateway
        self.model_settings = settings
        self.sessions: SessionBook[AgentSession] = SessionBook()

    async def seed_session(
        self,
        session_id: str,
        episode_id: EpisodeId,
        task_id: TaskId,
        *,
        grant: ToolGrant | None = None,
        task_data: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        key = episode_id.capture_key
        binding = {
            "episode_id": key,
            "task_id": task_id.model_dump(),
            "grant": None if grant is None else grant.identity(),
            "task_data": None if task_data is None else dict(task_data),
        }
        log = ObservationLog(self.source, self.gateway.model_server_name)
        data = None if task_data is None else dict(task_data)
        self.sessions.seed(session_id, binding, lambda: AgentSession(key, grant, data, log))
        return {"agent_session_id": session_id}

    async def activate(self, session_id: str, params: Mapping[str, Any]) -> dict[str, Any]:
        session = self.sessions.state(session_id)
        invocation = session.log.start(input_items(params))
        client = open_client(
            self.gateway, session.capture_key, invocation.invocation_id, self.model_settings
        )
        try:
            async with client as openai:
                response = await self._run(openai, session, invocation, params)
        except asyncio.CancelledError:
            invocation.finish("incomplete", "CancelledError")
            raise
        except BaseException as exc:
            invocation.finish("failed", type(exc).__name__)
            raise
        invocation.finish("completed" if response.get("status") == "completed" else "incomplete")
        session.partial_response = response
        return response

    async def _model_turn(
        self,
        client: AsyncOpenAI,
        invocation: Invocation,
        params: Mapping[str, Any],
        tools: Sequence[Mapping[str, Any]] = (),
    ) -> dict[str, Any]:
        """One model call on the invocation's conversation; its output joins the conversation."""
        turn = await create_turn(
            client,
            self.model_settings.api,
            self.gateway.model_name,
            params,
            invocation.conversation,
            tools,
        )
        invocation.model_call(str(turn["id"]))
        invocation.conversation.extend(turn.get("output") or [])
        return turn

    async def close_session(self, session_id: str, episode_id: EpisodeId) -> dict[str, Any]:
        def receipt(session: AgentSession) -> dict[str, Any]:
            return {
                "agent_session_id": session_id,
                "agent_observations": session.log.bundle(),
                "partial_response": session.partial_response,
            }

        return self.sessions.close(session_id, episode_id.capture_key, receipt)

    async def _run(
        self,
        client: AsyncOpenAI,
        session: AgentSession,
        invocation: Invocation,
        params: Mapping[str, Any],
    ) -> dict[str, Any]:
        raise NotImplementedError
