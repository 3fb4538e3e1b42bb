"""The built-in simple agent: a model ↔ tool loop through the model gateway.

Each activation sends the conversation to the model (Responses API, or Chat Completions with
``api: chat``), executes the function calls it asks for through the granted resources session,
appends their outputs and asks again, until the model answers without calling a tool, the
response comes back incomplete, or ``max_steps`` model turns have run. Tool problems never
raise: they become tool outputs the model sees. Model errors do raise — the environment server
turns them into an ``agent``-stage failure, retryable by HTTP status.

``response.metadata.ng_termination_reason`` says why the loop stopped: ``completed``,
``max_steps``, ``incomplete`` (the model's own response was incomplete), ``incomplete_reasoning``
(output without a message or call) or ``empty_output``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from gym_assets.records import keys
from gym_assets.records.contracts import GatewayHandle, ResourcesServer
from gym_assets.records.evidence import ToolStatus
from gym_assets.rollouts.episodes.agents import (
    ActivationSettings,
    AgentSession,
    SessionAgent,
    ToolGrant,
)
from gym_assets.rollouts.episodes.legacy import episode_id_of, episode_request_of
from gym_assets.rollouts.episodes.model_calls import ModelClient, add_usage
from gym_assets.rollouts.episodes.observations import Invocation
from gym_assets.rollouts.episodes.resources import ToolFailed
from gym_assets.tasks.task_inputs import SingleAgentTurnTaskInput

LEGACY_TASKSET = "legacy"
TASK_DATA = "task_data"


class Settings(ActivationSettings):
    max_steps: int | None = Field(default=None, ge=1, strict=True)


class ToolAccessError(RuntimeError):
    """The model called a tool in a session that was granted no tools (a wiring error)."""


class SimpleAgent(SessionAgent):
    source = "simple_agent"

    def __init__(
        self,
        name: str,
        settings: Settings,
        gateway: GatewayHandle,
        resources: ResourcesServer | None,
    ) -> None:
        super().__init__(name, gateway, settings)
        self.settings = settings
        self.resources = resources  # used by the legacy ``run`` only

    async def _run(
        self,
        client: ModelClient,
        session: AgentSession,
        invocation: Invocation,
        params: Mapping[str, Any],
    ) -> dict[str, Any]:
        tools = _merged_tools(params, session)
        outputs: list[dict[str, Any]] = []
        usage: dict[str, Any] | None = None
        steps = 0
        while True:
            steps += 1
            turn = await self._model_turn(client, invocation, params, tools)
            items = list(turn.get("output") or [])
            outputs.extend(items)
            usage = turn.get("usage") if steps == 1 else add_usage(usage, turn.get("usage"))
            session.partial_response = _response(turn, outputs, usage, "interrupted")
            calls = [item for item in items if item.get("type") == "function_call"]
            if turn.get("incomplete_details"):
                reason = "incomplete"
            elif not calls:
                has_message = any(item.get("type") == "message" for item in items)
                reason = (
                    "completed"
                    if has_message
                    else ("incomplete_reasoning" if items else "empty_output")
                )
            else:
                for call in calls:
                    output = await self._execute(session, invocation, call)
                    item = {
                        "type": "function_call_output",
                        "call_id": call["call_id"],
                        "output": output,
                    }
                    invocation.conversation.append(item)
                    outputs.append(item)
                session.partial_response = _response(turn, outputs, usage, "interrupted")
                if self.settings.max_steps is None or steps < self.settings.max_steps:
                    continue
                reason = "max_steps"
            return _response(turn, outputs, usage, reason)

    async def _execute(
        self, session: AgentSession, invocation: Invocation, call: Mapping[str, Any]
    ) -> str:
        """Run one function call; whatever goes wrong becomes the output the model sees."""
        grant = session.grant
        if grant is None:
            raise ToolAccessError(
                f"the model called {call.get('name')!r} but this session was granted no tools"
            )
        started = time.time()
        status: ToolStatus = "completed"
        error_type = None
        try:
            arguments = json.loads(call.get("arguments") or "{}")
            if not isinstance(arguments, dict):
                raise ValueError("arguments must be a JSON object")
        except ValueError as exc:
            output = json.dumps({"error": f"Invalid tool call arguments: {exc}"})
            status, error_type = "failed", type(exc).__name__
        else:
            try:
                output = await grant.resources.call_tool(grant.session_id, call["name"], arguments)
            except ToolFailed as exc:
                output, status, error_type = exc.output, "failed", exc.error_type
            except Exception as exc:
                output = json.dumps({"error": f"{type(exc).__name__}: {exc}"})
                status, error_type = "failed", type(exc).__name__
        session.log.tool_call(
            invocation, str(call["call_id"]), str(call["name"]), started, status, error_type
        )
        return output

    async def run(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """Legacy self-orchestrated episode: seed, activate, verify, close.

        The row's task fields are read as the single-agent-turn task input reads them, flat or
        nested under ``task_data`` (a task rebuilt by the relay keeps its nesting), and the
        verifier sees them at top level as it does behind ``single_agent_turn``. Returns the
        verify response plus ``ng_agent_observations``; errors propagate.
        """
        if self.resources is None:
            raise ToolAccessError(f"agent {self.name!r} has no resources_server for a legacy run")
        resources = self.resources
        request = episode_request_of(row, LEGACY_TASKSET)
        episode = episode_id_of(row)
        task = SingleAgentTurnTaskInput.model_validate(request.task.task_input)
        params = task.responses_create_params.model_dump(exclude_unset=True)
        task_data = task.task_data
        resources_session = f"resources-session-{uuid.uuid4().hex}"
        agent_session = f"agent-session-{uuid.uuid4().hex}"
        try:
            await resources.seed_session(resources_session, episode.capture_key, task_data)
            grant = ToolGrant(resources, resources_session)
            await self.seed_session(agent_session, episode, request.task.task_id, grant=grant)
            try:
                response = await self.activate(agent_session, params, cookie=agent_session)
            finally:
                receipt = await self.close_session(agent_session, episode, cookie=agent_session)
            body = {k: v for k, v in row.items() if k != TASK_DATA} | task_data
            verified = await resources.verify(
                resources_session, {**body, "response": response}, cookie=resources_session
            )
        finally:
            await resources.close_session(resources_session, episode.capture_key)
        return {**verified, keys.AGENT_OBSERVATIONS: receipt.get("agent_observations")}


def _merged_tools(params: Mapping[str, Any], session: AgentSession) -> list[Mapping[str, Any]]:
    """The task's own tools, then the granted resources tools it does not already declare."""
    tools = list(params.get("tools") or [])
    if session.grant is not None:
        declared = {tool.get("name") for tool in tools}
        granted = session.grant.resources.tools(session.grant.session_id)
        tools += [tool for tool in granted if tool.get("name") not in declared]
    return tools


def _response(
    last: Mapping[str, Any], outputs: list[dict[str, Any]], usage: Any, reason: str
) -> dict[str, Any]:
    """The activation's response: the last model response carrying every output item."""
    metadata = {**(last.get("metadata") or {}), keys.TERMINATION_REASON: reason}
    return {
        **last,
        "output": list(outputs),
        "usage": usage,
        "status": "completed" if reason == "completed" else "incomplete",
        "metadata": metadata,
    }


def create(
    name: str,
    settings: Mapping[str, Any],
    *,
    gateway: GatewayHandle,
    resources: ResourcesServer | None,
) -> SimpleAgent:
    return SimpleAgent(name, Settings.model_validate(dict(settings)), gateway, resources)
