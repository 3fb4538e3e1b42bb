"""Behavioral checks through ``check_record``'s seam: they gate the record, not the artifacts."""

from __future__ import annotations

import dataclasses

import pytest

from gym_assets.conformance.behavioral_checks import behavioral_source
from gym_assets.conformance.checker import check_record
from gym_assets.conformance.engine import Check, Kind, Status
from gym_assets.conformance.result import te_verdicts
from gym_assets.conformance.scope import EvidenceScope
from gym_assets_tests.conformance import fixtures as fx
from gym_assets_tests.conformance.witness_fixtures import BASELINE, SCENARIOS, baseline_witness


def scenario_result(record, witness, prescription=BASELINE, scope=None):
    scope = scope or EvidenceScope()
    return check_record(record, scope, extra_checks=[behavioral_source(witness, prescription)])


def artifact_te(result, scope=None):
    rows = [r for r in result.rows if r.kind is not Kind.BEHAVIORAL]
    return {k: str(v.verdict) for k, v in te_verdicts(rows, scope or EvidenceScope()).items()}


def test_baseline_episode_is_fulfilled_with_behavioral_rows():
    result = scenario_result(fx.baseline_record(), baseline_witness())
    assert result.passed
    assert result.status("model.saved_exchanges") == Status.PASS
    assert len(result.rows) == 56 + 21


def test_duplicate_witness_attempt_fails_the_record_but_not_the_artifacts():
    witness = baseline_witness()
    doubled = dataclasses.replace(witness, attempts=(*witness.attempts, witness.attempts[0]))
    result = scenario_result(fx.baseline_record(), doubled)
    assert not result.passed
    assert set(artifact_te(result).values()) == {"fulfilled"}
    issues = [reason for row in result.rows if row.status == "fail" for reason in row.reasons]
    assert any("canonical" in issue for issue in issues)


def test_deleted_witness_fails_behavioral_rows_only():
    result = scenario_result(fx.baseline_record(), None)
    behavioral = [r for r in result.rows if r.kind is Kind.BEHAVIORAL]
    assert {r.status for r in behavioral} <= {Status.FAIL, Status.NOT_APPLICABLE}
    assert not result.passed
    assert set(artifact_te(result).values()) == {"fulfilled"}


def test_tool_witness_failure_leaves_the_tool_artifact_verdict_fulfilled():
    record = fx.baseline_record()
    fx.tool_calls(record)[0]["status"] = "failed"
    result = scenario_result(record, baseline_witness())
    assert result.status("tools.witness_status") == Status.FAIL
    assert artifact_te(result)["TE-5"] == "fulfilled"
    assert not result.passed


def test_model_error_without_a_rollout_row():
    scenario = SCENARIOS["model_error"]
    scope = EvidenceScope.for_scenario(tool_steps=0, terminal_error=True, steps=False)
    witness = dataclasses.replace(baseline_witness(), tool_calls=(), finished=False)
    result = scenario_result(None, witness, scenario, scope)
    assert result.row("calls.outcome").reasons[0].startswith("required input is unavailable")
    for check in ("tool_calls.present", "evaluation.reward", "turns.present", "tools.witness_ids"):
        assert result.status(check) == Status.NOT_APPLICABLE
    assert result.status("model.saved_exchanges") == Status.FAIL
    assert str(result.evidence["TE-1"].verdict) == "not_fulfilled"


@pytest.mark.parametrize(("tier", "passes"), [("P0", False), ("P1", True), ("P2", True)])
def test_only_a_failing_p0_behavioral_row_fails_the_record(tier, passes):
    def extra(context):
        yield Check(
            id="probe.extra",
            tier=tier,
            kind=Kind.BEHAVIORAL,
            location="witness.json",
            reason="an extra behavioral expectation was not met",
            predicate=lambda: False,
        )

    sources = [behavioral_source(baseline_witness(), BASELINE), extra]
    result = check_record(fx.baseline_record(), EvidenceScope(), extra_checks=sources)
    assert result.passed is passes
    assert result.status("probe.extra") == Status.FAIL
