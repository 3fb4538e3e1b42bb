"""The in-process agent contract and helpers for Responses objects.

Agents are seeded, activated and closed by an environment server. Tool access is granted per
episode: a ``ToolGrant`` names the resources server and the session whose tools the agent may
call — the in-process form of NeMo Gym's ``direct_http`` grant.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from pydantic import Field

from gym_assets.records import keys
from gym_assets.records.contracts import GatewayHandle, ResourcesServer
from gym_assets.records.episode import EpisodeId, TaskId
from gym_assets.rollouts.episodes.model_calls import (
    ModelClient,
    ModelSettings,
    create_turn,
    open_client,
)
from gym_assets.rollouts.episodes.observations import Invocation, ObservationLog
from gym_assets.rollouts.episodes.responses import input_items
from gym_assets.rollouts.episodes.sessions import SessionBook, SessionConflict, data_copy


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
        cookie: str | None = None,
    ) -> dict[str, Any]:
        """Bind a session to one episode; returns ``{agent_session_id}``, the id the caller's
        session cookie then names (``cookie``: the one it already holds, if any)."""
        ...

    async def activate(
        self, session_id: str, params: Mapping[str, Any], *, cookie: str | None = None
    ) -> dict[str, Any]:
        """Run one activation on Responses create params; returns a Responses object."""
        ...

    async def close_session(
        self, session_id: str, episode_id: EpisodeId, *, cookie: str | None = None
    ) -> dict[str, Any]:
        """The close receipt: ``{agent_session_id, agent_observations, partial_response}``."""
        ...


@dataclass
class Activation:
    """The session's latest activation: the body it ran on (a private copy) and its task."""

    body: dict[str, Any]
    task: asyncio.Task[dict[str, Any]]


@dataclass
class AgentSession:
    """One seeded agent session: its episode, tool grant, task context and observations."""

    capture_key: str
    grant: ToolGrant | None
    task_data: dict[str, Any] | None
    log: ObservationLog
    partial_response: dict[str, Any] | None = None
    activation: Activation | None = None


class ActivationSettings(ModelSettings):
    """``wall_time_s``: the agent's own deadline for one activation (None: none). Expiry is a
    graded outcome (the response so far, ``ng_termination_reason: wall_time``), not an error."""

    wall_time_s: float | None = Field(default=None, gt=0, allow_inf_nan=False, strict=True)


class SessionAgent:
    """The session state machine of the bundled agents (hardened as in NeMo Gym PR #3554).

    Identical seeds reuse the session and conflicting ones are refused; a session allows
    several sequential activations (``root``, then ``activation-N``); closing returns the
    observations and the latest (possibly partial) response, and repeated closes return the
    same receipt. Activating an unknown or closed session is refused.

    An activation runs as a task of its own that callers only wait on (shielded): a retry with
    an identical body joins the running task or replays its result (or error) without running
    again, a caller that gives up does not stop it, and a different body while it runs is
    refused. Only the close stops it: the partial response then says ``cancelled``; the
    agent's own deadline (``wall_time_s``) ends it with ``wall_time``.

    Each activation is one invocation; subclasses implement ``_activate`` (the bundled model
    loops implement ``_run``, which gets a client whose model calls are captured under the
    session's rollout and carry ``x-session-id: <invocation id>``; the connections are shared
    inside ``shared_connections()``).
    """

    source: ClassVar[str]

    def __init__(self, name: str, gateway: GatewayHandle, settings: ActivationSettings) -> None:
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
        cookie: str | None = None,
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
        self.sessions.seed(session_id, binding, lambda: AgentSession(key, grant, data, log), cookie)
        return {"agent_session_id": session_id}

    async def activate(
        self, session_id: str, params: Mapping[str, Any], *, cookie: str | None = None
    ) -> dict[str, Any]:
        session = self.sessions.state(session_id, cookie)
        body = data_copy(dict(params))
        current = session.activation
        if current is None or current.body != body:
            if current is not None and not current.task.done():
                raise SessionConflict(
                    f"session {session_id!r} is already running an activation on another body"
                )
            task = asyncio.ensure_future(self._activation(session, data_copy(body)))
            current = session.activation = Activation(body, task)
        return data_copy(await asyncio.shield(current.task))

    async def _activation(self, session: AgentSession, params: dict[str, Any]) -> dict[str, Any]:
        invocation = session.log.start(input_items(params))
        deadline = asyncio.timeout(self.model_settings.wall_time_s)
        try:
            async with deadline:
                response = await self._activate(session, invocation, params)
        except TimeoutError:
            if not deadline.expired():
                invocation.finish("failed", "TimeoutError")
                raise
            invocation.finish("incomplete", "wall_time")
            response = stopped(session.partial_response, "wall_time")
        except asyncio.CancelledError:
            invocation.finish("incomplete", "cancelled")
            session.partial_response = stopped(session.partial_response, "cancelled")
            raise
        except BaseException as exc:
            invocation.finish("failed", type(exc).__name__)
            raise
        else:
            completed = response.get("status") == "completed"
            invocation.finish("completed" if completed else "incomplete")
        session.partial_response = response
        return response

    async def _activate(
        self, session: AgentSession, invocation: Invocation, params: Mapping[str, Any]
    ) -> dict[str, Any]:
        """One activation of the bundled model loops: ``_run`` with a captured client."""
        client = open_client(
            self.gateway, session.capture_key, invocation.invocation_id, self.model_settings
        )
        async with client as openai:
            return await self._run(openai, session, invocation, params)

    async def _model_turn(
        self,
        client: ModelClient,
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

    async def close_session(
        self, session_id: str, episode_id: EpisodeId, *, cookie: str | None = None
    ) -> dict[str, Any]:
        session = self.sessions.owned_state(session_id, episode_id.capture_key, cookie)
        if session is not None and session.activation is not None:
            task = session.activation.task
            if not task.done():
                task.cancel()
                await asyncio.wait([task])  # its outcome stays with the task, for replays

        def receipt(session: AgentSession) -> dict[str, Any]:
            return {
                "agent_session_id": session_id,
                "agent_observations": self._observations(session),
                "partial_response": session.partial_response,
            }

        return self.sessions.close(session_id, episode_id.capture_key, receipt, cookie)

    def _observations(self, session: AgentSession) -> dict[str, Any]:
        return session.log.bundle()

    async def _run(
        self,
        client: ModelClient,
        session: AgentSession,
        invocation: Invocation,
        params: Mapping[str, Any],
    ) -> dict[str, Any]:
        raise NotImplementedError


def stopped(partial: Mapping[str, Any] | None, reason: str) -> dict[str, Any]:
    """The response of an activation stopped from outside (``cancelled``) or by its deadline
    (``wall_time``): what it had so far, incomplete, saying why."""
    response = dict(partial or {"object": "response", "output": [], "usage": None})
    metadata = {**(response.get("metadata") or {}), keys.TERMINATION_REASON: reason}
    return {**response, "status": "incomplete", "metadata": metadata}
