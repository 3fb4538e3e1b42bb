"""Rollout health checks judged against scenario expectations."""

from __future__ import annotations

import dataclasses
import json

import pytest

from gym_assets.conformance import health as health_module
from gym_assets.conformance.checker import check_record
from gym_assets.conformance.engine import Kind, Status, Tier, gate_passes
from gym_assets.conformance.health import (
    HEALTH_CHECK_IDS,
    HealthConfigError,
    HealthInput,
    health_source,
    judge_rollout,
    run_health,
    validate_expectations,
)
from gym_assets.conformance.scope import EvidenceScope
from gym_assets_tests.conformance import fixtures as fx

USAGE_OMITTED = {
    "model_call_missing_token_counts": "unhealthy",
    "rollout_token_count_mismatch": "unobserved",
}
MODEL_ERROR = {
    "rollout_ended_on_failed_model_call": "unhealthy",
    "rollout_token_count_mismatch": "unobserved",
}
NO_STEPS = EvidenceScope(tools=False, verifier=False, steps=False)


def healthy_record():
    """The baseline plus a rollout usage equal to the sum over its two calls (20/10/30)."""
    record = fx.baseline_record()
    record["response"]["usage"] = {"input_tokens": 20, "output_tokens": 10, "total_tokens": 30}
    return record


def write_episode(tmp_path, rollouts=None, failures=None, raw=None):
    if rollouts is not None:
        text = "".join(json.dumps(r) + "\n" for r in rollouts)
        (tmp_path / "rollouts.jsonl").write_text(text + (raw or ""))
    if failures is not None:
        text = "".join(json.dumps(r) + "\n" for r in failures)
        (tmp_path / "rollouts_failures.jsonl").write_text(text)
    return tmp_path


def health(tmp_path, rollouts=None, expectations=None, scope=None, **kwargs):
    directory = write_episode(tmp_path, rollouts, **kwargs)
    return run_health(directory, expectations, scope or EvidenceScope())


def row(results, check_id):
    return results.get(f"health.{check_id}")


def test_healthy_baseline_passes_every_rollout_check(tmp_path):
    results = health(tmp_path, [healthy_record()])
    assert {r.id for r in results.rows()} == {f"health.{c}" for c in HEALTH_CHECK_IDS}
    assert {r.status for r in results.rows()} == {Status.PASS}
    assert {(r.tier, r.kind, r.evidence) for r in results.rows()} == {(Tier.P0, Kind.HEALTH, ())}
    assert row(results, "record_unreadable").locations == ("rollouts.jsonl:1",)
    assert gate_passes(results.rows())


def _strip_usage(record):
    for call in fx.calls(record):
        call["token_stats"] = {}
    record["response"].pop("usage", None)
    return record


def test_missing_counts_and_unobserved_usage(tmp_path):
    record = _strip_usage(healthy_record())
    results = health(tmp_path, [record])
    assert row(results, "model_call_missing_token_counts").status == Status.FAIL
    mismatch = row(results, "rollout_token_count_mismatch")
    assert mismatch.reasons == ("expected healthy; observed unobserved",)
    assert gate_passes(run_health(tmp_path, USAGE_OMITTED, EvidenceScope()).rows())

    fx.add_gap(record, "turns_unavailable")
    hollow = health(tmp_path, [record], USAGE_OMITTED)
    assert row(hollow, "agent_turn_hollow").status == Status.FAIL
    assert not gate_passes(hollow.rows())


def test_rollout_usage_not_matching_its_calls_is_unhealthy(tmp_path):
    record = healthy_record()
    record["response"]["usage"]["input_tokens"] = 999
    results = health(tmp_path, [record])
    assert row(results, "rollout_token_count_mismatch").reasons == (
        "expected healthy; observed unhealthy",
    )
    assert not gate_passes(results.rows())
    artifact = check_record(record, EvidenceScope())
    assert artifact.passed


def test_expectation_of_unhealthy_fails_on_a_healthy_record(tmp_path):
    expectations = {"rollout_ended_on_failed_model_call": "unhealthy"}
    results = health(tmp_path, [healthy_record()], expectations)
    assert row(results, "rollout_ended_on_failed_model_call").reasons == (
        "expected unhealthy; observed healthy",
    )


def _failed_attempt(status):
    call = fx.baseline_call(1)
    call["model_call_id"] = f"attempt-{status}"
    call["response"] = {"error": {"message": "controlled model failure", "code": str(status)}}
    call["response_metadata"].update(
        status_code=status, response_id=None, response_status=None, error_category="http_error"
    )
    call["token_stats"] = {}
    return call


def _capture_like_trajectory(record):
    record["ng_model_call_capture"]["calls"] = [
        {"model_call_id": c["model_call_id"]} for c in fx.calls(record)
    ]


@pytest.mark.parametrize("status", [429, 500])
def test_recovered_failed_attempt_keeps_a_retry_scenario_healthy(tmp_path, status):
    record = healthy_record()
    fx.add_call(record, _failed_attempt(status), index=0, own=True)
    _capture_like_trajectory(record)
    results = health(tmp_path, [record])
    assert gate_passes(results.rows()), [r for r in results.rows() if r.status == "fail"]


def terminal_error_record():
    record = healthy_record()
    trajectory = fx.trajectory(record)
    trajectory["model_calls"] = [_failed_attempt(400)]
    trajectory["turns"] = []
    trajectory["tool_calls"] = []
    fx.invocation(record)["model_calls"] = [fx.full_ref(trajectory["model_calls"][0])]
    record["response"] = {"id": None, "status": "failed", "output": []}
    _capture_like_trajectory(record)
    return record


def test_terminal_model_error_meets_the_model_error_expectations(tmp_path):
    results = health(tmp_path, [terminal_error_record()], MODEL_ERROR, NO_STEPS)
    assert gate_passes(results.rows())
    for check in ("rollout_missing_agent_turns", "agent_turn_hollow"):
        assert row(results, check).status == Status.NOT_APPLICABLE
    assert not gate_passes(health(tmp_path, [terminal_error_record()], None, NO_STEPS).rows())


def test_missing_or_empty_inputs_have_no_health_result(tmp_path):
    for directory in (tmp_path / "missing", write_episode(tmp_path, rollouts=[])):
        directory.mkdir(exist_ok=True)
        results = run_health(directory, USAGE_OMITTED, EvidenceScope())
        assert not gate_passes(results.rows())
        mismatch = row(results, "rollout_token_count_mismatch")
        assert mismatch.status == Status.FAIL
        assert mismatch.reasons == (
            "required input is unavailable; expected unobserved; observed no health result",
        )


def test_malformed_line_is_an_unreadable_record_and_nothing_else_is_observed(tmp_path):
    results = health(tmp_path, [], USAGE_OMITTED, raw='{"reward": NaN}\n')
    assert not gate_passes(results.rows())
    assert row(results, "record_unreadable").status == Status.FAIL
    assert row(results, "rollout_token_count_mismatch").status == Status.PASS
    assert judge_rollout(HealthInput("x:1", None))["model_call_failed"] == "unobserved"


def test_failure_sidecar_alone_is_judged_and_unhealthy(tmp_path):
    sidecar = {"_ng_failure_class": "judge_failed", "_ng_task_index": 0}
    results = health(tmp_path, None, USAGE_OMITTED, failures=[sidecar])
    assert not gate_passes(results.rows())
    assert row(results, "rollout_token_count_mismatch").status == Status.PASS
    assert row(results, "rollout_missing_agent_turns").locations == ("rollouts_failures.jsonl:1",)


def test_every_rollout_must_meet_the_expectation(tmp_path):
    mismatching = healthy_record()
    mismatching["response"]["usage"]["total_tokens"] = 31
    expectations = {"rollout_token_count_mismatch": "unhealthy"}
    results = health(tmp_path, [mismatching, healthy_record()], expectations)
    mismatch = row(results, "rollout_token_count_mismatch")
    assert mismatch.status == Status.FAIL
    assert "expected unhealthy; observed healthy" in mismatch.reasons
    assert set(mismatch.locations) == {"rollouts.jsonl:1", "rollouts.jsonl:2"}


@pytest.mark.parametrize(
    "expectations",
    [{"no_such_check": "healthy"}, {"model_call_failed": "sick"}, {"model_call_failed": None}],
)
def test_bad_expectations_are_configuration_errors(tmp_path, expectations):
    with pytest.raises(HealthConfigError):
        validate_expectations(expectations)
    with pytest.raises(HealthConfigError):
        run_health(tmp_path, expectations, EvidenceScope())


def test_new_checks_default_to_healthy():
    assert validate_expectations(None) == dict.fromkeys(HEALTH_CHECK_IDS, "healthy")
    assert validate_expectations(USAGE_OMITTED)["model_call_failed"] == "healthy"


@pytest.mark.parametrize(
    ("mutate", "check"),
    [
        (lambda r: fx.calls(r)[0]["token_stats"].update(completion_tokens=0),
         "model_call_zero_completion_tokens"),
        (lambda r: fx.calls(r)[0]["response_metadata"].update(finish_reason="length"),
         "model_call_runaway_generation"),
        (lambda r: fx.calls(r)[0]["response_metadata"].update(response_status="failed"),
         "model_call_failed"),
        (lambda r: r["ng_model_call_capture"]["calls"].pop(), "trajectory_capture_mismatch"),
        (lambda r: r["ng_model_call_capture"].update(calls=[False]), "trajectory_capture_mismatch"),
        (lambda r: fx.trajectory(r).update(turns=[]), "rollout_missing_agent_turns"),
        (lambda r: fx.turns(r)[0].update(answer=None, reasoning_content=None), "agent_turn_hollow"),
        (lambda r: fx.calls(r).append(_failed_attempt(500)), "rollout_ended_on_failed_model_call"),
    ],
)  # fmt: skip
def test_each_symptom_makes_its_check_unhealthy(mutate, check):
    record = healthy_record()
    mutate(record)
    verdicts = judge_rollout(HealthInput("rollouts.jsonl:1", record))
    assert verdicts[check] == "unhealthy"
    assert judge_rollout(HealthInput("rollouts.jsonl:1", healthy_record()))[check] == "healthy"


def test_health_rows_join_the_record_gate_without_touching_te_verdicts():
    record = healthy_record()
    record["response"]["usage"]["input_tokens"] = 999
    source = health_source([HealthInput("rollouts.jsonl:1", record)], None)
    result = check_record(record, EvidenceScope(), extra_checks=[source])
    assert result.status("health.rollout_token_count_mismatch") == Status.FAIL
    assert not result.passed
    assert {str(v.verdict) for v in result.evidence.values()} == {"fulfilled"}
    assert not [f for f in result.findings if f.assertion.startswith("health.")]


def test_two_records_of_one_rollout_are_both_duplicate_identities(tmp_path):
    twin = healthy_record()
    results = health(tmp_path, [twin, json.loads(json.dumps(twin))])
    duplicate = row(results, "rollout_duplicate_identity")
    assert duplicate.status == Status.FAIL
    assert set(duplicate.locations) == {"rollouts.jsonl:1", "rollouts.jsonl:2"}
    assert duplicate.reasons == ("expected healthy; observed unhealthy",)
    others = [r for r in results.rows() if r.id != "health.rollout_duplicate_identity"]
    assert {r.status for r in others} == {Status.PASS}


def test_records_of_other_rollouts_or_without_indices_are_not_duplicates(tmp_path):
    first, second, unindexed = healthy_record(), healthy_record(), healthy_record()
    second["_ng_rollout_index"] = first["_ng_rollout_index"] + 1
    for record in (unindexed, json.loads(json.dumps(unindexed))):
        record.pop("_ng_task_index", None)
    results = health(tmp_path, [first, second])
    assert row(results, "rollout_duplicate_identity").status == Status.PASS
    verdicts = judge_rollout(HealthInput("rollouts.jsonl:1", unindexed))
    assert verdicts["rollout_duplicate_identity"] == "healthy"


def test_equal_indices_of_another_type_are_another_identity(tmp_path):
    first, second = healthy_record(), healthy_record()
    second["_ng_task_index"] = str(first["_ng_task_index"])
    assert row(health(tmp_path, [first, second]), "rollout_duplicate_identity").status == "pass"


def _sidecar_row(record, attempt=0):
    row_ = {"_ng_failure_class": "environment_server_failed", "_ng_failure_terminal": True}
    row_ |= {k: record[k] for k in ("_ng_task_index", "_ng_rollout_index")}
    return row_ | ({"_ng_attempt_index": attempt} if attempt else {})


def test_the_record_of_a_failed_model_call_stands_for_its_rollout(tmp_path):
    """model_error: the masked record and its sidecar row are one rollout, judged once."""
    record = terminal_error_record()
    results = health(tmp_path, [record], MODEL_ERROR, NO_STEPS, failures=[_sidecar_row(record)])
    assert gate_passes(results.rows()), [r for r in results.rows() if r.status == "fail"]
    assert row(results, "rollout_duplicate_identity").status == Status.PASS
    assert row(results, "rollout_ended_on_failed_model_call").locations == ("rollouts.jsonl:1",)


def test_an_earlier_failed_attempt_is_superseded_by_the_record(tmp_path):
    record = healthy_record()
    earlier = _sidecar_row(record)
    record["_ng_attempt_index"] = 1
    results = health(tmp_path, [record], failures=[earlier])
    assert gate_passes(results.rows())
    assert row(results, "record_unreadable").locations == ("rollouts.jsonl:1",)


def test_failure_rows_of_one_rollout_are_attempts_not_duplicates(tmp_path):
    record = healthy_record()
    attempts = [_sidecar_row(record, attempt) for attempt in range(3)]
    results = health(tmp_path, None, USAGE_OMITTED, failures=attempts)
    assert row(results, "rollout_duplicate_identity").status == Status.PASS
    assert len(row(results, "record_unreadable").locations) == 3


def _raising(view, run):
    raise KeyError("a bug in a check")


def test_a_check_that_raises_is_unobserved_and_a_check_execution_error(tmp_path, monkeypatch):
    broken = dataclasses.replace(health_module.ROLLOUT_HEALTH_CHECKS[-1], judge=_raising)
    monkeypatch.setattr(
        health_module, "ROLLOUT_HEALTH_CHECKS", (*health_module.ROLLOUT_HEALTH_CHECKS[:-1], broken)
    )
    verdicts = judge_rollout(HealthInput("rollouts.jsonl:1", healthy_record()))
    assert verdicts[broken.id] == "unobserved"
    assert verdicts["check_execution_error"] == "unhealthy"
    assert verdicts["rollout_token_count_mismatch"] == "healthy"  # the others still judged
    results = health(tmp_path, [healthy_record()])
    assert row(results, "check_execution_error").reasons == (
        "expected healthy; observed unhealthy",
    )
    assert row(results, broken.id).reasons == ("expected healthy; observed unobserved",)
    assert not gate_passes(results.rows())


def test_an_unreadable_line_is_no_check_execution_error():
    verdicts = judge_rollout(HealthInput("rollouts.jsonl:1", None))
    assert verdicts["check_execution_error"] == "unobserved"
    assert verdicts["record_unreadable"] == "unhealthy"
    assert judge_rollout(HealthInput("x:1", healthy_record()))["check_execution_error"] == "healthy"


def test_twelve_rollout_checks_as_the_reference_registry_has():
    assert len(HEALTH_CHECK_IDS) == len(set(HEALTH_CHECK_IDS)) == 12
    assert {"check_execution_error", "rollout_duplicate_identity"} <= set(HEALTH_CHECK_IDS)
