"""Project ``ng_trajectory`` (schema 1.0) from the gateway's capture and the agent's observations.

Join: each model-call reference of each invocation is resolved
against the captured calls — a unique match becomes the canonical ``{model_call_id, model_ref,
response_id}`` triple and makes the invocation the call's owner; no match, several matches, or
a call that already has an owner leave the reference as it was and record a
``model_call_reference_*`` gap. A call still unowned that was sent under an invocation's id
(the ``x-session-id`` header) belongs to that invocation. Captured calls nobody owns are
recorded as ``model_call_ownership_unavailable``.

Projection: every captured call becomes a trajectory model call; every call that
produced a step (a 2xx answer) becomes one turn of its owner, carrying the failed attempts
before it; tool calls take their model-visible output from the owner's conversation. What
cannot be established is recorded as a gap, never filled in. After a successful projection the
payloads are dropped from the capture attachment (the trajectory owns them).

The trajectory is built from the evidence models part by part (a part that breaks the schema
fails the projection where it is made); it becomes JSON only when it is returned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from gym_assets.records.evidence import (
    AgentInvocation,
    AgentObservations,
    GapCode,
    ModelCallRef,
    ObservationGap,
    ResponseMetadata,
    TokenStats,
    TrajectoryModelCall,
    TrajectoryRecord,
    TrajectoryToolCall,
    TrajectoryTurn,
)

PAYLOAD_KEYS = ("request", "response", "request_raw", "response_raw")
JsonObject = dict[str, Any]


def _gap(
    code: GapCode, invocation_id: str | None = None, detail: str | None = None
) -> ObservationGap:
    return ObservationGap(code=code.value, invocation_id=invocation_id, detail=detail)


def _matches(ref: ModelCallRef, call: Mapping[str, Any]) -> bool:
    """Every non-null field of the reference equals the call's value."""
    if not (ref.model_call_id or (ref.model_ref and ref.response_id)):
        return False
    if ref.model_call_id is not None and ref.model_call_id != call.get("model_call_id"):
        return False
    if ref.model_ref is not None and ref.model_ref.model_dump() != call.get("model_ref"):
        return False
    return ref.response_id is None or ref.response_id == call.get("response_id")


def _canonical_ref(call: Mapping[str, Any]) -> ModelCallRef:
    return ModelCallRef.model_validate(
        {
            "model_call_id": call["model_call_id"],
            "model_ref": call["model_ref"],
            "response_id": call.get("response_id"),
        }
    )


def _join(
    invocations: Sequence[AgentInvocation], calls: list[JsonObject], gaps: list[ObservationGap]
) -> tuple[list[AgentInvocation], dict[str, str]]:
    """The invocations with their references resolved, and the owner invocation of each owned
    call id."""
    owner: dict[str, str] = {}
    joined_refs: dict[str, list[ModelCallRef]] = {}
    for invocation in invocations:
        invocation_id = invocation.invocation_id
        joined = joined_refs[invocation_id] = []
        for ref in invocation.model_calls:
            found = [call for call in calls if _matches(ref, call)]
            detail = ",".join(
                f"{name}={value}"
                for name, value in (
                    ("model_call_id", ref.model_call_id),
                    ("response_id", ref.response_id),
                )
                if value
            )
            if not found:
                gaps.append(_gap(GapCode.MODEL_CALL_REFERENCE_UNMATCHED, invocation_id, detail))
            elif len(found) > 1:
                gaps.append(_gap(GapCode.MODEL_CALL_REFERENCE_AMBIGUOUS, invocation_id, detail))
            elif found[0]["model_call_id"] in owner:
                gaps.append(_gap(GapCode.MODEL_CALL_REFERENCE_CONFLICT, invocation_id, detail))
            else:
                owner[found[0]["model_call_id"]] = invocation_id
                joined.append(_canonical_ref(found[0]))
                continue
            joined.append(ref)
    _claim_by_session(joined_refs, calls, owner)
    resolved = [
        invocation.model_copy(update={"model_calls": joined_refs[invocation.invocation_id]})
        for invocation in invocations
    ]
    return resolved, owner


def _claim_by_session(
    joined_refs: dict[str, list[ModelCallRef]], calls: list[JsonObject], owner: dict[str, str]
) -> None:
    """Give an unowned call to the invocation whose id it was sent under (``x-session-id``):
    the retries a client made on its own, which the agent never saw and so never referenced."""
    claimed: set[str] = set()
    for call in calls:
        session = call.get("client_session_id")
        if (
            call["model_call_id"] not in owner
            and isinstance(session, str)
            and session in joined_refs
        ):
            owner[call["model_call_id"]] = session
            joined_refs[session].append(_canonical_ref(call))
            claimed.add(session)
    index = {call["model_call_id"]: call.get("call_index", 0) for call in calls}
    for session in claimed:
        joined_refs[session].sort(key=lambda ref: index.get(ref.model_call_id or "", len(calls)))


def _model_call(call: Mapping[str, Any]) -> TrajectoryModelCall:
    request = call.get("request")
    response = call.get("response")
    return TrajectoryModelCall.model_validate(
        {
            "model_call_id": call["model_call_id"],
            "started_at": call.get("started_at"),
            "completed_at": call.get("completed_at"),
            "duration_ms": call.get("latency_total_ms"),
            "request": request if request is not None else call.get("request_raw"),
            "response": response if response is not None else call.get("response_raw"),
            "response_metadata": ResponseMetadata.model_validate(
                {
                    "response_id": call.get("response_id"),
                    "model_ref": call["model_ref"],
                    "model": call.get("model"),
                    "dialect": call["dialect"],
                    "status_code": call.get("status_code"),
                    "response_status": call.get("response_status"),
                    "finish_reason": call.get("finish_reason"),
                    "error_category": call.get("error_category"),
                    "latency_ttft_ms": call.get("latency_ttft_ms"),
                }
            ),
            "token_stats": TokenStats.model_validate(
                {
                    "prompt_tokens": call.get("tokens_in"),
                    "completion_tokens": call.get("tokens_out"),
                    "reasoning_tokens": call.get("tokens_reasoning"),
                    "total_tokens": call.get("tokens_total"),
                    "cached_tokens": call.get("cached_tokens"),
                }
            ),
        }
    )


def _produced_step(call: Mapping[str, Any]) -> bool:
    status = call.get("status_code")
    return (
        isinstance(status, int)
        and 200 <= status < 300
        and call.get("error_category") is None
        and isinstance(call.get("response"), dict)
    )


def _prompt_items(call: Mapping[str, Any]) -> Any:
    request = call.get("request")
    if not isinstance(request, dict):
        return call.get("request_raw")
    return request.get("messages") if call.get("dialect") != "responses" else request.get("input")


def _answer(call: Mapping[str, Any]) -> Any:
    response = call["response"]
    if call.get("dialect") == "chat":
        choices = response.get("choices") or [{}]
        return choices[0].get("message") if isinstance(choices[0], dict) else None
    return response.get("output", response.get("content"))


def _turns(
    invocation: AgentInvocation,
    by_id: dict[str, JsonObject],
    task_id: str,
    rollout_id: str,
    gaps: list[ObservationGap],
) -> list[TrajectoryTurn]:
    """One turn per step-producing call, in reference order, with the failed tries before it."""
    invocation_id = invocation.invocation_id
    turns: list[TrajectoryTurn] = []
    attempts: list[ModelCallRef] = []
    seen_prompt = 0
    for ref in invocation.model_calls:
        call = by_id.get(ref.model_call_id or "")
        if call is None:
            continue  # unresolved: its gap is recorded already
        attempts.append(ref)
        if not _produced_step(call):
            continue
        timestamp = call.get("started_at", call.get("completed_at"))
        if timestamp is None:
            gaps.append(_gap(GapCode.TURN_EVIDENCE_INCOMPLETE, invocation_id, "no call clock"))
            attempts = []
            continue
        prompt = _prompt_items(call)
        question = prompt[seen_prompt:] if isinstance(prompt, list) else prompt
        seen_prompt = len(prompt) if isinstance(prompt, list) else 0
        turns.append(
            TrajectoryTurn(
                invocation_id=invocation_id,
                task_id=task_id,
                rollout_id=rollout_id,
                turn_no=len(turns) + 1,
                timestamp=timestamp,
                question=question,
                answer=_answer(call),
                reasoning_content=call.get("reasoning_content"),
                resolved=None,
                step_count=len(turns) + 1,
                model_calls=attempts,
            )
        )
        attempts = []
    unaccounted = [
        ref
        for ref in attempts
        if not (
            isinstance(s := by_id[ref.model_call_id or ""].get("status_code"), int) and s >= 400
        )
    ]
    if unaccounted:
        ids = ",".join(ref.model_call_id or "" for ref in unaccounted)
        gaps.append(_gap(GapCode.TURN_MODEL_CALL_SCOPE_INCOMPLETE, invocation_id, ids))
    return turns


def _tool_calls(
    observations: AgentObservations,
    invocations: Sequence[AgentInvocation],
    gaps: list[ObservationGap],
) -> list[TrajectoryToolCall]:
    outputs: dict[tuple[str, str], Any] = {}
    for invocation in invocations:
        for item in invocation.conversation:
            if item.get("type") == "function_call_output" and isinstance(item.get("call_id"), str):
                outputs[(invocation.invocation_id, item["call_id"])] = item.get("output")
    tools = []
    for record in observations.records:
        if record.kind != "tool_call":
            continue
        key = (record.invocation_id, record.tool_call_id)
        if key not in outputs:
            gaps.append(
                _gap(GapCode.CONVERSATION_UNAVAILABLE, record.invocation_id, record.tool_call_id)
            )
        tools.append(
            TrajectoryToolCall.model_validate(
                {**record.model_dump(mode="json"), "output": outputs.get(key)}
            )
        )
    return tools


def project(
    capture: JsonObject,
    observations: Any,
    *,
    task_id: str,
    rollout_id: str,
    resolved: bool | None = None,
) -> tuple[JsonObject, JsonObject]:
    """``(ng_model_call_capture, ng_trajectory)`` for one rollout, as JSON.

    ``capture`` is the attachment read from the gateway's capture file (with payloads);
    ``observations`` the agent's ``ng_agent_observations`` (None when it reported none);
    ``resolved`` the verifier's episode resolution, put on the last step only.
    """
    try:
        trajectory = _project(capture, observations, task_id, rollout_id, resolved)
    except (ValidationError, KeyError, TypeError, ValueError) as exc:
        gap = _gap(GapCode.TRAJECTORY_PROJECTION_FAILED, detail=type(exc).__name__)
        minimal = TrajectoryRecord(task_id=task_id, rollout_id=rollout_id, gaps=[gap])
        return capture, minimal.model_dump(mode="json")
    stripped = {
        **capture,
        "calls": [{**call, **dict.fromkeys(PAYLOAD_KEYS)} for call in capture["calls"]],
    }
    return stripped, trajectory.model_dump(mode="json")


def _project(
    capture: JsonObject,
    observations: Any,
    task_id: str,
    rollout_id: str,
    resolved: bool | None,
) -> TrajectoryRecord:
    calls: list[JsonObject] = list(capture.get("calls") or [])
    gaps = [ObservationGap.model_validate(gap) for gap in capture.get("gaps") or []]
    bundle = AgentObservations(source="none")
    if observations is not None:
        try:
            bundle = AgentObservations.model_validate(observations)
        except ValidationError as exc:
            gaps.append(
                _gap(GapCode.AGENT_OBSERVATIONS_INVALID, detail=f"{exc.error_count()} errors")
            )
    gaps.extend(bundle.gaps)
    invocations, owner = _join(
        [record for record in bundle.records if isinstance(record, AgentInvocation)], calls, gaps
    )
    for call in calls:
        if call["model_call_id"] not in owner:
            detail = f"capture:{rollout_id}:call_index={call.get('call_index')}"
            gaps.append(_gap(GapCode.MODEL_CALL_OWNERSHIP_UNAVAILABLE, detail=detail))
    if not calls:
        gaps.append(_gap(GapCode.MODEL_CALLS_UNAVAILABLE))
    by_id = {call["model_call_id"]: call for call in calls}
    turns = [
        turn
        for invocation in invocations
        for turn in _turns(invocation, by_id, task_id, rollout_id, gaps)
    ]
    turns.sort(key=lambda t: (t.timestamp, t.invocation_id, t.turn_no))
    if turns:
        turns[-1] = turns[-1].model_copy(update={"resolved": resolved})
    else:
        gaps.append(_gap(GapCode.TURNS_UNAVAILABLE))
    return TrajectoryRecord(
        task_id=task_id,
        rollout_id=rollout_id,
        invocations=invocations,
        turns=turns,
        model_calls=[_model_call(call) for call in calls],
        tool_calls=_tool_calls(bundle, invocations, gaps),
        gaps=gaps,
    )
