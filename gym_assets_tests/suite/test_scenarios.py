"""The suite harness-p0-probes/v1: the seven scenarios, their scope, manifest."""

from __future__ import annotations

import json

import pytest

from gym_assets.cli import main
from gym_assets.conformance.health import validate_expectations
from gym_assets.errors import UserError
from gym_assets.suite.scenarios import (
    SCENARIOS,
    SUITE_ID,
    get_scenario,
    manifest,
    select_scenarios,
    task_input,
)

FIELDS = {
    "name", "description", "evidence", "tool_steps", "tool_exit_code", "usage", "http_errors",
    "terminal_error", "expected_reward", "steps", "health_expectations",
}  # fmt: skip


def test_the_seven_scenarios_in_catalogue_order() -> None:
    assert [s.name for s in SCENARIOS] == [
        "tool_success", "tool_failure", "usage_omitted", "retry_429", "retry_500",
        "model_error", "verifier_failure",
    ]  # fmt: skip
    assert get_scenario("tool_failure").tool_exit_code == 7
    assert get_scenario("usage_omitted").usage is False
    assert get_scenario("retry_429").http_errors == (429, 429)
    assert get_scenario("retry_500").http_errors == (500,)
    assert get_scenario("verifier_failure").expected_reward == 0.0


def test_model_error_scope_and_evidence() -> None:
    error = get_scenario("model_error")
    scope = error.scope()
    assert (scope.tools, scope.verifier, scope.steps) == (False, False, False)
    assert error.evidence == ("TE-1", "TE-2", "TE-4", "TE-7", "TE-8")
    assert [error.status_for(i) for i in range(4)] == [400, 400, 400, 400]
    assert error.health_expectations == {
        "rollout_ended_on_failed_model_call": "unhealthy",
        "rollout_token_count_mismatch": "unobserved",
    }
    for scenario in SCENARIOS:
        if scenario is not error:
            assert (scenario.scope().tools, scenario.scope().verifier) == (True, True)


def test_errors_precede_success_unless_terminal() -> None:
    retry = get_scenario("retry_429")
    assert [retry.status_for(i) for i in range(4)] == [429, 429, 200, 200]


def test_every_health_expectation_names_a_known_check() -> None:
    for scenario in SCENARIOS:
        validate_expectations(scenario.health_expectations)


def test_manifest_lists_every_field_of_every_scenario() -> None:
    document = manifest()
    assert document["version"] == SUITE_ID
    assert [set(s) for s in document["scenarios"]] == [FIELDS] * 7
    json.dumps(document)  # plain JSON


def test_the_task_never_leaks_the_expectations() -> None:
    for scenario in SCENARIOS:
        text = json.dumps(task_input(scenario))
        assert scenario.name not in text and "reward" not in text and "429" not in text


def test_selection_keeps_catalogue_order_and_refuses_unknown_names() -> None:
    chosen = select_scenarios(["verifier_failure", "tool_success"])
    assert [s.name for s in chosen] == ["tool_success", "verifier_failure"]
    assert select_scenarios(None) == SCENARIOS
    with pytest.raises(UserError, match="unknown scenario 'nope'"):
        select_scenarios(["nope"])


def test_list_scenarios_prints_the_manifest(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "run", "--list-scenarios"]) == 0
    assert json.loads(capsys.readouterr().out) == manifest()
