"""Semantic joins beyond the numbered cases: tool requests, step owners, error attempts."""

from __future__ import annotations

import pytest

from gym_assets_tests.conformance.fixtures import (
    add_call,
    add_observation,
    baseline_call,
    baseline_record,
    failing,
    full_ref,
    invocation,
    run,
    trajectory,
    turns,
)


def _conversation(rec: dict) -> list[dict]:
    return invocation(rec)["conversation"]


@pytest.mark.parametrize(
    "mutate",
    [
        lambda conv: conv.pop(1),  # the function_call for tool-1 is gone
        lambda conv: conv.append(dict(conv[1])),  # requested twice
        lambda conv: conv[1].update(name="other_tool"),
        lambda conv: conv[1].update(arguments={"key": "example"}),
    ],
)
def test_tool_request_join(mutate) -> None:
    rec = baseline_record()
    mutate(_conversation(rec))
    assert failing(run(rec)) == {"tools.request"}


def test_tool_request_only_searches_the_owning_invocation() -> None:
    rec = baseline_record()
    moved = _conversation(rec).pop(1)
    trajectory(rec)["invocations"].append(
        {"invocation_id": "other", "model_calls": [], "conversation": [moved]}
    )
    assert failing(run(rec)) == {"tools.request"}


def test_tool_owned_by_unknown_invocation() -> None:
    rec = baseline_record()
    trajectory(rec)["tool_calls"][0]["invocation_id"] = "ghost"
    result = run(rec)
    assert result.status("tools.invocation_target") == "fail"
    assert result.row("tools.request").blocked_by == ("tools.invocation_target",)


def test_step_may_not_reference_another_invocations_call() -> None:
    rec = baseline_record()
    extra = baseline_call(1)
    extra["model_call_id"] = "attempt-sub"
    extra["response_metadata"]["response_id"] = "response-sub"
    add_call(rec, extra, step=0)
    trajectory(rec)["invocations"].append(
        {
            "invocation_id": "sub",
            "parent_invocation_id": "invocation",
            "model_calls": [full_ref(extra)],
        }
    )
    assert failing(run(rec)) == {"steps.call_owner"}


def _error_attempt(status: int) -> dict:
    call = baseline_call(1)
    call["model_call_id"] = f"attempt-http-{status}"
    call["response"] = {"error": {"code": "rate_limited"}}
    call["response_metadata"].update(
        response_id=None, status_code=status, response_status=None, error_category="rate_limit"
    )
    call["token_stats"] = {}
    return call


def _error_ref(call: dict) -> dict:
    return {"model_call_id": call["model_call_id"]}


@pytest.mark.parametrize(("on_steps", "ok"), [(0, True), (1, True), (2, False)])
def test_http_error_attempts_may_stay_unbound(on_steps: int, ok: bool) -> None:
    rec = baseline_record()
    attempt = _error_attempt(429)
    add_call(rec, attempt, index=0)
    invocation(rec)["model_calls"].insert(0, _error_ref(attempt))
    turns(rec)[0]["model_calls"][:0] = [_error_ref(attempt)] * on_steps
    assert failing(run(rec)) == (set() if ok else {"steps.attempt_accounting"})


def test_unbound_successful_policy_call_fails_accounting() -> None:
    rec = baseline_record()
    turns(rec)[1]["model_calls"] = [full_ref(c) for c in trajectory(rec)["model_calls"][:1]]
    assert "steps.attempt_accounting" in failing(run(rec))


def test_error_attempt_needs_an_owner() -> None:
    rec = baseline_record()
    add_call(rec, _error_attempt(500))
    assert failing(run(rec)) == {"ownership.call_owner"}


@pytest.mark.parametrize(
    "compaction",
    [
        {"kind": "context_compaction", "invocation_id": "invocation"},
        {"kind": "context_compaction", "model_calls": [{"response_id": "response-1"}]},
        {"kind": "context_compaction", "model_calls": [{"model_call_id": "missing"}]},
    ],
)
def test_compaction_refs_must_resolve(compaction: dict) -> None:
    result = run(add_observation(baseline_record(), compaction))
    assert result.status("steps.compaction_target") == "fail"
    assert result.row("steps.attempt_accounting").blocked_by == ("steps.compaction_target",)


def test_compaction_is_step_scoped() -> None:
    bad = {"kind": "context_compaction", "model_calls": "nope"}
    result = run(add_observation(baseline_record(), bad), steps=False)
    assert result.status("steps.compaction_target") == "not_applicable"
    assert str(result.verdict) == "fulfilled"


def test_only_helpers_means_no_policy_calls() -> None:
    rec = baseline_record()
    refs = [full_ref(c) for c in trajectory(rec)["model_calls"]]
    add_observation(rec, {"kind": "context_compaction", "model_calls": refs})
    for turn in turns(rec):
        turn["model_calls"] = [refs[0]]
    assert "steps.attempt_accounting" in failing(run(rec))
