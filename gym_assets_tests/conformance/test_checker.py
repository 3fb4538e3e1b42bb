"""check_record as a whole: gaps, scope, TE verdicts, findings, the extra_checks seam."""

from __future__ import annotations

import json

import pytest

from gym_assets.conformance.checker import CheckContext, check_record, select_record
from gym_assets.conformance.engine import Check, CheckDefinitionError, Status
from gym_assets.conformance.profiles import PROFILE_ID
from gym_assets.conformance.result import TE_NAMES
from gym_assets.conformance.scope import EvidenceScope
from gym_assets_tests.conformance.fixtures import (
    add_gap,
    baseline_record,
    delete_path,
    failing,
    run,
    set_path,
    te,
    turns,
)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("model_call_capture_incomplete", {"calls.capture_gap"}),
        ("agent_observation_join_failed", {"calls.capture_gap"}),
        ("model_call_reference_unmatched", {"ownership.gap"}),
        ("model_call_ownership_unavailable", {"ownership.gap"}),
        ("turns_unavailable", {"steps.gap"}),
        ("trajectory_projection_failed", {"steps.gap"}),
        ("turn_model_call_scope_incomplete", {"steps.accounting_gap"}),
        ("tool_timing_unavailable", set()),
        ("multimodal_history_redacted", set()),
    ],
)
def test_gap_codes(code: str, expected: set[str]) -> None:
    result = run(add_gap(baseline_record(), code))
    assert failing(result) == expected
    if expected:
        assert result.row(next(iter(expected))).locations[-1] == "$.ng_trajectory.gaps[0]"


def test_step_gaps_do_not_apply_without_steps() -> None:
    rec = add_gap(baseline_record(), "turns_unavailable")
    add_gap(rec, "turn_model_call_scope_incomplete")
    result = run(rec, steps=False)
    assert result.status("steps.gap") == "not_applicable"
    assert result.status("steps.accounting_gap") == "not_applicable"
    assert str(result.verdict) == "fulfilled"


def test_capture_gap_fails_all_its_te_labels() -> None:
    result = run(add_gap(baseline_record(), "model_call_capture_no_records"))
    for label in ("TE-1", "TE-4", "TE-7", "TE-8", "TE-9"):
        assert te(result, label) == "not_fulfilled"
    assert te(result, "TE-2") == "fulfilled"


def test_gaps_outside_the_trajectory_are_ignored() -> None:
    rec = baseline_record()
    rec["ng_model_call_capture"]["gaps"] = [{"code": "model_call_capture_incomplete"}]
    rec["ng_agent_observations"]["gaps"] = [{"code": "turns_unavailable"}]
    assert str(run(rec).verdict) == "fulfilled"


STEP_SCOPED = ("turns.present", "steps.number", "steps.call_owner", "steps.attempt_accounting")
ALWAYS = ("calls.identity", "calls.timing", "calls.outcome", "ownership.call_owner")


@pytest.mark.parametrize("steps", [False, True])
def test_case_93_steps_scope(steps: bool) -> None:
    rec = set_path(baseline_record(), "ng_trajectory.turns", [])
    result = run(rec, steps=steps)
    for check_id in STEP_SCOPED:
        assert result.status(check_id) == ("fail" if steps else "not_applicable")
    for check_id in ALWAYS:
        assert result.status(check_id) != "not_applicable"
    assert te(result, "TE-3") == ("not_fulfilled" if steps else "not_applicable")
    assert te(result, "TE-9") == ("not_fulfilled" if steps else "not_applicable")


def test_case_92_model_error_scope_without_record() -> None:
    scope = EvidenceScope.for_scenario(tool_steps=0, terminal_error=True, steps=False)
    result = check_record(None, scope)
    assert result.row("calls.outcome").reasons[0].startswith("required input is unavailable")
    for check_id in (
        "tool_calls.present",
        "evaluation.reward",
        "turns.present",
        "steps.attempt_accounting",
    ):
        assert result.status(check_id) == "not_applicable"
    assert te(result, "TE-1") == "not_fulfilled"
    assert {te(result, label) for label in ("TE-3", "TE-5", "TE-6", "TE-9")} == {"not_applicable"}


@pytest.mark.parametrize(
    "path_value",
    [
        ("ng_trajectory.turns[0].resolved", "wrong"),
        ("ng_trajectory.model_calls[0].response_metadata", False),
        ("ng_trajectory.tool_calls[0].tool_call_id", []),
    ],
)
def test_case_88_malformed_fields_stay_local(path_value) -> None:
    result = run(set_path(baseline_record(), *path_value))
    assert failing(result) and result.status("tokens.prompt_tokens") == "pass"


def test_case_91_all_turn_refs_emptied() -> None:
    rec = baseline_record()
    for turn in turns(rec):
        turn["model_calls"] = []
    result = run(rec)
    assert te(result, "TE-8") == "fulfilled" and te(result, "TE-9") == "not_fulfilled"
    assert str(result.verdict) == "not_fulfilled"


def test_case_80_artifact_part() -> None:
    rec = baseline_record()
    del rec["ng_agent_observations"]
    assert str(run(rec).verdict) == "fulfilled"
    delete_path(rec, "ng_trajectory.tool_calls")
    delete_path(rec, "ng_trajectory.invocations")
    assert str(run(rec).verdict) == "not_fulfilled"


def test_result_shape_and_findings() -> None:
    rec = set_path(baseline_record(), "ng_trajectory.model_calls[0].started_at", -1)
    result = check_record(rec, source="rollouts.jsonl:7")
    payload = result.to_dict()
    assert payload["profile"] == PROFILE_ID == "gym-p0/v3"
    assert payload["verdict"] == "not_fulfilled"
    assert payload["is_behavioral_qualification"] is False
    assert payload["scope_closure"] == "not_independently_witnessed"
    assert set(payload["evidence"]) == set(TE_NAMES)
    assert payload["evidence"]["TE-1"] == {
        "name": "model_call_status",
        "verdict": "not_fulfilled",
        "basis": "retained_artifacts",
    }
    assert payload["token_availability"]["prompt_tokens"] == {"available": 2, "calls": 2}
    assert [f.to_dict() for f in result.findings] == [
        {
            "evidence": "TE-1",
            "assertion": "calls.timing",
            "location": f"rollouts.jsonl:7:{location}",
            "reason": result.row("calls.timing").reasons[0],
        }
        for location in ("$.ng_trajectory.model_calls", "$.ng_trajectory.model_calls[0].started_at")
    ]
    json.dumps(payload)


def test_deterministic_output() -> None:
    rec = set_path(baseline_record(), "ng_trajectory.turns", "wrong")
    first = json.dumps(run(rec).to_dict(), sort_keys=True)
    assert first == json.dumps(run(rec).to_dict(), sort_keys=True)


def _behavioral(status_holder: dict, *, passed: bool, tier: str = "P0", evidence=()):
    def source(ctx: CheckContext):
        status_holder["present"] = ctx.results.status("model_calls.present")
        yield Check(
            id="model.saved_exchanges",
            tier=tier,
            kind="behavioral",
            evidence=evidence,
            location="witness.json",
            reason="retained model attempts differ from the witness",
            depends_on=("model_calls.present",),
            predicate=lambda: passed,
        )

    return source


def test_extra_checks_join_the_gate_but_not_the_te_verdicts() -> None:
    seen: dict = {}
    result = check_record(baseline_record(), extra_checks=[_behavioral(seen, passed=False)])
    assert seen["present"] is Status.PASS
    assert result.rows[-1].id == "model.saved_exchanges" and len(result.rows) == 57
    assert str(result.verdict) == "not_fulfilled"
    assert all(v.verdict == "fulfilled" for v in result.evidence.values())
    assert result.findings == ()  # no TE labels → no findings


@pytest.mark.parametrize(("tier", "verdict"), [("P0", "not_fulfilled"), ("P1", "fulfilled")])
def test_extra_check_tier_decides_the_gate(tier: str, verdict: str) -> None:
    result = check_record(
        baseline_record(), extra_checks=[_behavioral({}, passed=False, tier=tier)]
    )
    assert str(result.verdict) == verdict


def test_extra_checks_are_blocked_by_artifact_prerequisites() -> None:
    rec = set_path(baseline_record(), "ng_trajectory.model_calls", [])
    result = check_record(rec, extra_checks=[_behavioral({}, passed=True)])
    assert result.row("model.saved_exchanges").blocked_by == ("model_calls.present",)


def test_extra_check_cannot_redefine_an_artifact_check() -> None:
    def source(ctx: CheckContext):
        yield Check(
            id="calls.outcome",
            tier="P1",
            kind="schema",
            evidence=("TE-1",),
            location="$",
            reason="x",
            schema={},
        )

    with pytest.raises(CheckDefinitionError, match="conflicting definition"):
        check_record(baseline_record(), extra_checks=[source])


def test_select_record() -> None:
    row = baseline_record()
    sidecar = {"_ng_failure_class": "judge_failed"}
    assert select_record([row]) is row
    assert select_record([row, sidecar]) is row
    assert select_record([sidecar]) is None
    assert select_record([]) is None
    assert select_record([row, baseline_record()]) is None
    assert str(check_record(select_record([sidecar])).verdict) == "not_fulfilled"
