"""Trajectory projection from a synthetic capture file and observation bundle."""

from __future__ import annotations

import json

from gym_assets.conformance.checker import check_record
from gym_assets.records.evidence import ModelCallCapture, TrajectoryRecord
from gym_assets.rollouts.collection.trajectory import project
from gym_assets.rollouts.gateway.capture import capture_path, read_capture

MODEL_REF = {"type": "responses_api_models", "name": "policy_model"}
FUNCTION_CALL = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "calculate",
    "arguments": '{"expression": "6*7"}',
    "status": "completed",
}
MESSAGE = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "42", "annotations": []}],
}
USER = {"role": "user", "content": "What is 6*7?"}
OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": "42"}


def _response(response_id, item):
    return {
        "id": response_id,
        "object": "response",
        "status": "completed",
        "model": "policy",
        "output": [item],
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
    }


def _exchange(n, status, request, response, *, session="root", category=None):
    return {
        "model_call_id": f"mc_{n}",
        "dialect": "responses",
        "model_ref": MODEL_REF,
        "started_at": 1000.0 + n,
        "completed_at": 1000.5 + n,
        "latency_ms": 500.0,
        "status_code": status,
        "error_category": category,
        "request": request,
        "response": response,
        "client_session_id": session,
    }


def _capture(tmp_path, rollout_id="0-0"):
    first = {"model": "policy", "input": [USER]}
    second = {"model": "policy", "input": [USER, FUNCTION_CALL, OUTPUT]}
    lines = [
        _exchange(0, 429, first, {"error": {"message": "slow down"}}, category="rate_limit"),
        _exchange(1, 200, first, _response("resp_1", FUNCTION_CALL)),
        _exchange(2, 200, second, _response("resp_2", MESSAGE)),
    ]
    capture_path(tmp_path, rollout_id).write_text("".join(json.dumps(x) + "\n" for x in lines))
    return read_capture(tmp_path, rollout_id)


def _observations(refs=("resp_1", "resp_2")):
    invocation = {
        "kind": "agent_invocation",
        "invocation_id": "root",
        "status": "completed",
        "model_calls": [{"model_ref": MODEL_REF, "response_id": r} for r in refs],
        "conversation": [USER, FUNCTION_CALL, OUTPUT, MESSAGE],
    }
    tool = {
        "kind": "tool_call",
        "invocation_id": "root",
        "tool_call_id": "call_1",
        "tool_name": "calculate",
        "status": "completed",
        "started_at": 1001.6,
        "completed_at": 1001.7,
    }
    return {"source": "simple_agent", "records": [invocation, tool], "gaps": []}


def _codes(trajectory):
    return [gap["code"] for gap in trajectory["gaps"]]


def test_projection_joins_owns_every_call_and_passes_the_p0_checks(tmp_path):
    capture, trajectory = project(
        _capture(tmp_path), _observations(), task_id="t-1", rollout_id="0-0", resolved=True
    )
    TrajectoryRecord.model_validate(trajectory)
    assert _codes(trajectory) == []
    (invocation,) = trajectory["invocations"]
    assert [ref["model_call_id"] for ref in invocation["model_calls"]] == ["mc_0", "mc_1", "mc_2"]
    assert all(ref["model_ref"] == MODEL_REF for ref in invocation["model_calls"])
    first, second = trajectory["turns"]
    assert [ref["model_call_id"] for ref in first["model_calls"]] == ["mc_0", "mc_1"]
    assert [ref["model_call_id"] for ref in second["model_calls"]] == ["mc_2"]
    assert (first["turn_no"], second["turn_no"], second["step_count"]) == (1, 2, 2)
    assert first["question"] == [USER] and second["question"] == [FUNCTION_CALL, OUTPUT]
    assert first["answer"] == [FUNCTION_CALL]
    assert (first["resolved"], second["resolved"]) == (None, True)
    (tool,) = trajectory["tool_calls"]
    assert tool["output"] == "42" and tool["tool_name"] == "calculate"
    call = trajectory["model_calls"][1]
    assert call["response_metadata"]["response_id"] == "resp_1"
    assert call["token_stats"]["prompt_tokens"] == 10 and call["duration_ms"] == 500.0
    # payloads now live in the trajectory only
    ModelCallCapture.model_validate(capture)
    assert all(c["request"] is None and c["response"] is None for c in capture["calls"])
    record = {
        "reward": 1.0,
        "evaluation_completed": True,
        "mask_sample": False,
        "ng_trajectory": trajectory,
    }
    result = check_record(record)
    failing = (
        [row for row in result.rows if row.status == "fail"] if hasattr(result, "rows") else []
    )
    assert result.verdict == "fulfilled", failing


def test_missing_observations_are_gaps_not_inventions(tmp_path):
    _, trajectory = project(_capture(tmp_path), None, task_id="t-1", rollout_id="0-0")
    TrajectoryRecord.model_validate(trajectory)
    assert trajectory["invocations"] == [] and trajectory["turns"] == []
    assert len(trajectory["model_calls"]) == 3
    assert _codes(trajectory).count("model_call_ownership_unavailable") == 3
    assert "turns_unavailable" in _codes(trajectory)


def test_unmatched_reference_is_kept_and_recorded(tmp_path):
    observations = _observations(refs=("resp_1", "resp_2", "resp_404"))
    _, trajectory = project(_capture(tmp_path), observations, task_id="t", rollout_id="0-0")
    assert _codes(trajectory) == ["model_call_reference_unmatched"]
    refs = trajectory["invocations"][0]["model_calls"]
    assert {"model_ref": MODEL_REF, "response_id": "resp_404", "model_call_id": None} in refs


def test_no_capture_file(tmp_path):
    capture = read_capture(tmp_path, "9-9")
    _, trajectory = project(capture, _observations(), task_id="t", rollout_id="9-9")
    codes = _codes(trajectory)
    assert "model_call_capture_no_records" in codes and "model_calls_unavailable" in codes
    assert codes.count("model_call_reference_unmatched") == 2


def test_invalid_observations_are_a_gap(tmp_path):
    broken = {"source": "x", "records": [{"kind": "agent_invocation"}]}
    _, trajectory = project(_capture(tmp_path), broken, task_id="t", rollout_id="0-0")
    assert "agent_observations_invalid" in _codes(trajectory)
