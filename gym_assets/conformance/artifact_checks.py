"""The 56 P0 artifact checks as data (docs/conformance-checks.md), in execution order.

Each :class:`ArtifactCheck` is a definition: id, kind, TE labels, location, reason, declared
applicability (:class:`Applies`, a rule over the scope), prerequisites, and either a JSON Schema
for the value at its location or a predicate over a :class:`RecordView`. ``bind`` turns a
definition into an executable :class:`~gym_assets.conformance.engine.Check` for one record.
Families of near-identical checks (presence, nonblank fields, token counts, top-level grades,
sandbox rows, gap codes) are generated from small tables instead of written out one by one.

Order: model calls, structure, ownership/step join, evaluation, gaps. Prerequisites always
come earlier, so one pass of the executor suffices.
"""

from __future__ import annotations

import base64
import binascii
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from typing import Any

from gym_assets.conformance.engine import Check, Kind, Tier, Verdict
from gym_assets.conformance.record_view import RecordView, as_list, lookup, response_metadata
from gym_assets.conformance.refs import MODEL_REF_SCHEMA, NONBLANK, NULLABLE_NONBLANK, REF_SCHEMA
from gym_assets.conformance.scope import EvidenceScope
from gym_assets.records.evidence import TOKEN_FIELDS, GapEffect, gap_effect

CALLS = "$.ng_trajectory.model_calls"
TURNS = "$.ng_trajectory.turns"
TOOLS = "$.ng_trajectory.tool_calls"
INVOCATIONS = "$.ng_trajectory.invocations"
TRAJECTORY = "$.ng_trajectory"
GAPS = "$.ng_trajectory.gaps"
OBSERVATIONS = "$.ng_agent_observations.records"
ROOT = "$"


class Applies(StrEnum):
    """Declared applicability rules (scope-driven; the two data-driven ones are reference rules)."""

    ALWAYS = "always"
    STEPS = "steps"
    TOOLS = "tools"
    VERIFIER = "verifier"
    VERIFIER_FAILURE = "verifier_failure"  # verifier and (masked or evaluation incomplete)
    REQUIRE_SANDBOX = "require_sandbox"
    SANDBOX = "sandbox"  # require_sandbox, or any sandbox record retained


def _failure_declared(view: RecordView) -> bool:
    return view.row.get("mask_sample") is True or view.row.get("evaluation_completed") is False


APPLIES: Mapping[Applies, Callable[[EvidenceScope, RecordView], bool]] = {
    Applies.ALWAYS: lambda scope, view: True,
    Applies.STEPS: lambda scope, view: scope.steps,
    Applies.TOOLS: lambda scope, view: scope.tools,
    Applies.VERIFIER: lambda scope, view: scope.verifier,
    Applies.VERIFIER_FAILURE: lambda scope, view: scope.verifier and _failure_declared(view),
    Applies.REQUIRE_SANDBOX: lambda scope, view: scope.require_sandbox,
    Applies.SANDBOX: lambda scope, view: scope.require_sandbox or view.has_sandbox_records,
}

Outcome = bool | Verdict


@dataclass(frozen=True)
class ArtifactCheck:
    """One catalogue entry. ``depends_when`` limits the prerequisites to a scope rule."""

    id: str
    kind: Kind
    evidence: tuple[str, ...]
    location: str
    reason: str
    applies: Applies = Applies.ALWAYS
    depends_on: tuple[str, ...] = ()
    depends_when: Applies | None = None
    schema: Mapping[str, Any] | None = None
    predicate: Callable[[RecordView], Outcome] | None = None
    tier: Tier = Tier.P0

    def bind(self, view: RecordView, scope: EvidenceScope) -> Check:
        """The executable check for one record under one scope."""
        conditional = self.depends_when is not None and not APPLIES[self.depends_when](scope, view)
        return Check(
            id=self.id,
            tier=self.tier,
            kind=self.kind,
            evidence=self.evidence,
            location=self.location,
            reason=self.reason,
            depends_on=() if conditional else self.depends_on,
            applies=APPLIES[self.applies](scope, view),
            available=view.available,
            schema=self.schema,
            value=lookup(view.record, self.location) if self.schema is not None else None,
            predicate=partial(self.predicate, view) if self.predicate is not None else None,
        )


def te(*numbers: int) -> tuple[str, ...]:
    return tuple(f"TE-{n}" for n in numbers)


def _schema(id: str, te_: tuple[str, ...], location: str, reason: str, schema: Mapping[str, Any],
            **kw: Any) -> ArtifactCheck:  # fmt: skip
    return ArtifactCheck(id, Kind.SCHEMA, te_, location, reason, schema=schema, **kw)


def _semantic(id: str, te_: tuple[str, ...], location: str, reason: str,
              predicate: Callable[[RecordView], Outcome], **kw: Any) -> ArtifactCheck:  # fmt: skip
    return ArtifactCheck(id, Kind.SEMANTIC, te_, location, reason, predicate=predicate, **kw)


def _items(item: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": item}


def _required(name: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """An object that has key ``name`` whose value matches ``schema``."""
    return {"type": "object", "required": [name], "properties": {name: schema}}


def _metadata(schema: Mapping[str, Any]) -> dict[str, Any]:
    return _required("response_metadata", schema)


NON_EMPTY_OBJECT_ARRAY: dict[str, Any] = {
    "type": "array",
    "minItems": 1,
    "items": {"type": "object"},
}
NON_NEGATIVE_NUMBER: dict[str, Any] = {"type": "number", "minimum": 0}
HTTP_STATUS: dict[str, Any] = {"type": "integer", "minimum": 100, "maximum": 599}
HTTP_SUCCESS: dict[str, Any] = {"type": "integer", "minimum": 200, "maximum": 299}
REF_LIST: dict[str, Any] = {"type": "array", "items": REF_SCHEMA}
HAS_ERROR_CATEGORY: dict[str, Any] = _required("error_category", NONBLANK)

# --------------------------------------------------------------------------- model-call schemas

CALL_OUTCOME_ITEM = _metadata(
    {
        "type": "object",
        "properties": {
            "status_code": {"type": ["integer", "null"], "minimum": 100, "maximum": 599},
            "error_category": NULLABLE_NONBLANK,
            "response_status": NULLABLE_NONBLANK,
            "finish_reason": NULLABLE_NONBLANK,
        },
        "anyOf": [
            HAS_ERROR_CATEGORY,
            {
                "required": ["status_code", "dialect"],
                "properties": {"status_code": HTTP_SUCCESS},
                "anyOf": [
                    {
                        "required": ["finish_reason"],
                        "properties": {
                            "dialect": {"enum": ["chat", "messages"]},
                            "finish_reason": NONBLANK,
                        },
                    },
                    {
                        "required": ["response_status"],
                        "properties": {
                            "dialect": {"const": "responses"},
                            "response_status": {"enum": ["completed", "incomplete"]},
                        },
                    },
                ],
            },
        ],
    }
)

CALL_RESPONSE_ID_ITEM = _metadata(
    {
        "type": "object",
        "if": HAS_ERROR_CATEGORY,
        "then": {"properties": {"response_id": NULLABLE_NONBLANK}},
        "else": _required("response_id", NONBLANK),
    }
)

_OBJECT_ARRAY: dict[str, Any] = {"type": "array", "items": {"type": "object"}}

CALL_REQUEST_ITEM: dict[str, Any] = {
    "anyOf": [
        {
            "required": ["response_metadata", "request"],
            "properties": {
                "response_metadata": _required("dialect", {"const": "responses"}),
                "request": _required("input", {"anyOf": [{"type": "string"}, _OBJECT_ARRAY]}),
            },
        },
        {
            "required": ["response_metadata", "request"],
            "properties": {
                "response_metadata": _required("dialect", {"enum": ["chat", "messages"]}),
                "request": _required("messages", _OBJECT_ARRAY),
            },
        },
    ]
}

_ASSISTANT_CHOICE = _required("message", _required("role", {"const": "assistant"}))
_PROTOCOL_BODY = {
    "responses": _required("output", _OBJECT_ARRAY),
    "chat": _required("choices", {"type": "array", "items": _ASSISTANT_CHOICE}),
    "messages": _required("content", _OBJECT_ARRAY),
}


def _successful_body_shape(dialect: str) -> dict[str, Any]:
    """If the call is a 2xx success in ``dialect`` without an error category, shape its body."""
    successful = {
        "required": ["status_code", "dialect"],
        "properties": {"status_code": HTTP_SUCCESS, "dialect": {"const": dialect}},
        "not": HAS_ERROR_CATEGORY,
    }
    return {
        "if": {"properties": {"response_metadata": successful}},
        "then": {"properties": {"response": _PROTOCOL_BODY[dialect]}},
    }


CALL_RESPONSE_ITEM: dict[str, Any] = {
    "anyOf": [
        {
            "required": ["response", "response_metadata"],
            "properties": {
                "response": {"type": ["object", "string"]},
                "response_metadata": _required("status_code", HTTP_STATUS),
            },
            "allOf": [_successful_body_shape(d) for d in _PROTOCOL_BODY],
        },
        {
            "required": ["response", "response_metadata"],
            "properties": {
                "response": {"type": "null"},
                "response_metadata": {
                    **HAS_ERROR_CATEGORY,
                    "required": ["status_code", "error_category"],
                    "properties": {"status_code": {"type": "null"}, "error_category": NONBLANK},
                },
            },
        },
    ]
}


def _token_item(name: str) -> dict[str, Any]:
    count = {"type": ["integer", "null"], "minimum": 0}
    return _required("token_stats", {"type": "object", "properties": {name: count}})


# --------------------------------------------------------------------------- semantic predicates


def _failed_at(locations: list[str]) -> Verdict:
    return Verdict(not locations, tuple(locations))


def _data_url_resolves(url: Any) -> bool:
    if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url:
        return False
    try:
        return bool(base64.b64decode(url.split(";base64,", 1)[1], validate=True))
    except (binascii.Error, ValueError):
        return False


def _has_unresolvable_content(node: Any) -> bool:
    """Opaque file references, encrypted content, or images that are not inline base64 data."""
    if isinstance(node, list):
        return any(_has_unresolvable_content(item) for item in node)
    if not isinstance(node, dict):
        return False
    if any(node.get(key) for key in ("file_id", "file_url", "encrypted_content")):
        return True
    image = node.get("image_url")
    if image is not None:
        url = image.get("url") if isinstance(image, dict) else image
        if not _data_url_resolves(url):
            return True
    return any(_has_unresolvable_content(value) for value in node.values())


def content_media(view: RecordView) -> Verdict:
    return _failed_at(
        [
            f"{CALLS}[{i}].{part}"
            for i, call in enumerate(view.calls)
            for part in ("request", "response")
            if _has_unresolvable_content(call.get(part))
        ]
    )


def content_previous_response(view: RecordView) -> Verdict:
    bad = []
    for i, call in enumerate(view.calls):
        request = call.get("request")
        previous = request.get("previous_response_id") if isinstance(request, dict) else None
        if not previous:
            continue
        server = response_metadata(call).get("model_ref")
        earlier = [
            c
            for c in view.calls[:i]
            if response_metadata(c).get("response_id") == previous
            and response_metadata(c).get("model_ref") == server
        ]
        retained = len(earlier) == 1 and all(
            earlier[0].get(k) is not None for k in ("request", "response")
        )
        if not retained:
            bad.append(f"{CALLS}[{i}].request.previous_response_id")
    return _failed_at(bad)


def _target_invocation(items: list[Any], location: str, view: RecordView) -> Verdict:
    ids = Counter(inv["invocation_id"] for inv in view.invocations)
    return _failed_at(
        [
            f"{location}[{i}].invocation_id"
            for i, item in enumerate(items)
            if ids[item["invocation_id"]] != 1
        ]
    )


def steps_invocation_target(view: RecordView) -> Verdict:
    return _target_invocation(view.turns, TURNS, view)


def tools_invocation_target(view: RecordView) -> Verdict:
    return _target_invocation(view.tools, TOOLS, view)


def tools_request(view: RecordView) -> Verdict:
    bad = []
    for i, tool in enumerate(view.tools):
        requests = [
            item
            for inv in view.invocations
            if inv["invocation_id"] == tool["invocation_id"]
            for item in as_list(inv.get("conversation"))
            if isinstance(item, dict)
            and item.get("type") == "function_call"
            and item.get("call_id") == tool["tool_call_id"]
        ]
        joined = (
            len(requests) == 1
            and isinstance(requests[0].get("arguments"), str)
            and requests[0].get("name") == tool["tool_name"]
        )
        if not joined:
            bad.append(f"{TOOLS}[{i}]")
    return _failed_at(bad)


def invocations_parent(view: RecordView) -> Verdict:
    ids = Counter(inv["invocation_id"] for inv in view.invocations)
    by_id = {inv["invocation_id"]: inv for inv in view.invocations}
    bad = []
    for i, inv in enumerate(view.invocations):
        seen = {inv["invocation_id"]}
        parent = inv.get("parent_invocation_id")
        while parent is not None:
            if not isinstance(parent, str) or ids[parent] != 1 or parent in seen:
                bad.append(f"{INVOCATIONS}[{i}].parent_invocation_id")
                break
            seen.add(parent)
            parent = by_id[parent].get("parent_invocation_id")
    return _failed_at(bad)


def ownership_call_target(view: RecordView) -> Verdict:
    return _failed_at(
        [
            f"{INVOCATIONS}[{i}].model_calls[{j}]"
            for i, inv in enumerate(view.invocations)
            for j, ref in enumerate(inv["model_calls"])
            if view.resolve(ref) is None
        ]
    )


def ownership_call_owner(view: RecordView) -> Verdict:
    return _failed_at(
        [f"{CALLS}[{i}]" for i, owners in enumerate(view.call_owners) if len(owners) != 1]
    )


def steps_compaction_target(view: RecordView) -> Verdict:
    return _failed_at([where for where, _, index in view.compaction_refs if index is None])


def steps_call_target(view: RecordView) -> Verdict:
    return _failed_at([where for where, _, index in view.turn_refs if index is None])


def steps_call_owner(view: RecordView) -> Verdict:
    bad = []
    for where, t, index in view.turn_refs:
        owners = view.call_owners[index] if index is not None else None
        if owners not in ([], [view.turns[t]["invocation_id"]]):
            bad.append(where)
    return _failed_at(bad)


def steps_attempt_accounting(view: RecordView) -> Verdict:
    """Policy calls on exactly one step (HTTP-error attempts: at most one); helpers on none."""
    uses = Counter(index for _, _, index in view.turn_refs)
    policy = [i for i in range(len(view.calls)) if i not in view.helper_calls]
    bad = [f"{CALLS}[{i}]" for i in sorted(view.helper_calls) if uses[i]]
    for i in policy:
        status = response_metadata(view.calls[i]).get("status_code")
        is_error = isinstance(status, int) and not isinstance(status, bool) and status >= 400
        if uses[i] > 1 or (uses[i] == 0 and not is_error):
            bad.append(f"{CALLS}[{i}]")
    if not policy:
        bad.append(CALLS)
    return _failed_at(bad)


def _gap_check(effect: GapEffect) -> Callable[[RecordView], Verdict]:
    def predicate(view: RecordView) -> Verdict:
        return _failed_at(
            [
                f"{GAPS}[{i}]"
                for i, gap in enumerate(view.gaps)
                if isinstance(gap, dict)
                and isinstance(gap.get("code"), str)
                and gap_effect(gap["code"]) is effect
            ]
        )

    return predicate


# --------------------------------------------------------------------------- family generators


def _present(id: str, te_: tuple[str, ...], location: str, what: str, **kw: Any) -> ArtifactCheck:
    reason = f"{what} must be a non-empty array of objects at {location}"
    return _schema(id, te_, location, reason, NON_EMPTY_OBJECT_ARRAY, **kw)


def _nonblank_items(id: str, te_: tuple[str, ...], location: str, field: str, what: str,
                    **kw: Any) -> ArtifactCheck:  # fmt: skip
    reason = f"every {what} needs a nonblank {field}"
    return _schema(id, te_, location, reason, _items(_required(field, NONBLANK)), **kw)


_ON_CALLS = {"depends_on": ("model_calls.present",)}
_ON_TURNS = {"applies": Applies.STEPS, "depends_on": ("turns.present",)}
_ON_TOOLS = {"applies": Applies.TOOLS, "depends_on": ("tool_calls.present",)}
_ON_INVOCATIONS = {"depends_on": ("invocations.present",)}

_TOKEN_CHECKS = [
    _schema(
        f"tokens.{name}",
        te(2),
        CALLS,
        f"token_stats.{name}, when present, must be a non-negative integer or null",
        _items(_token_item(name)),
        **_ON_CALLS,
    )
    for name in TOKEN_FIELDS
]

_GRADE_CHECKS = [
    _schema(
        f"evaluation.{name}",
        te(6),
        ROOT,
        reason,
        _required(name, schema),
        applies=applies,
    )
    for name, schema, applies, reason in (
        ("reward", {"type": "number"}, Applies.VERIFIER, "reward must be a number"),
        (
            "evaluation_completed",
            {"type": "boolean"},
            Applies.VERIFIER,
            "evaluation_completed must be a boolean",
        ),
        ("mask_sample", {"type": "boolean"}, Applies.VERIFIER, "mask_sample must be a boolean"),
        (
            "failure_kind",
            NONBLANK,
            Applies.VERIFIER_FAILURE,
            "a masked or incomplete evaluation needs a nonblank failure_kind",
        ),
        (
            "failure_reason",
            NONBLANK,
            Applies.VERIFIER_FAILURE,
            "a masked or incomplete evaluation needs a nonblank failure_reason",
        ),
    )
]

_SANDBOX_RECORD = _required("kind", {"const": "sandbox"})
SANDBOX_OUTCOMES = ("completed", "failed", "timeout", "oom", "sandbox_error", "cancelled")


def _sandbox_rows(rule: Mapping[str, Any]) -> dict[str, Any]:
    return _items({"if": _SANDBOX_RECORD, "then": rule})


_SANDBOX_CHECKS = [
    _schema(
        "sandbox.present",
        te(6),
        OBSERVATIONS,
        "a sandbox record is required but none was retained",
        {"type": "array", "contains": _SANDBOX_RECORD},
        applies=Applies.REQUIRE_SANDBOX,
    ),
    *(
        _schema(
            f"sandbox.{name}",
            te(6),
            OBSERVATIONS,
            reason,
            _sandbox_rows(rule),
            applies=Applies.SANDBOX,
            depends_on=("sandbox.present",),
            depends_when=Applies.REQUIRE_SANDBOX,
        )
        for name, rule, reason in (
            ("identity", _required("sandbox_id", NONBLANK), "every sandbox needs a sandbox_id"),
            (
                "outcome",
                _required("outcome", {"enum": list(SANDBOX_OUTCOMES)}),
                "every sandbox needs a terminal outcome",
            ),
            (
                "error",
                {
                    "if": _required("outcome", {"enum": ["failed", "oom", "sandbox_error"]}),
                    "then": _required("error_type", NONBLANK),
                },
                "a failed sandbox needs a nonblank error_type",
            ),
        )
    ),
]

_GAP_CHECKS = [
    _semantic(id, te_, GAPS, reason, _gap_check(effect), applies=applies, **_ON_CALLS)
    for id, te_, effect, applies, reason in (
        (
            "calls.capture_gap",
            te(1, 4, 7, 8, 9),
            GapEffect.CAPTURE,
            Applies.ALWAYS,
            "the trajectory records a model-call capture gap",
        ),
        (
            "ownership.gap",
            te(8),
            GapEffect.OWNERSHIP,
            Applies.ALWAYS,
            "the trajectory records a model-call ownership gap",
        ),
        (
            "steps.gap",
            te(3),
            GapEffect.STEPS,
            Applies.STEPS,
            "the trajectory records missing or incomplete steps",
        ),
        (
            "steps.accounting_gap",
            te(9),
            GapEffect.STEP_ACCOUNTING,
            Applies.STEPS,
            "the trajectory records incomplete step-to-call accounting",
        ),
    )
]

# --------------------------------------------------------------------------- the catalogue

ARTIFACT_CHECKS: tuple[ArtifactCheck, ...] = (
    # Model calls
    _present("model_calls.present", te(1, 2, 4, 7, 8, 9), CALLS, "retained model calls"),
    _nonblank_items("calls.identity", te(1), CALLS, "model_call_id", "model call", **_ON_CALLS),
    _schema(
        "calls.model",
        te(1),
        CALLS,
        "every model call needs a responses_api_models model_ref with a nonblank name",
        _items(_metadata(_required("model_ref", MODEL_REF_SCHEMA))),
        **_ON_CALLS,
    ),
    _schema(
        "calls.protocol",
        te(1),
        CALLS,
        "every model call needs a dialect of chat, responses or messages",
        _items(_metadata(_required("dialect", {"enum": ["chat", "responses", "messages"]}))),
        **_ON_CALLS,
    ),
    _schema(
        "calls.timing",
        te(1),
        CALLS,
        "every model call needs non-negative started_at and completed_at clocks",
        _items(
            {
                "type": "object",
                "required": ["started_at", "completed_at"],
                "properties": {
                    "started_at": NON_NEGATIVE_NUMBER,
                    "completed_at": NON_NEGATIVE_NUMBER,
                },
            }
        ),
        **_ON_CALLS,
    ),
    _schema(
        "calls.outcome",
        te(1),
        CALLS,
        "every model call needs an explicit terminal outcome: an error category, or a 2xx "
        "status with protocol termination metadata",
        _items(CALL_OUTCOME_ITEM),
        **_ON_CALLS,
    ),
    _schema(
        "calls.response_id",
        te(1),
        CALLS,
        "every successful model call needs a nonblank response_id",
        _items(CALL_RESPONSE_ID_ITEM),
        **_ON_CALLS,
    ),
    _schema(
        "calls.request",
        te(4, 7),
        CALLS,
        "every model call must retain its request in the dialect's input shape",
        _items(CALL_REQUEST_ITEM),
        **_ON_CALLS,
    ),
    _schema(
        "calls.response",
        te(4, 7),
        CALLS,
        "every model call must retain its response body with a status, or be an explicit "
        "no-response failure",
        _items(CALL_RESPONSE_ITEM),
        **_ON_CALLS,
    ),
    *_TOKEN_CHECKS,
    _semantic(
        "content.media",
        te(4, 7),
        CALLS,
        "retained payloads must not rely on unresolvable media, files or encrypted content",
        content_media,
        depends_on=("model_calls.present", "calls.request", "calls.response"),
    ),
    _semantic(
        "content.previous_response",
        te(4),
        CALLS,
        "previous_response_id must name exactly one earlier retained call on the same server",
        content_previous_response,
        depends_on=("model_calls.present", "calls.request"),
    ),
    # Structure
    _schema(
        "trajectory.task_id",
        te(3, 8),
        TRAJECTORY,
        "the trajectory needs a nonblank task_id",
        _required("task_id", NONBLANK),
    ),
    _schema(
        "trajectory.rollout_id",
        te(3, 8),
        TRAJECTORY,
        "the trajectory needs a nonblank rollout_id",
        _required("rollout_id", NONBLANK),
    ),
    _present("invocations.present", te(8), INVOCATIONS, "agent invocations"),
    _nonblank_items(
        "invocations.identity", te(8), INVOCATIONS, "invocation_id", "invocation", **_ON_INVOCATIONS
    ),
    _schema(
        "invocations.references",
        te(8),
        INVOCATIONS,
        "every invocation needs a model_calls list of valid model-call references",
        _items(_required("model_calls", REF_LIST)),
        **_ON_INVOCATIONS,
    ),
    _present("turns.present", te(3, 9), TURNS, "policy steps", applies=Applies.STEPS),
    _nonblank_items("steps.invocation", te(3, 9), TURNS, "invocation_id", "step", **_ON_TURNS),
    _schema(
        "steps.number",
        te(3, 9),
        TURNS,
        "every step needs an integer turn_no of at least 1",
        _items(_required("turn_no", {"type": "integer", "minimum": 1})),
        **_ON_TURNS,
    ),
    _schema(
        "steps.timestamp",
        te(3),
        TURNS,
        "every step needs a non-negative timestamp",
        _items(_required("timestamp", NON_NEGATIVE_NUMBER)),
        **_ON_TURNS,
    ),
    _schema(
        "steps.resolution",
        te(3),
        TURNS,
        "every step must state resolved explicitly (true, false or null)",
        _items(_required("resolved", {"type": ["boolean", "null"]})),
        **_ON_TURNS,
    ),
    _schema(
        "steps.references",
        te(9),
        TURNS,
        "every step needs at least one valid reference to the model calls that produced it",
        _items(_required("model_calls", {**REF_LIST, "minItems": 1})),
        **_ON_TURNS,
    ),
    _present("tool_calls.present", te(5), TOOLS, "tool executions", applies=Applies.TOOLS),
    _nonblank_items("tools.identity", te(5), TOOLS, "tool_call_id", "tool call", **_ON_TOOLS),
    _nonblank_items("tools.name", te(5), TOOLS, "tool_name", "tool call", **_ON_TOOLS),
    _nonblank_items("tools.invocation", te(5), TOOLS, "invocation_id", "tool call", **_ON_TOOLS),
    _schema(
        "tools.status",
        te(5),
        TOOLS,
        "every tool call needs a terminal status",
        _items(_required("status", {"enum": ["completed", "failed", "timeout", "cancelled"]})),
        **_ON_TOOLS,
    ),
    _schema(
        "tools.output",
        te(5),
        TOOLS,
        "every tool call must retain its model-visible output",
        _items(_required("output", {"type": ["string", "array", "object"]})),
        **_ON_TOOLS,
    ),
    _semantic(
        "steps.invocation_target",
        te(3, 9),
        TURNS,
        "every step must belong to exactly one retained invocation",
        steps_invocation_target,
        applies=Applies.STEPS,
        depends_on=(
            "turns.present",
            "steps.invocation",
            "invocations.present",
            "invocations.identity",
        ),
    ),
    _semantic(
        "tools.invocation_target",
        te(5),
        TOOLS,
        "every tool call must belong to exactly one retained invocation",
        tools_invocation_target,
        applies=Applies.TOOLS,
        depends_on=(
            "tool_calls.present",
            "tools.invocation",
            "invocations.present",
            "invocations.identity",
        ),
    ),
    _semantic(
        "tools.request",
        te(5),
        f"{INVOCATIONS}[*].conversation",
        "every tool call needs exactly one matching function_call request (same name, string "
        "arguments) in its invocation's conversation",
        tools_request,
        applies=Applies.TOOLS,
        depends_on=(
            "tool_calls.present",
            "tools.identity",
            "tools.name",
            "tools.invocation_target",
        ),
    ),
    # Ownership and step join
    _semantic(
        "invocations.parent",
        te(8),
        f"{INVOCATIONS}[*].parent_invocation_id",
        "every parent invocation must exist exactly once and parents must not form a cycle",
        invocations_parent,
        depends_on=("invocations.present", "invocations.identity"),
    ),
    _semantic(
        "ownership.call_target",
        te(8),
        f"{INVOCATIONS}[*].model_calls",
        "every invocation reference must resolve to exactly one retained model call",
        ownership_call_target,
        depends_on=(
            "model_calls.present",
            "calls.identity",
            "invocations.present",
            "invocations.references",
            "invocations.identity",
        ),
    ),
    _semantic(
        "ownership.call_owner",
        te(8),
        f"{INVOCATIONS}[*].model_calls",
        "every retained model call must be owned by exactly one invocation reference",
        ownership_call_owner,
        depends_on=("ownership.call_target",),
    ),
    _semantic(
        "steps.compaction_target",
        te(9),
        OBSERVATIONS,
        "every context-compaction helper reference must resolve to exactly one model call",
        steps_compaction_target,
        applies=Applies.STEPS,
        depends_on=("model_calls.present",),
    ),
    _semantic(
        "steps.call_target",
        te(9),
        f"{TURNS}[*].model_calls",
        "every step reference must resolve to exactly one retained model call",
        steps_call_target,
        applies=Applies.STEPS,
        depends_on=(
            "model_calls.present",
            "calls.identity",
            "turns.present",
            "steps.references",
            "steps.invocation_target",
        ),
    ),
    _semantic(
        "steps.call_owner",
        te(9),
        f"{TURNS}[*].model_calls",
        "a step may only reference model calls owned by its own invocation",
        steps_call_owner,
        applies=Applies.STEPS,
        depends_on=("steps.call_target", "ownership.call_target"),
    ),
    _semantic(
        "steps.attempt_accounting",
        te(9),
        f"{TURNS}[*].model_calls",
        "every policy model call must belong to exactly one step (failed HTTP attempts to at "
        "most one) and compaction helpers to none",
        steps_attempt_accounting,
        applies=Applies.STEPS,
        depends_on=("steps.call_target", "steps.compaction_target"),
    ),
    # Evaluation
    *_GRADE_CHECKS,
    *_SANDBOX_CHECKS,
    # Gaps
    *_GAP_CHECKS,
)

ARTIFACT_CHECK_IDS: tuple[str, ...] = tuple(c.id for c in ARTIFACT_CHECKS)


def bind_artifact_checks(view: RecordView, scope: EvidenceScope) -> list[Check]:
    """Every catalogue check bound to one record, in execution order."""
    return [definition.bind(view, scope) for definition in ARTIFACT_CHECKS]
