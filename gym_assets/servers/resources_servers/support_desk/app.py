"""Support-desk resources: one customer order per session, the desk's tools, and grading.

The order's state follows the scenario (an order to cancel or re-address has not shipped, one
to track is in transit, the rest were delivered) and each action checks it, so an action that
makes no sense for the order is refused with an error the model sees. Verify grades the
resolution: the distinct resolving actions taken must be exactly ``expected_resolution``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gym_assets.records.contracts import Step
from gym_assets.rollouts.episodes.resources import SessionResources, graded
from gym_assets.servers.resources_servers.support_desk.task_data import TaskData

CLOSING_TEXT = "That is done for you now. Is there anything else I can help with?"
FOLLOW_UP_TEXT = "You're welcome. Have a good day!"

# tool → (resolution it records, order statuses it is allowed for; None = any)
ACTIONS: dict[str, tuple[str, frozenset[str] | None]] = {
    "issue_refund": ("refund", frozenset({"delivered", "shipped"})),
    "send_replacement": ("replacement", frozenset({"delivered"})),
    "update_address": ("address_updated", frozenset({"processing"})),
    "cancel_order": ("order_cancelled", frozenset({"processing"})),
    "share_tracking": ("tracking_shared", frozenset({"shipped"})),
    "no_action": ("no_action", None),
}
TOOL_OF_RESOLUTION = {resolution: tool for tool, (resolution, _) in ACTIONS.items()}
_STATUS_OF_RESOLUTION = {
    "address_updated": "processing",
    "order_cancelled": "processing",
    "tracking_shared": "shipped",
}


def _tool(name: str, description: str, **properties: str) -> dict[str, Any]:
    return {
        "type": "function",
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": {
                key: {"type": "string", "description": d} for key, d in properties.items()
            },
            "required": list(properties),
            "additionalProperties": False,
        },
        "strict": True,
    }


_ORDER = "the order id, e.g. A1000"
TOOLS = [
    _tool("lookup_order", "Show an order's status, items and tracking.", order_id=_ORDER),
    _tool("issue_refund", "Refund a delivered or shipped order.", order_id=_ORDER),
    _tool("send_replacement", "Ship a replacement for a delivered order.", order_id=_ORDER),
    _tool(
        "update_address",
        "Change the shipping address of an order that has not shipped.",
        order_id=_ORDER,
        address="the new shipping address",
    ),
    _tool("cancel_order", "Cancel an order that has not shipped.", order_id=_ORDER),
    _tool("share_tracking", "Send the tracking number of a shipped order.", order_id=_ORDER),
    _tool("no_action", "Record that the request needs no action.", reason="why no action"),
]


@dataclass
class Desk:
    """One session's order and the actions taken on it."""

    order: dict[str, Any]
    actions: list[str] = field(default_factory=list)

    def handle(self, name: str, arguments: Mapping[str, Any]) -> str:
        if name == "lookup_order":
            return json.dumps(self._order(arguments))
        resolution, allowed = ACTIONS[name]
        if name != "no_action":
            order = self._order(arguments)
            if allowed is not None and order["status"] not in allowed:
                return f"Error: cannot {name.replace('_', ' ')} an order that is {order['status']}"
            if name == "update_address":
                order["address"] = str(arguments.get("address", ""))
            if name == "cancel_order":
                order["status"] = "cancelled"
        self.actions.append(resolution)
        if name == "share_tracking":
            return f"Tracking number sent: {self.order['tracking']}"
        return f"OK: {resolution.replace('_', ' ')} recorded"

    def _order(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        order_id = arguments.get("order_id")
        if order_id != self.order["order_id"]:
            raise LookupError(f"no order {order_id!r}")
        return self.order


class SupportDesk(SessionResources[Desk]):
    def new_state(self, task_data: Mapping[str, Any]) -> Desk:
        task = TaskData.model_validate(dict(task_data))
        profile = task_data.get("user_profile") or {}
        order_id = str(profile.get("order_id", "A0000"))
        status = _STATUS_OF_RESOLUTION.get(task.expected_resolution, "delivered")
        order = {
            "order_id": order_id,
            "customer": profile.get("name"),
            "status": status,
            "items": ["item-1"],
            "tracking": f"TRK-{order_id}" if status == "shipped" else None,
        }
        return Desk(order)

    def tools(self, session_id: str) -> Sequence[Mapping[str, Any]]:
        return TOOLS

    async def call_tool(self, session_id: str, name: str, arguments: Mapping) -> str:
        desk = self._desk(session_id)
        if name != "lookup_order" and name not in ACTIONS:
            return await super().call_tool(session_id, name, arguments)
        try:
            return desk.handle(name, arguments)
        except LookupError as exc:
            return f"Error: {exc}"

    async def verify(
        self, session_id: str, body: Mapping[str, Any], *, cookie: str | None = None
    ) -> dict:
        desk = self._desk(session_id, cookie)
        expected = TaskData.model_validate(dict(body)).expected_resolution
        taken = list(dict.fromkeys(desk.actions))
        resolution = taken[0] if len(taken) == 1 else None
        return graded(
            body,
            1.0 if taken == [expected] else 0.0,
            resolution=resolution,
            actions_taken=list(desk.actions),
        )

    def reference_script(self, task_data: Mapping[str, Any]) -> list[Step]:
        """The support bot's turns: the right action, a closing reply, then a short reply to
        each later customer message up to ``max_turns`` (the simulated customer is offered no
        tools, so the gateway answers its turns itself)."""
        task = TaskData.model_validate(dict(task_data))
        order_id = str((task_data.get("user_profile") or {}).get("order_id", "A0000"))
        tool = TOOL_OF_RESOLUTION[task.expected_resolution]
        args = {"order_id": order_id}
        if tool == "update_address":
            args["address"] = "the new address the customer gave"
        if tool == "no_action":
            args = {"reason": "nothing to change for this order"}
        follow_ups: list[Step] = [{"text": FOLLOW_UP_TEXT}] * max(0, task.max_turns - 1)
        return [{"call": tool, "args": args}, {"text": CLOSING_TEXT}, *follow_ups]

    def _desk(self, session_id: str, cookie: str | None = None) -> Desk:
        desk = self.sessions.state(session_id, cookie)
        assert desk is not None  # new_state always builds one
        return desk


def create(name: str, settings: Mapping[str, Any]) -> SupportDesk:
    return SupportDesk(name)
