"""Artifact cases: one mutation of the conformant baseline, expected statuses."""

from __future__ import annotations

import json

import pytest

from gym_assets.conformance.artifact_checks import ARTIFACT_CHECK_IDS
from gym_assets.records.evidence import TOKEN_FIELDS
from gym_assets_tests.conformance.fixtures import (
    BASELINE_NOT_APPLICABLE,
    add_sandbox,
    baseline_record,
    calls,
    delete_path,
    failing,
    invocation,
    run,
    set_path,
    te,
    tool_calls,
    trajectory,
    turns,
)

ALL_TE = [f"TE-{n}" for n in range(1, 10)]


def assert_statuses(result, **expected: str) -> None:
    got = {key: str(result.status(key.replace("__", "."))) for key in expected}
    want = {key: value for key, value in expected.items()}
    assert got == want


def st(result, check_id: str) -> str:
    return str(result.status(check_id))


def test_baseline_passes_50_and_6_are_not_applicable() -> None:
    result = run(baseline_record())
    assert [r.id for r in result.rows] == list(ARTIFACT_CHECK_IDS)
    not_applicable = {r.id for r in result.rows if r.status == "not_applicable"}
    assert not_applicable == BASELINE_NOT_APPLICABLE
    assert {str(r.status) for r in result.rows} == {"pass", "not_applicable"}
    assert all(te(result, label) == "fulfilled" for label in ALL_TE)
    assert str(result.verdict) == "fulfilled" and result.findings == ()


def test_case_01_string_resolution() -> None:
    rec = set_path(baseline_record(), "ng_trajectory.turns[0].resolved", "true")
    result = run(rec)
    assert st(result, "steps.resolution") == "fail"
    for check_id in ("calls.outcome", "tokens.prompt_tokens", "steps.call_target"):
        assert st(result, check_id) == "pass"


def test_case_02_no_model_calls_blocks_dependents() -> None:
    rec = set_path(baseline_record(), "ng_trajectory.model_calls", [])
    result = run(rec)
    assert st(result, "model_calls.present") == "fail"
    assert st(result, "calls.outcome") == "fail"
    assert result.row("tokens.prompt_tokens").blocked_by == ("model_calls.present",)
    assert st(result, "steps.resolution") == "pass" and st(result, "tools.output") == "pass"
    assert not any(r.id.startswith("TE-") for r in result.rows)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda r: set_path(r, "ng_model_call_capture", {"calls": [False], "records": [False]}),
        lambda r: set_path(r, "ng_agent_observations", {"calls": [False], "records": [False]}),
    ],
)
def test_case_03_unused_copies_are_ignored(mutate) -> None:
    assert str(run(mutate(baseline_record())).verdict) == "fulfilled"


def test_case_04_no_fallback_to_duplicates() -> None:
    rec = baseline_record()
    delete_path(rec, "ng_trajectory.model_calls")
    delete_path(rec, "ng_trajectory.invocations")
    result = run(rec)
    for check_id in ("model_calls.present", "invocations.present", "steps.invocation_target"):
        assert st(result, check_id) == "fail"


@pytest.mark.parametrize("field", TOKEN_FIELDS)
@pytest.mark.parametrize("value", [-1, True, "10", 1.5])
def test_case_05_bad_token_counts(field: str, value) -> None:
    rec = set_path(baseline_record(), f"ng_trajectory.model_calls[0].token_stats.{field}", value)
    result = run(rec)
    assert failing(result) == {f"tokens.{field}"}


@pytest.mark.parametrize(("value", "available"), [(None, 1), (0, 2), (100, 2)])
def test_case_06_null_tokens_are_availability_not_failure(value, available: int) -> None:
    rec = set_path(
        baseline_record(), "ng_trajectory.model_calls[0].token_stats.prompt_tokens", value
    )
    result = run(rec)
    assert te(result, "TE-2") == "fulfilled"
    prompt = result.token_availability["prompt_tokens"]
    assert (prompt.available, prompt.calls) == (available, 2)


def test_case_07_no_clock_order_or_copy_consistency_checks() -> None:
    rec = baseline_record()
    set_path(rec, "ng_trajectory.model_calls[0].completed_at", 0)
    set_path(rec, "ng_trajectory.turns[0].rollout_id", "ignored-copy")
    assert str(run(rec).verdict) == "fulfilled"


def test_case_08_no_record() -> None:
    result = run(None)
    assert {str(r.status) for r in result.rows} <= {"fail", "not_applicable"}
    assert st(result, "calls.outcome") == "fail"
    assert result.row("calls.outcome").reasons[0].startswith("required input is unavailable")
    assert str(result.verdict) == "not_fulfilled"


def test_case_08_no_record_respects_scope() -> None:
    result = run(None, steps=False, tools=False, verifier=False)
    for check_id in ("turns.present", "tool_calls.present", "evaluation.reward"):
        assert st(result, check_id) == "not_applicable"
    assert st(result, "ownership.call_owner") == "fail"


def test_case_09_failure_shaped_row() -> None:
    result = run({"failure": "no rollout"})
    assert st(result, "model_calls.present") == "fail" and st(result, "calls.outcome") == "fail"


def test_case_10_compaction_helpers_and_accounting() -> None:
    rec = baseline_record()
    auxiliary = json.loads(json.dumps(calls(rec)[0]))
    auxiliary["model_call_id"] = "auxiliary"
    auxiliary["response_metadata"]["response_id"] = "response-auxiliary"
    calls(rec).append(auxiliary)
    invocation(rec)["model_calls"].append({"model_call_id": "auxiliary"})
    assert st(run(rec), "steps.attempt_accounting") == "fail"

    turns(rec)[0]["model_calls"].append({"model_call_id": "auxiliary"})
    assert st(run(rec), "steps.attempt_accounting") == "pass"

    compaction = {"kind": "context_compaction", "invocation_id": "invocation"}
    compaction["model_calls"] = [{"model_call_id": "auxiliary"}]
    rec["ng_agent_observations"]["records"].append(compaction)
    result = run(rec)
    assert st(result, "steps.compaction_target") == "pass"
    assert st(result, "steps.attempt_accounting") == "fail"

    turns(rec)[0]["model_calls"].pop()
    assert str(run(rec).verdict) == "fulfilled"

    trajectory(rec)["gaps"].append({"code": "turn_model_call_scope_incomplete"})
    assert failing(run(rec)) == {"steps.accounting_gap"}


def test_case_11_duplicate_call_object() -> None:
    rec = baseline_record()
    calls(rec).append(json.loads(json.dumps(calls(rec)[0])))
    result = run(rec)
    assert st(result, "calls.identity") == "pass"
    for check_id in ("ownership.call_target", "steps.call_target", "ownership.call_owner"):
        assert st(result, check_id) == "fail"


@pytest.mark.parametrize("value", [None, False, [], "wrong", [None]])
def test_case_12_turns_not_an_object_array(value) -> None:
    result = run(set_path(baseline_record(), "ng_trajectory.turns", value))
    assert st(result, "turns.present") == "fail" and st(result, "steps.number") == "fail"
    assert st(result, "calls.outcome") == "pass"


def test_case_13_tools_missing_unless_out_of_scope() -> None:
    rec = set_path(baseline_record(), "ng_trajectory.tool_calls", [])
    observations = rec["ng_agent_observations"]
    observations["records"] = [r for r in observations["records"] if r["kind"] != "tool_call"]
    result = run(rec)
    assert te(result, "TE-5") == "not_fulfilled" and st(result, "tool_calls.present") == "fail"
    scoped = run(rec, tools=False)
    assert st(scoped, "tool_calls.present") == "not_applicable"
    assert te(scoped, "TE-5") == "not_applicable" and str(scoped.verdict) == "fulfilled"


def test_case_14_self_parent() -> None:
    rec = baseline_record()
    invocation(rec)["parent_invocation_id"] = "invocation"
    result = run(rec)
    assert failing(result) == {"invocations.parent"}


def test_parent_chain_and_cycle() -> None:
    rec = baseline_record()
    child = {"invocation_id": "child", "parent_invocation_id": "invocation", "model_calls": []}
    trajectory(rec)["invocations"].append(child)
    assert st(run(rec), "invocations.parent") == "pass"
    invocation(rec)["parent_invocation_id"] = "child"
    assert st(run(rec), "invocations.parent") == "fail"
    invocation(rec)["parent_invocation_id"] = "nobody"
    assert st(run(rec), "invocations.parent") == "fail"


def test_case_15_turns_without_references() -> None:
    rec = baseline_record()
    for turn in turns(rec):
        del turn["model_calls"]
    result = run(rec)
    assert str(result.verdict) == "not_fulfilled" and te(result, "TE-9") == "not_fulfilled"
    assert st(result, "steps.references") == "fail" and result.row("steps.references").tier == "P0"
    assert result.row("steps.call_target").blocked_by == ("steps.references",)
    assert st(result, "steps.number") == "pass"


def test_case_16_no_invocations() -> None:
    result = run(delete_path(baseline_record(), "ng_trajectory.invocations"))
    for check_id in (
        "invocations.present",
        "invocations.identity",
        "steps.invocation_target",
        "tools.invocation_target",
    ):
        assert st(result, check_id) == "fail" and result.row(check_id).tier == "P0"
    assert str(result.verdict) == "not_fulfilled"


def test_case_17_unresolvable_image() -> None:
    image = {"type": "input_image", "image_url": "https://example.invalid/missing.png"}
    message = {"type": "message", "role": "user", "content": [image]}
    rec = set_path(baseline_record(), "ng_trajectory.model_calls[0].request.input", [message])
    result = run(rec)
    assert failing(result) == {"content.media"}
    assert te(result, "TE-4") == "not_fulfilled" and te(result, "TE-7") == "not_fulfilled"


@pytest.mark.parametrize(
    ("part", "ok"),
    [
        ({"type": "input_image", "image_url": "data:image/png;base64,aGVsbG8="}, True),
        ({"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8="}}, True),
        ({"type": "input_image", "image_url": "data:image/png;base64,"}, False),
        ({"type": "input_image", "image_url": "data:image/png;base64,***"}, False),
        ({"type": "input_image", "image_url": "data:image/png,aGVsbG8="}, False),
        ({"type": "input_file", "file_id": "file-1"}, False),
        ({"type": "input_file", "file_url": "https://x"}, False),
        ({"type": "reasoning", "encrypted_content": "opaque"}, False),
        ({"type": "reasoning", "encrypted_content": ""}, True),
    ],
)
def test_content_media_rules(part, ok: bool) -> None:
    message = {"type": "message", "role": "user", "content": [part]}
    rec = set_path(baseline_record(), "ng_trajectory.model_calls[1].request.input", [message])
    assert st(run(rec), "content.media") == ("pass" if ok else "fail")


def test_case_18_null_request() -> None:
    result = run(set_path(baseline_record(), "ng_trajectory.model_calls[0].request", None))
    assert te(result, "TE-4") == "not_fulfilled" and te(result, "TE-7") == "not_fulfilled"


def test_case_19_no_turns_no_tools() -> None:
    rec = baseline_record()
    set_path(rec, "ng_trajectory.turns", [])
    set_path(rec, "ng_trajectory.tool_calls", [])
    result = run(rec)
    assert str(result.verdict) == "not_fulfilled"
    assert te(result, "TE-3") == "not_fulfilled" and te(result, "TE-5") == "not_fulfilled"


def test_case_20_unknown_cached_and_reasoning_tokens() -> None:
    rec = baseline_record()
    for call in calls(rec):
        call["token_stats"]["cached_tokens"] = None
        call["token_stats"]["reasoning_tokens"] = None
        del call["response"]["usage"]["input_tokens_details"]
        del call["response"]["usage"]["output_tokens_details"]
    result = run(rec)
    assert te(result, "TE-2") == "fulfilled"
    assert result.token_availability["cached_tokens"].available == 0
    assert result.token_availability["reasoning_tokens"].available == 0
    assert result.token_availability["total_tokens"].available == 2


def test_case_21_success_without_termination_metadata() -> None:
    rec = baseline_record()
    for call in calls(rec):
        call["response_metadata"].update(response_status=None, finish_reason=None)
    result = run(rec)
    assert te(result, "TE-1") == "not_fulfilled" and failing(result) == {"calls.outcome"}


def test_case_22_tool_clocks_are_not_p0() -> None:
    rec = baseline_record()
    for tool in tool_calls(rec):
        for key in ("started_at", "completed_at", "duration_ms", "timing_source"):
            del tool[key]
    assert te(run(rec), "TE-5") == "fulfilled"


def test_case_23_unowned_calls() -> None:
    rec = baseline_record()
    invocation(rec)["model_calls"] = []
    result = run(rec)
    assert te(result, "TE-8") == "not_fulfilled" and te(result, "TE-9") == "fulfilled"
    assert str(result.verdict) == "not_fulfilled"
    assert failing(result) == {"ownership.call_owner"}


def test_case_24_same_ref_twice_on_a_step() -> None:
    rec = baseline_record()
    turns(rec)[0]["model_calls"] *= 2
    result = run(rec)
    assert te(result, "TE-9") == "not_fulfilled" and failing(result) == {"steps.attempt_accounting"}


def _grades(rec: dict, **fields) -> dict:
    rec.update(fields)
    return rec


@pytest.mark.parametrize("reward", [0.0, 1.0, -0.5])
def test_case_25_masked_with_failure_metadata(reward: float) -> None:
    rec = _grades(
        baseline_record(), mask_sample=True, failure_kind="judge_failed", failure_reason="judge"
    )
    rec["reward"] = reward
    result = run(rec)
    assert te(result, "TE-6") == "fulfilled"
    assert st(result, "evaluation.failure_kind") == "pass"


@pytest.mark.parametrize("field", ["mask_sample", "evaluation_completed"])
@pytest.mark.parametrize("value", [None, 0, "false"])
def test_case_26_grade_flags_must_be_boolean(field: str, value) -> None:
    result = run(_grades(baseline_record(), **{field: value}))
    assert te(result, "TE-6") == "not_fulfilled" and failing(result) == {f"evaluation.{field}"}


def test_case_27_failure_kind_without_mask_is_fine() -> None:
    result = run(_grades(baseline_record(), failure_kind="judge_failed"))
    assert te(result, "TE-6") == "fulfilled"
    assert st(result, "evaluation.failure_kind") == "not_applicable"


def test_case_28_reward_required_even_if_resolved() -> None:
    rec = baseline_record()
    del rec["reward"]
    for turn in turns(rec):
        turn["resolved"] = True
    result = run(rec)
    assert te(result, "TE-6") == "not_fulfilled" and failing(result) == {"evaluation.reward"}


def test_case_28_boolean_reward_fails() -> None:
    assert failing(run(_grades(baseline_record(), reward=True))) == {"evaluation.reward"}


def test_case_29_capture_is_not_needed_and_cannot_repair() -> None:
    rec = baseline_record()
    del rec["ng_model_call_capture"]
    assert str(run(rec).verdict) == "fulfilled"
    for call in calls(rec):
        call.update(started_at=None, completed_at=None, duration_ms=None)
    result = run(rec)
    assert str(result.verdict) == "not_fulfilled"
    assert any(f.assertion == "calls.timing" for f in result.findings)


def test_case_30_unretained_previous_response() -> None:
    rec = baseline_record()
    calls(rec)[0]["request"]["previous_response_id"] = "unretained-server-history"
    result = run(rec)
    assert te(result, "TE-4") == "not_fulfilled" and failing(result) == {
        "content.previous_response"
    }


def test_case_31_failed_response_needs_error_category() -> None:
    rec = baseline_record()
    call = calls(rec)[0]
    call["response_metadata"].update(response_id=None, response_status="failed")
    call["response"].update(id=None, status="failed", error={"code": "server_error"})
    assert te(run(rec), "TE-1") == "not_fulfilled"
    call["response_metadata"]["error_category"] = "server_error"
    assert te(run(rec), "TE-1") == "fulfilled"


def test_case_32_missing_resolved_key() -> None:
    rec = delete_path(baseline_record(), "ng_trajectory.turns[0].resolved")
    result = run(rec)
    assert te(result, "TE-3") == "not_fulfilled"
    assert {f.assertion for f in result.findings} == {"steps.resolution"}


@pytest.mark.parametrize("missing", [True, False])
def test_case_33_step_content_is_not_p0(missing: bool) -> None:
    rec = baseline_record()
    for turn in turns(rec):
        for key in ("question", "answer", "reasoning_content"):
            if missing:
                del turn[key]
            else:
                turn[key] = None
    result = run(rec)
    assert all(te(result, label) == "fulfilled" for label in ("TE-3", "TE-4", "TE-7", "TE-9"))


@pytest.mark.parametrize("field", ["tool_name", "status"])
def test_case_34_tool_name_and_status_required(field: str) -> None:
    result = run(delete_path(baseline_record(), f"ng_trajectory.tool_calls[0].{field}"))
    assert te(result, "TE-5") == "not_fulfilled"


def test_case_35_observations_are_not_needed() -> None:
    rec = baseline_record()
    del rec["ng_agent_observations"]
    assert str(run(rec).verdict) == "fulfilled"


@pytest.mark.parametrize("field", ["started_at", "completed_at"])
@pytest.mark.parametrize("value", ["missing", None, -0.01])
def test_case_36_call_clocks(field: str, value) -> None:
    rec = baseline_record()
    if value == "missing":
        del calls(rec)[0][field]
    else:
        calls(rec)[0][field] = value
    result = run(rec)
    assert failing(result) == {"calls.timing"}
    assert any("$.ng_trajectory.model_calls" in f.location for f in result.findings)
    # a missing key is reported at its object, a bad value at the value itself
    where = "$.ng_trajectory.model_calls[0]" + ("" if value == "missing" else f".{field}")
    assert where in result.row("calls.timing").locations


@pytest.mark.parametrize(
    ("path", "check_id"),
    [
        ("ng_trajectory.model_calls[0].model_call_id", "calls.identity"),
        ("ng_trajectory.turns[0].invocation_id", "steps.invocation"),
        ("ng_trajectory.tool_calls[0].tool_call_id", "tools.identity"),
        ("ng_trajectory.tool_calls[0].tool_name", "tools.name"),
        ("ng_trajectory.tool_calls[0].invocation_id", "tools.invocation"),
    ],
)
def test_case_37_blank_identifiers(path: str, check_id: str) -> None:
    assert st(run(set_path(baseline_record(), path, " \t")), check_id) == "fail"


@pytest.mark.parametrize("field", ["task_id", "rollout_id"])
def test_case_38_trajectory_identity(field: str) -> None:
    result = run(delete_path(baseline_record(), f"ng_trajectory.{field}"))
    assert failing(result) == {f"trajectory.{field}"}


def test_case_39_negative_timestamp() -> None:
    result = run(set_path(baseline_record(), "ng_trajectory.turns[0].timestamp", -1.0))
    assert failing(result) == {"steps.timestamp"}


@pytest.mark.parametrize("part", ["request", "response"])
def test_case_40_missing_payloads(part: str) -> None:
    result = run(delete_path(baseline_record(), f"ng_trajectory.model_calls[0].{part}"))
    assert st(result, f"calls.{part}") == "fail" and te(result, "TE-3") == "fulfilled"


@pytest.mark.parametrize(("output", "ok"), [(None, False), (False, False), (42, False),
                                            ("", True), ([], True), ({}, True)])  # fmt: skip
def test_case_41_tool_output(output, ok: bool) -> None:
    result = run(set_path(baseline_record(), "ng_trajectory.tool_calls[0].output", output))
    assert st(result, "tools.output") == ("pass" if ok else "fail")


def test_tool_output_missing_fails() -> None:
    result = run(delete_path(baseline_record(), "ng_trajectory.tool_calls[0].output"))
    assert failing(result) == {"tools.output"}


@pytest.mark.parametrize("field", ["evaluation_completed", "mask_sample"])
def test_case_42_missing_grade_flag(field: str) -> None:
    rec = baseline_record()
    del rec[field]
    result = run(rec)
    assert st(result, f"evaluation.{field}") == "fail" and te(result, "TE-6") == "not_fulfilled"


def test_case_43_incomplete_evaluation_with_metadata() -> None:
    rec = _grades(
        baseline_record(), evaluation_completed=False, failure_kind="k", failure_reason="r"
    )
    assert te(run(rec), "TE-6") == "fulfilled"


@pytest.mark.parametrize("missing", ["failure_kind", "failure_reason"])
def test_incomplete_evaluation_needs_metadata(missing: str) -> None:
    rec = _grades(
        baseline_record(), evaluation_completed=False, failure_kind="k", failure_reason="r"
    )
    rec[missing] = "  "
    assert failing(run(rec)) == {f"evaluation.{missing}"}


def test_case_44_required_sandbox() -> None:
    rec = baseline_record()
    assert te(run(rec), "TE-6") == "fulfilled"
    result = run(rec, require_sandbox=True)
    assert st(result, "sandbox.present") == "fail"
    assert result.row("sandbox.identity").blocked_by == ("sandbox.present",)
    add_sandbox(rec)
    result = run(rec, require_sandbox=True)
    assert te(result, "TE-6") == "fulfilled" and str(result.verdict) == "fulfilled"


def test_required_sandbox_without_observations() -> None:
    rec = baseline_record()
    del rec["ng_agent_observations"]
    assert st(run(rec, require_sandbox=True), "sandbox.present") == "fail"


@pytest.mark.parametrize(
    ("fields", "check_id"),
    [
        ({"sandbox_id": None}, "sandbox.identity"),
        ({"sandbox_id": "  "}, "sandbox.identity"),
        ({"outcome": "unknown"}, "sandbox.outcome"),
        ({"outcome": "failed"}, "sandbox.error"),
        ({"outcome": "oom", "error_type": " "}, "sandbox.error"),
        ({"outcome": "sandbox_error"}, "sandbox.error"),
    ],
)
def test_case_45_bad_sandbox_rows_fail_without_requirement(fields, check_id: str) -> None:
    rec = add_sandbox(baseline_record(), **fields)
    result = run(rec)
    assert failing(result) == {check_id} and te(result, "TE-6") == "not_fulfilled"
    assert st(result, "sandbox.present") == "not_applicable"


@pytest.mark.parametrize(
    "outcome", ["completed", "failed", "timeout", "oom", "sandbox_error", "cancelled"]
)
def test_case_46_all_terminal_sandbox_outcomes(outcome: str) -> None:
    rec = add_sandbox(baseline_record(), outcome=outcome, error_type="example")
    result = run(rec, require_sandbox=True)
    assert te(result, "TE-6") == "fulfilled" and str(result.verdict) == "fulfilled"


def test_case_47_step_without_references() -> None:
    result = run(set_path(baseline_record(), "ng_trajectory.turns[0].model_calls", []))
    assert st(result, "steps.references") == "fail"
