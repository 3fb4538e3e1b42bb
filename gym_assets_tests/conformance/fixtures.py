"""Fixture library for conformance tests: one conformant rollout record plus mutation helpers.

The baseline is the synthetic record of the specification's test cases: one invocation
``invocation`` making two Responses-dialect calls ``attempt-1``/``attempt-2``, each asking for
tool ``read_value`` (``tool-1``/``tool-2``), two policy steps, two completed tool executions,
reward 0.0, no gaps; the capture attachment and the observation bundle carry duplicate copies
that the checker must ignore. It is built through the evidence models, so the models and the
checks are proven to agree on what "conformant" means.

Usage: ``rec = baseline_record()`` (a fresh deep copy each time), mutate it with the helpers
(``set_path(rec, "ng_trajectory.turns[0].resolved", "true")``), then ``run(rec)`` or
``check_record(rec, scope)`` and assert on ``result.status(id)``.
"""

from __future__ import annotations

import copy
import re
from functools import cache
from typing import Any

from gym_assets.conformance.scope import EvidenceScope
from gym_assets.records import evidence as ev

TASK_ID = "0"
ROLLOUT_ID = "0-0"
INVOCATION_ID = "invocation"
MODEL_NAME = "synthetic-model"
TOOL_NAME = "read_value"
TOOL_ARGUMENTS = '{"key": "example"}'
TOOL_OUTPUT = "value"
# The tool the baseline's task declares (so its tool evidence is in the benchmark's scope).
TASK_TOOL = {"type": "function", "name": TOOL_NAME, "parameters": {"type": "object"}}
USER_MESSAGE = {"role": "user", "content": "Read the example value.", "type": "message"}
USAGE = {
    "input_tokens": 10,
    "output_tokens": 5,
    "total_tokens": 15,
    "input_tokens_details": {"cached_tokens": 2},
    "output_tokens_details": {"reasoning_tokens": 3},
}
STEPS = (1, 2)

BASELINE_NOT_APPLICABLE = frozenset(
    {
        "evaluation.failure_kind",
        "evaluation.failure_reason",
        "sandbox.present",
        "sandbox.identity",
        "sandbox.outcome",
        "sandbox.error",
    }
)
"""Artifact checks that are not applicable on the baseline (everything else passes)."""

# --------------------------------------------------------------------------- builders


def model_ref(name: str = MODEL_NAME) -> dict[str, str]:
    return {"type": ev.MODEL_SERVER_TYPE, "name": name}


def function_call(k: int) -> dict[str, Any]:
    return {
        "type": "function_call",
        "call_id": f"tool-{k}",
        "name": TOOL_NAME,
        "arguments": TOOL_ARGUMENTS,
    }


def function_call_output(k: int) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": f"tool-{k}", "output": TOOL_OUTPUT}


def conversation() -> list[dict[str, Any]]:
    items = [dict(USER_MESSAGE)]
    for k in STEPS:
        items += [function_call(k), function_call_output(k)]
    return items


def call_ref(k: int) -> ev.ModelCallRef:
    """The full three-key reference to call ``attempt-k``."""
    return ev.ModelCallRef(
        model_call_id=f"attempt-{k}",
        model_ref=ev.ModelRef(name=MODEL_NAME),
        response_id=f"response-{k}",
    )


def _request(k: int) -> dict[str, Any]:
    history = [dict(USER_MESSAGE)]
    for j in range(1, k):
        history += [function_call(j), function_call_output(j)]
    return {"model": MODEL_NAME, "input": history}


def _response(k: int) -> dict[str, Any]:
    return {
        "id": f"response-{k}",
        "object": "response",
        "status": "completed",
        "model": MODEL_NAME,
        "output": [function_call(k)],
        "usage": copy.deepcopy(USAGE),
    }


def _token_stats() -> ev.TokenStats:
    return ev.TokenStats(
        prompt_tokens=10, completion_tokens=5, reasoning_tokens=3, total_tokens=15, cached_tokens=2
    )


def model_call(k: int) -> ev.TrajectoryModelCall:
    return ev.TrajectoryModelCall(
        model_call_id=f"attempt-{k}",
        started_at=float(k),
        completed_at=k + 0.5,
        duration_ms=500.0,
        request=_request(k),
        response=_response(k),
        response_metadata=ev.ResponseMetadata(
            response_id=f"response-{k}",
            model_ref=ev.ModelRef(name=MODEL_NAME),
            model=MODEL_NAME,
            dialect="responses",
            status_code=200,
            response_status="completed",
            finish_reason=None,
        ),
        token_stats=_token_stats(),
    )


def _invocation() -> ev.AgentInvocation:
    return ev.AgentInvocation(
        invocation_id=INVOCATION_ID,
        status="completed",
        duration_ms=2500.0,
        model_calls=[call_ref(k) for k in STEPS],
        conversation=conversation(),
    )


def _tool_call(k: int) -> ev.TrajectoryToolCall:
    return ev.TrajectoryToolCall(
        invocation_id=INVOCATION_ID,
        tool_call_id=f"tool-{k}",
        tool_name=TOOL_NAME,
        started_at=k + 0.6,
        completed_at=k + 0.7,
        duration_ms=100.0,
        timing_source="executor",
        status="completed",
        output=TOOL_OUTPUT,
    )


def _turn(k: int) -> ev.TrajectoryTurn:
    return ev.TrajectoryTurn(
        invocation_id=INVOCATION_ID,
        task_id=TASK_ID,
        rollout_id=ROLLOUT_ID,
        turn_no=k,
        timestamp=float(k),
        question=USER_MESSAGE["content"] if k == 1 else TOOL_OUTPUT,
        answer=f"{TOOL_NAME}({TOOL_ARGUMENTS})",
        reasoning_content=None,
        resolved=None,
        step_count=k,
        model_calls=[call_ref(k)],
    )


def _capture() -> ev.ModelCallCapture:
    return ev.ModelCallCapture(
        rollout_id=ROLLOUT_ID,
        metrics={"calls": len(STEPS)},
        calls=[
            ev.ModelCallRecord(
                model_call_id=f"attempt-{k}",
                response_id=f"response-{k}",
                call_index=k - 1,
                model_ref=ev.ModelRef(name=MODEL_NAME),
                model=MODEL_NAME,
                dialect="responses",
                status_code=200,
                response_status="completed",
                started_at=float(k),
                completed_at=k + 0.5,
                tokens_in=10,
                tokens_out=5,
                tokens_reasoning=3,
                tokens_total=15,
                cached_tokens=2,
                latency_total_ms=500.0,
                client_session_id=INVOCATION_ID,
            )
            for k in STEPS
        ],
    )


def _observations() -> ev.AgentObservations:
    tools = [ev.ToolCallObservation(**_tool_call(k).model_dump(exclude={"output"})) for k in STEPS]
    return ev.AgentObservations(source="synthetic-agent", records=[_invocation(), *tools])


@cache
def _baseline_model() -> ev.RolloutRecord:
    return ev.RolloutRecord(
        task_index=0,
        rollout_index=0,
        reward=0.0,
        evaluation_completed=True,
        mask_sample=False,
        responses_create_params={"input": [dict(USER_MESSAGE)], "tools": [dict(TASK_TOOL)]},
        response={"id": "response-2", "status": "completed", "output": [function_call(2)]},
        agent_ref={"name": "synthetic-agent"},
        ng_trajectory=ev.TrajectoryRecord(
            task_id=TASK_ID,
            rollout_id=ROLLOUT_ID,
            invocations=[_invocation()],
            turns=[_turn(k) for k in STEPS],
            model_calls=[model_call(k) for k in STEPS],
            tool_calls=[_tool_call(k) for k in STEPS],
            gaps=[],
        ),
        ng_agent_observations=_observations(),
        ng_model_call_capture=_capture(),
    )


@cache
def _baseline_row() -> dict[str, Any]:
    return _baseline_model().to_row()


def baseline_record() -> dict[str, Any]:
    """A fresh, fully conformant rollout row (mutate freely)."""
    return copy.deepcopy(_baseline_row())


def baseline_call(k: int) -> dict[str, Any]:
    """A fresh JSON copy of baseline call ``attempt-k`` (e.g. to append a variant)."""
    return model_call(k).model_dump(mode="json")


def full_ref(call: dict[str, Any]) -> dict[str, Any]:
    """The three-key reference to a call dict (as retained in the record)."""
    meta = call["response_metadata"]
    return {
        "model_call_id": call["model_call_id"],
        "model_ref": copy.deepcopy(meta["model_ref"]),
        "response_id": meta["response_id"],
    }


# --------------------------------------------------------------------------- accessors


def trajectory(record: dict[str, Any]) -> dict[str, Any]:
    return record["ng_trajectory"]


def calls(record: dict[str, Any]) -> list[dict[str, Any]]:
    return record["ng_trajectory"]["model_calls"]


def turns(record: dict[str, Any]) -> list[dict[str, Any]]:
    return record["ng_trajectory"]["turns"]


def tool_calls(record: dict[str, Any]) -> list[dict[str, Any]]:
    return record["ng_trajectory"]["tool_calls"]


def invocation(record: dict[str, Any], index: int = 0) -> dict[str, Any]:
    return record["ng_trajectory"]["invocations"][index]


def observation_records(record: dict[str, Any]) -> list[Any]:
    return record["ng_agent_observations"]["records"]


# --------------------------------------------------------------------------- path mutations

_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _parts(path: str) -> list[str | int]:
    parts: list[str | int] = []
    for key, index in _TOKEN.findall(path):
        parts.append(int(index) if index else key)
    return parts


def get_path(record: Any, path: str) -> Any:
    """Read ``a.b[0].c``."""
    node = record
    for part in _parts(path):
        node = node[part]
    return node


def set_path(record: Any, path: str, value: Any) -> Any:
    """Set ``a.b[0].c`` (the parent must exist); returns the record for chaining."""
    *head, last = _parts(path)
    parent = record
    for part in head:
        parent = parent[part]
    parent[last] = value
    return record


def delete_path(record: Any, path: str) -> Any:
    """Delete ``a.b[0].c`` (key or list element); returns the record for chaining."""
    *head, last = _parts(path)
    parent = record
    for part in head:
        parent = parent[part]
    del parent[last]
    return record


def add_observation(record: dict[str, Any], observation: dict[str, Any]) -> dict[str, Any]:
    """Append a producer observation record (e.g. a sandbox or a context compaction)."""
    record.setdefault("ng_agent_observations", {"source": "synthetic-agent", "records": []})
    record["ng_agent_observations"].setdefault("records", []).append(observation)
    return record


def add_sandbox(record: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """Append a sandbox observation; defaults describe a completed agent sandbox."""
    sandbox = {"kind": "sandbox", "sandbox_id": "sandbox-1", "role": "agent"}
    sandbox.update({"outcome": "completed", **fields})
    return add_observation(record, sandbox)


def add_gap(record: dict[str, Any], code: str, **fields: Any) -> dict[str, Any]:
    """Append a gap to the canonical trajectory (the only gaps the checks read)."""
    trajectory(record).setdefault("gaps", []).append({"code": code, **fields})
    return record


def add_call(
    record: dict[str, Any],
    call: dict[str, Any],
    *,
    index: int | None = None,
    own: bool = False,
    step: int | None = None,
) -> dict[str, Any]:
    """Insert a model call; optionally reference it from the invocation and/or a turn."""
    target = calls(record)
    target.insert(len(target) if index is None else index, call)
    if own:
        invocation(record)["model_calls"].append(full_ref(call))
    if step is not None:
        turns(record)[step]["model_calls"].append(full_ref(call))
    return record


# --------------------------------------------------------------------------- running


def run(record: Any, **scope: bool):  # -> CheckerResult
    """Check a record under ``EvidenceScope(**scope)`` with the artifact catalogue only."""
    from gym_assets.conformance.checker import check_record

    return check_record(record, EvidenceScope(**scope))


def failing(result: Any) -> set[str]:
    """Ids of failed rows."""
    return {row.id for row in result.rows if row.status == "fail"}


def te(result: Any, label: str) -> str:
    """The verdict string of one TE label."""
    return str(result.evidence[label].verdict)
