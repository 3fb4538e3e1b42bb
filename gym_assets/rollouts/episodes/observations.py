"""``ng_agent_observations`` bundles, built through the evidence models.

An agent records, per activation (an "invocation"), the model calls it made (as references the
collector joins against the gateway's capture), the conversation as Responses input items, and
one ``tool_call`` record per executed tool. Records are validated by
``gym_assets.records.evidence`` so a bundle is shaped the way the checks expect.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gym_assets.records.evidence import (
    AgentInvocation,
    AgentObservations,
    InvocationStatus,
    ModelCallRef,
    ModelRef,
    ToolCallObservation,
    ToolStatus,
)


@dataclass
class Invocation:
    """One activation in progress; its conversation list grows as the agent works."""

    invocation_id: str
    model_server_name: str
    conversation: list[dict[str, Any]]
    started: float = field(default_factory=time.monotonic)
    model_calls: list[ModelCallRef] = field(default_factory=list)
    status: InvocationStatus = "unknown"
    error_type: str | None = None
    duration_ms: float | None = None

    def model_call(self, response_id: str) -> None:
        ref = ModelCallRef(model_ref=ModelRef(name=self.model_server_name), response_id=response_id)
        self.model_calls.append(ref)

    def finish(self, status: InvocationStatus, error_type: str | None = None) -> None:
        self.status = status
        self.error_type = error_type
        self.duration_ms = (time.monotonic() - self.started) * 1000.0

    def record(self) -> AgentInvocation:
        return AgentInvocation(
            invocation_id=self.invocation_id,
            status=self.status,
            duration_ms=self.duration_ms,
            error_type=self.error_type,
            model_calls=list(self.model_calls),
            conversation=[dict(item) for item in self.conversation],
        )


class ObservationLog:
    """Everything one agent session observed, across its activations."""

    def __init__(self, source: str, model_server_name: str) -> None:
        self.source = source
        self.model_server_name = model_server_name
        self.invocations: list[Invocation] = []
        self.tool_calls: list[ToolCallObservation] = []

    def start(self, conversation: list[dict[str, Any]]) -> Invocation:
        """A new invocation: ``root`` first, then ``activation-N``."""
        count = len(self.invocations)
        invocation_id = "root" if count == 0 else f"activation-{count}"
        invocation = Invocation(invocation_id, self.model_server_name, conversation)
        self.invocations.append(invocation)
        return invocation

    def tool_call(
        self,
        invocation: Invocation,
        call_id: str,
        name: str,
        started_at: float,
        status: ToolStatus,
        error_type: str | None = None,
    ) -> None:
        completed_at = time.time()
        self.tool_calls.append(
            ToolCallObservation(
                invocation_id=invocation.invocation_id,
                tool_call_id=call_id,
                tool_name=name,
                started_at=started_at,
                completed_at=completed_at,
                duration_ms=max(0.0, (completed_at - started_at) * 1000.0),
                timing_source="executor",
                status=status,
                error_type=error_type,
            )
        )

    def bundle(self) -> dict[str, Any]:
        records = [invocation.record() for invocation in self.invocations]
        observations = AgentObservations(source=self.source, records=[*records, *self.tool_calls])
        return observations.model_dump(mode="json")


def merge_observations(bundles: Mapping[str, Mapping[str, Any]]) -> dict[str, Any] | None:
    """One bundle for an episode: as is for one agent; for several, invocation ids are
    prefixed with the agent's name (``support_bot/root``) so they stay unique."""
    if not bundles:
        return None
    if len(bundles) == 1:
        return dict(next(iter(bundles.values())))
    records: list[dict[str, Any]] = []
    gaps: list[dict[str, Any]] = []
    for agent, bundle in bundles.items():
        for record in bundle.get("records", []):
            records.append(_prefixed(record, agent, ("invocation_id", "parent_invocation_id")))
        for gap in bundle.get("gaps", []):
            gaps.append(_prefixed(gap, agent, ("invocation_id",)))
    merged = {"source": "+".join(bundles), "records": records, "gaps": gaps}
    return AgentObservations.model_validate(merged).model_dump(mode="json")


def _prefixed(item: Mapping[str, Any], agent: str, keys: tuple[str, ...]) -> dict[str, Any]:
    out = dict(item)
    for key in keys:
        if out.get(key):
            out[key] = f"{agent}/{out[key]}"
    return out
