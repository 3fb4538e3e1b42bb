"""A simulated customer: plays the task's user through the model.

Its instructions come from the task it was seeded with (``scenario``, ``user_profile``,
``opening_message``); each activation is one model call on the customer's side of the dialogue
(its own messages as ``assistant``, the support agent's as ``user``). It is offered no tools.
When the customer is satisfied it answers ``STOP_MARKER``, which ends the conversation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gym_assets.records import keys
from gym_assets.records.contracts import GatewayHandle, ResourcesServer
from gym_assets.rollouts.episodes.agents import ActivationSettings, AgentSession, SessionAgent
from gym_assets.rollouts.episodes.model_calls import ModelClient
from gym_assets.rollouts.episodes.observations import Invocation

STOP_MARKER = "###STOP###"


def persona(task: Mapping[str, Any]) -> str:
    profile = task.get("user_profile") or {}
    details = ", ".join(f"{key}: {value}" for key, value in profile.items())
    return (
        "You are a customer talking to a support agent. Stay in character and write only the "
        "customer's next message, briefly.\n"
        f"Your situation: {task.get('scenario', '')}\n"
        f"About you: {details}\n"
        f"You opened the conversation with: {task.get('opening_message', '')}\n"
        f"When your issue is resolved, or cannot be, reply with exactly {STOP_MARKER}"
    )


class UserSimulator(SessionAgent):
    source = "user_simulator"

    async def _run(
        self,
        client: ModelClient,
        session: AgentSession,
        invocation: Invocation,
        params: Mapping[str, Any],
    ) -> dict[str, Any]:
        instructions = persona(session.task_data or {})
        turn = await self._model_turn(client, invocation, {**params, "instructions": instructions})
        metadata = {**(turn.get("metadata") or {}), keys.TERMINATION_REASON: "completed"}
        return {**turn, "metadata": metadata}


def create(
    name: str,
    settings: Mapping[str, Any],
    *,
    gateway: GatewayHandle,
    resources: ResourcesServer | None,
) -> UserSimulator:
    return UserSimulator(name, gateway, ActivationSettings.model_validate(dict(settings)))
