"""Read-only access to a record's designated evidence locations (docs/evidence-format.md).

Model calls, steps, invocations and tool executions are read from ``$.ng_trajectory`` only;
grades from the top-level row; sandbox outcomes and compaction helpers from
``$.ng_agent_observations.records``. Nothing is repaired from the duplicate copies in the
capture attachment or the observation bundle. Accessors are total: a missing or mistyped
container reads as ``None`` / empty, and the checks decide what that means.

Joins (who owns which call, which calls are compaction helpers) are computed once per record
and shared by the semantic checks; they are only meaningful once the checks they depend on
have passed, which the executor guarantees before calling a predicate.

This is the one lenient reader of a record for every check family (artifact, behavioral,
health, the result's token tally): each decides what an absent container means, none reads
the record another way.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any

from gym_assets.conformance.refs import is_valid_ref, resolve_unique
from gym_assets.records import keys


def as_mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    """``value`` when it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def response_metadata(call: Any) -> Mapping[str, Any]:
    """A model call's ``response_metadata`` (status, ids, finish reason)."""
    return as_mapping(as_mapping(call).get("response_metadata"))


def token_stats(call: Any) -> Mapping[str, Any]:
    """A model call's ``token_stats`` (``None`` counts are unknown, not zero)."""
    return as_mapping(as_mapping(call).get("token_stats"))


def lookup(record: Any, location: str) -> Any:
    """The value at a plain ``$.a.b`` location; ``None`` when any step is missing."""
    node = record
    for key in location.removeprefix("$").split(".")[1:]:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


class RecordView:
    """One record (``None`` when unavailable) seen through its designated locations."""

    def __init__(self, record: Any) -> None:
        self.record = record

    @property
    def available(self) -> bool:
        return self.record is not None

    @cached_property
    def row(self) -> Mapping[str, Any]:
        """The top-level row: grades, the rollout's response, the capture attachment."""
        return as_mapping(self.record)

    @cached_property
    def trajectory(self) -> Mapping[str, Any]:
        return as_mapping(self.row.get(keys.TRAJECTORY))

    @cached_property
    def calls(self) -> list[Any]:
        return as_list(self.trajectory.get("model_calls"))

    @cached_property
    def turns(self) -> list[Any]:
        return as_list(self.trajectory.get("turns"))

    @cached_property
    def tools(self) -> list[Any]:
        return as_list(self.trajectory.get("tool_calls"))

    @cached_property
    def invocations(self) -> list[Any]:
        return as_list(self.trajectory.get("invocations"))

    @cached_property
    def gaps(self) -> list[Any]:
        return as_list(self.trajectory.get("gaps"))

    def has_list(self, name: str) -> bool:
        """Whether ``$.ng_trajectory.<name>`` is an array (an empty one included)."""
        return isinstance(self.trajectory.get(name), list)

    @cached_property
    def observation_records(self) -> list[Any]:
        return as_list(as_mapping(self.row.get(keys.AGENT_OBSERVATIONS)).get("records"))

    def observations_of(self, kind: str) -> list[tuple[int, Mapping[str, Any]]]:
        """(index, record) of producer observations of one kind."""
        return [
            (i, rec)
            for i, rec in enumerate(self.observation_records)
            if isinstance(rec, Mapping) and rec.get("kind") == kind
        ]

    @cached_property
    def has_sandbox_records(self) -> bool:
        return bool(self.observations_of("sandbox"))

    def resolve(self, ref: Any) -> int | None:
        return resolve_unique(ref, self.calls)

    @cached_property
    def call_owners(self) -> list[list[str]]:
        """Per call index, the invocation id of every invocation ref resolving to it."""
        owners: list[list[str]] = [[] for _ in self.calls]
        for inv in self.invocations:
            for ref in as_list(as_mapping(inv).get("model_calls")):
                index = self.resolve(ref)
                if index is not None:
                    owners[index].append(inv["invocation_id"])
        return owners

    @cached_property
    def compaction_refs(self) -> list[tuple[str, Any, int | None]]:
        """(location, ref, resolved index) for every compaction helper ref; invalid → None."""
        found: list[tuple[str, Any, int | None]] = []
        for i, rec in self.observations_of("context_compaction"):
            where = f"$.ng_agent_observations.records[{i}].model_calls"
            refs = rec.get("model_calls")
            if not isinstance(refs, list):
                found.append((where, None, None))
                continue
            for j, ref in enumerate(refs):
                index = self.resolve(ref) if is_valid_ref(ref) else None
                found.append((f"{where}[{j}]", ref, index))
        return found

    @cached_property
    def helper_calls(self) -> frozenset[int]:
        return frozenset(index for _, _, index in self.compaction_refs if index is not None)

    @cached_property
    def turn_refs(self) -> list[tuple[str, int, int | None]]:
        """(location, turn index, resolved call index) for every turn ref."""
        return [
            (f"$.ng_trajectory.turns[{t}].model_calls[{j}]", t, self.resolve(ref))
            for t, turn in enumerate(self.turns)
            for j, ref in enumerate(as_list(as_mapping(turn).get("model_calls")))
        ]
